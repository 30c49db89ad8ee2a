package approvals

import (
	"fmt"
	"sort"
	"time"
)

// FrameKind says what a frame announces.
type FrameKind string

// Frame kinds on a session's stream.
const (
	FrameRequested FrameKind = "approval_requested" // a question for the session's subscribers
	FrameResolved  FrameKind = "approval_resolved"  // the one ending of a question: approved, refused, timed-out or cancelled
)

// Valid reports whether k is one of the frame kinds.
func (k FrameKind) Valid() bool { return k == FrameRequested || k == FrameResolved }

// Frame is one entry of a session's frame log. Clients read it with a
// cursor: the store numbers a session's frames 1, 2, 3, … in commit order.
type Frame struct {
	SessionID string    `json:"session_id"`
	Cursor    int64     `json:"cursor"`
	Kind      FrameKind `json:"kind"`
	RequestID string    `json:"request_id"`
	At        time.Time `json:"at"`

	// Question frames.
	CallID   string     `json:"call_id,omitempty"`
	From     Tier       `json:"from_tier,omitempty"`
	To       Tier       `json:"to_tier,omitempty"`
	Preview  string     `json:"preview,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// Requester and ShownDigest make a question frame show what every
	// other answering medium shows (ShownDigest).
	Requester   string `json:"requester,omitempty"`
	ShownDigest string `json:"shown_digest,omitempty"`

	// Ending frames.
	Verdict     Verdict `json:"verdict,omitempty"`
	Cause       Cause   `json:"cause,omitempty"`
	GrantedTier Tier    `json:"granted_tier,omitempty"`
	By          string  `json:"by,omitempty"`
}

// RequestFrame is the question frame of an asked approval.
func RequestFrame(a Approval) Frame {
	d := a.Deadline
	return Frame{SessionID: a.SessionID, Kind: FrameRequested, RequestID: a.ID, At: a.CreatedAt,
		CallID: a.CallID, From: a.From, To: a.To, Preview: a.Preview, Reason: a.Reason, Deadline: &d,
		Requester: a.Requester, ShownDigest: ShownDigest(a.Shown())}
}

// EndingFrame is the one constructor of ending frames, for every ending
// alike. ok is false when a needs no announcement: it was never asked (no
// client holds state for it) or it is still pending.
func EndingFrame(a Approval) (f Frame, ok bool) {
	if !a.Asked || a.State != Resolved || a.ResolvedAt == nil {
		return Frame{}, false
	}
	f = Frame{SessionID: a.SessionID, Kind: FrameResolved, RequestID: a.ID, At: *a.ResolvedAt,
		CallID: a.CallID, Verdict: a.Verdict, Cause: a.Cause, By: a.AnsweredBy}
	f.GrantedTier, _ = a.Grant()
	return f, true
}

// NeedsAnnouncement reports whether a ended as a question and its ending
// frame has not been appended yet (an announce failed, or the process
// died between the verdict and the frame). Sweeps repair these.
func NeedsAnnouncement(a Approval) bool {
	_, ok := EndingFrame(a)
	return ok && !a.Announced
}

// Finding is one thing the audit found wrong.
type Finding struct {
	SessionID string `json:"session_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Cursor    int64  `json:"cursor,omitempty"`
	Problem   string `json:"problem"`
}

func (f Finding) String() string {
	s := f.Problem
	if f.RequestID != "" {
		s = f.RequestID + ": " + s
	}
	if f.Cursor != 0 {
		s = fmt.Sprintf("%s (frame %s#%d)", s, f.SessionID, f.Cursor)
	}
	return s
}

// AuditReport says what the audit looked at, so that "nothing found" can
// be told apart from "nothing looked at".
type AuditReport struct {
	Sessions  int       `json:"sessions"`
	Requests  int       `json:"requests"`
	Questions int       `json:"questions"`
	Frames    int       `json:"frames"`
	Findings  []Finding `json:"findings"`
}

// OK reports whether the audit found nothing.
func (r AuditReport) OK() bool { return len(r.Findings) == 0 }

// Audit checks the frame log against the approval records: every frame
// names a known, asked request of its own session; every question has
// exactly one question frame; a pending question has no ending frame and
// a resolved one exactly one, after its question, carrying its verdict;
// a request refused before it was asked has no frames; a session's
// cursors are 1, 2, 3, … with no gap or repeat. frames must be in cursor
// order within each session.
func Audit(records []Approval, frames []Frame) AuditReport {
	rep := AuditReport{Requests: len(records), Frames: len(frames), Findings: []Finding{}}
	byID := map[string]Approval{}
	for _, a := range records {
		byID[a.ID] = a
		if a.Asked {
			rep.Questions++
		}
	}
	type counts struct {
		requested, ended []Frame
	}
	per := map[string]*counts{}
	last := map[string]int64{}
	add := func(f Frame, problem string) {
		rep.Findings = append(rep.Findings, Finding{SessionID: f.SessionID, RequestID: f.RequestID, Cursor: f.Cursor, Problem: problem})
	}
	for _, f := range frames {
		prev, seen := last[f.SessionID]
		if !seen {
			rep.Sessions++
		}
		if f.Cursor != prev+1 {
			add(f, fmt.Sprintf("cursor %d follows %d in session %s; cursors must run 1, 2, 3, …", f.Cursor, prev, f.SessionID))
		}
		last[f.SessionID] = f.Cursor
		a, known := byID[f.RequestID]
		switch {
		case f.RequestID == "":
			add(f, "frame names no request")
			continue
		case !known:
			add(f, "frame names an unknown request")
			continue
		case !a.Asked:
			add(f, "frame for a request that was refused before it was asked")
		case a.SessionID != f.SessionID:
			add(f, "frame is on session "+f.SessionID+" but the request belongs to "+a.SessionID)
		}
		c := per[f.RequestID]
		if c == nil {
			c = &counts{}
			per[f.RequestID] = c
		}
		switch f.Kind {
		case FrameRequested:
			c.requested = append(c.requested, f)
		case FrameResolved:
			c.ended = append(c.ended, f)
			if f.Verdict != a.Verdict {
				add(f, fmt.Sprintf("ending frame says %q but the recorded verdict is %q", f.Verdict, a.Verdict))
			}
		default:
			add(f, "unknown frame kind "+quote(string(f.Kind)))
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := byID[id]
		c := per[id]
		if c == nil {
			c = &counts{}
		}
		miss := func(problem string) {
			rep.Findings = append(rep.Findings, Finding{SessionID: a.SessionID, RequestID: a.ID, Problem: problem})
		}
		if !a.Asked {
			continue // its frames, if any, were reported above
		}
		if len(c.requested) != 1 {
			miss(fmt.Sprintf("%d question frames, want exactly 1", len(c.requested)))
		}
		switch {
		case a.State == Pending && len(c.ended) > 0:
			miss(fmt.Sprintf("%d ending frames for a request that is still pending", len(c.ended)))
		case a.State == Resolved && len(c.ended) != 1:
			miss(fmt.Sprintf("%d ending frames for a %s request, want exactly 1", len(c.ended), a.Verdict))
		}
		if len(c.ended) == 1 && len(c.requested) == 1 && c.ended[0].Cursor < c.requested[0].Cursor {
			miss("the ending frame comes before the question frame")
		}
		if a.State == Resolved && len(c.ended) == 1 && !a.Announced {
			miss("an ending frame exists but the request is not marked announced")
		}
	}
	return rep
}
