package linearize

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
)

// checkFrameStream reads the session's whole frame stream after a history
// (the read sweeps first, which also repairs announcements an announce
// left undone) and checks it as a stream: cursors 1, 2, 3, … with no gap;
// every question asked in the history announced exactly once; every
// question that had ended before the stream was read (approvals show,
// read first) has its ending announced exactly once, after its question,
// with the verdict it ended with; no question's ending is announced
// twice; and no frame names a question of another session or one never
// asked. Returns a description of what is
// wrong, "" when nothing is.
func checkFrameStream(ctx context.Context, b Backend, session string, asked []string) (string, error) {
	// Each question's state first, then the stream: an ending the show
	// saw happened before the stream was read, so the stream must carry
	// it; one that happens in between (on the wall clock, a deadline
	// passing) may or may not be in it yet.
	views := map[string]service.ApprovalView{}
	for _, id := range asked {
		env, err := setupCall(ctx, b, "approvals.show", map[string]any{"id": id})
		if err != nil {
			return "", err
		}
		if !env.OK {
			return "", fmt.Errorf("approvals show %s: %s", id, env.Data)
		}
		var v service.ApprovalView
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return "", err
		}
		views[id] = v
	}
	var frames []approvals.Frame
	after := int64(0)
	for {
		env, err := setupCall(ctx, b, "approvals.frames", map[string]any{"session": session, "after": float64(after), "subscriber": "linearize"})
		if err != nil {
			return "", err
		}
		if !env.OK {
			return "", fmt.Errorf("approvals.frames: %s", env.Data)
		}
		var page service.FramesPage
		if err := json.Unmarshal(env.Data, &page); err != nil {
			return "", err
		}
		if len(page.Frames) == 0 {
			break
		}
		frames = append(frames, page.Frames...)
		after = page.Cursor
	}
	known := map[string]bool{}
	for _, id := range asked {
		known[id] = true
	}
	requested, ended := map[string]int{}, map[string][]approvals.Frame{}
	for i, f := range frames {
		if f.Cursor != int64(i+1) {
			return fmt.Sprintf("frame %d has cursor %d: the stream has a gap or a repeat", i+1, f.Cursor), nil
		}
		if f.SessionID != session {
			return fmt.Sprintf("frame %d names session %s, not %s", f.Cursor, f.SessionID, session), nil
		}
		switch f.Kind {
		case approvals.FrameRequested:
			if requested[f.RequestID] != 0 {
				return fmt.Sprintf("question %s announced twice (frames %d and %d)", f.RequestID, requested[f.RequestID], f.Cursor), nil
			}
			requested[f.RequestID] = int(f.Cursor)
		case approvals.FrameResolved:
			if requested[f.RequestID] == 0 {
				return fmt.Sprintf("the ending of %s (frame %d) comes before its question", f.RequestID, f.Cursor), nil
			}
			ended[f.RequestID] = append(ended[f.RequestID], f)
		default:
			return fmt.Sprintf("frame %d has kind %q", f.Cursor, f.Kind), nil
		}
	}
	for id := range requested {
		if !known[id] && len(asked) > 0 {
			// An ask whose response was lost asked a question no client knows.
			if !lossy(b) {
				return fmt.Sprintf("frame names question %s, which the history never asked", id), nil
			}
		}
	}
	for _, id := range asked {
		v := views[id]
		if v.Asked && requested[id] == 0 {
			return fmt.Sprintf("question %s was asked but never announced", id), nil
		}
		switch {
		case v.State == approvals.Resolved && v.Asked && len(ended[id]) != 1:
			return fmt.Sprintf("question %s had ended %s before the stream was read, and its ending was announced %d times", id, v.Verdict, len(ended[id])), nil
		case v.State == approvals.Resolved && v.Asked && ended[id][0].Verdict != v.Verdict:
			return fmt.Sprintf("question %s ended %s but its ending frame says %s", id, v.Verdict, ended[id][0].Verdict), nil
		case len(ended[id]) > 1:
			return fmt.Sprintf("question %s: its ending was announced %d times", id, len(ended[id])), nil
		}
	}
	return "", nil
}
