package service

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// FramesInput reads a session's frame stream.
type FramesInput struct {
	SessionID string
	// After is the cursor already read (0: from the start).
	After int64
	// Wait long-polls: return as soon as a frame is there, or after Wait.
	Wait time.Duration
	// Subscriber names the reader for its lease (default: the author).
	Subscriber string
	Limit      int
}

// FramesPage is one read of a session's frames.
type FramesPage struct {
	SessionID string            `json:"session_id"`
	Frames    []approvals.Frame `json:"frames"`
	// Cursor is what to pass as After next time.
	Cursor int64 `json:"cursor"`
	Count  int   `json:"count"`
}

// Frames reads a session's frames after a cursor, long-polling up to
// Wait. Every read renews the reader's subscriber lease: a session has a
// live subscriber while some client has read its frames within the lease.
// While it waits it also sweeps, so timed-out endings appear on the stream.
func (s *Escalations) Frames(ctx context.Context, in FramesInput) (FramesPage, error) {
	var res FramesPage
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	if in.After < 0 || in.Wait < 0 || in.Wait > MaxFramesWait {
		return res, errs.E(errs.InvalidArgument, fmt.Sprintf("`after` must be >= 0 and `wait` between 0 and %s", MaxFramesWait)).
			Unmet(fmt.Sprintf("after >= 0 and 0 <= wait <= %s", MaxFramesWait))
	}
	if in.Limit <= 0 || in.Limit > 1000 {
		in.Limit = 1000
	}
	if _, err := s.session(ctx, st, in.SessionID); err != nil {
		return res, err
	}
	sub := in.Subscriber
	if sub == "" {
		sub = s.by(ctx, "")
	}
	if sub == "" {
		sub = "anonymous"
	}
	touched := time.Time{}
	// Only a reader who could answer makes the session "watched": a
	// principal holding the approver role (an approver token, the owner at
	// the embedded CLI). A harness (MCP, a harness token, the embedded CLI
	// under a harness signal) never does, so it cannot stand in for a person.
	canAnswer := s.PrincipalOf(ctx).Holds(auth.RoleApprover)
	touch := func() error {
		if !canAnswer || time.Since(touched) < s.subscriberLease()/4 {
			return nil
		}
		touched = time.Now()
		return st.TouchSubscriber(ctx, in.SessionID, sub, s.now())
	}
	until := time.Now().Add(in.Wait)
	swept := time.Now()
	poll := time.NewTimer(0)
	defer poll.Stop()
	<-poll.C
	for {
		if err := touch(); err != nil {
			return res, storeErr(err)
		}
		frames, err := st.Frames(ctx, in.SessionID, in.After, in.Limit)
		if err != nil {
			return res, storeErr(err)
		}
		left := time.Until(until)
		if len(frames) > 0 || left <= 0 {
			page := FramesPage{SessionID: in.SessionID, Frames: frames, Cursor: in.After, Count: len(frames)}
			if page.Frames == nil {
				page.Frames = []approvals.Frame{}
			}
			if len(frames) > 0 {
				page.Cursor = frames[len(frames)-1].Cursor
			}
			for i, f := range page.Frames {
				if f.Kind == approvals.FrameRequested {
					page.Frames[i].ShownDigest = approvals.ShownDigest(f.Shown())
				}
			}
			return page, nil
		}
		if time.Since(swept) >= 200*time.Millisecond {
			swept = time.Now()
			if _, err := s.SweepApprovals(ctx, store.SweepBatch); err != nil {
				s.logWarn("sweep approvals", "err", err)
			}
		}
		poll.Reset(min(s.approvalPoll(), left))
		select {
		case <-poll.C:
		case <-ctx.Done():
			return res, errs.E(errs.Interrupted, "stopped reading frames").On(in.SessionID).With("after", strconv.FormatInt(in.After, 10))
		}
	}
}
