package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// ApprovalSweep says what an approvals sweep did.
type ApprovalSweep struct {
	// TimedOut lists questions this sweep ended at their deadline.
	TimedOut []string `json:"timed_out"`
	// Announced lists endings whose missing frame this sweep appended.
	Announced []string `json:"announced"`
	// Reminded lists questions whose reminder this sweep sent.
	Reminded []string `json:"reminded,omitempty"`
	// Warnings name the due questions this sweep could not end and the
	// endings it could not announce, with why: a sweep that could not do
	// its work says so rather than report nothing due.
	Warnings []envelope.Warning `json:"-"`
}

// SweepApprovals ends due questions as timed-out (announced like every
// ending) and appends the ending frames a failed announce left out. It is
// idempotent; questions another resolver ended first are left alone.
func (s *core) SweepApprovals(ctx context.Context, limit int) (ApprovalSweep, error) {
	rep := ApprovalSweep{TimedOut: []string{}, Announced: []string{}}
	st, err := s.approvalStore()
	if err != nil {
		return rep, err
	}
	if limit <= 0 {
		limit = store.SweepBatch
	}
	now := s.now()
	due, err := st.DueApprovals(ctx, now, limit)
	if err != nil {
		return rep, storeErr(err)
	}
	for _, a := range due {
		ended, committed, warns := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
		if committed && ended.Verdict == approvals.TimedOut {
			rep.TimedOut = append(rep.TimedOut, a.ID)
		}
		rep.Warnings = append(rep.Warnings, warns...)
	}
	// Reminders after deadlines: a question at its deadline ends, and is
	// not reminded of.
	reminded, warns, err := s.sweepReminders(ctx, st, now, limit)
	if err != nil {
		return rep, err
	}
	rep.Reminded = reminded
	rep.Warnings = append(rep.Warnings, warns...)
	missing, err := st.Unannounced(ctx, limit)
	if err != nil {
		return rep, storeErr(err)
	}
	for _, a := range missing {
		w := s.announce(ctx, st, a)
		if len(w) == 0 {
			rep.Announced = append(rep.Announced, a.ID)
		}
		rep.Warnings = append(rep.Warnings, w...)
	}
	return rep, nil
}

// sweepApprovalsQuietly is the approvals part of every sweep: it never
// fails the sweep it is part of, but what it could not do comes back as
// warnings (a failed read of the due questions as sweep-failed), so that
// the sweep never says "nothing was due" when it could not look.
func (s *core) sweepApprovalsQuietly(ctx context.Context, limit int) (*ApprovalSweep, []envelope.Warning) {
	if s.Approvals.Store == nil || s.Approvals.Scheduled {
		return nil, nil
	}
	rep, err := s.SweepApprovals(ctx, limit)
	if err != nil {
		s.logWarn("sweep approvals", "err", err)
		rep.Warnings = append(rep.Warnings, envelope.Warning{Code: envelope.WarnSweepFailed,
			Message: "the questions' part of the sweep failed: " + errs.As(err).Message + "; the next sweep, or an answer, ends a due question"})
	}
	if len(rep.TimedOut)+len(rep.Announced)+len(rep.Reminded) == 0 {
		return nil, rep.Warnings
	}
	return &rep, rep.Warnings
}

// ApprovalExpiry is what ExpireApproval found or did.
type ApprovalExpiry struct {
	ApprovalID string            `json:"approval_id"`
	Verdict    approvals.Verdict `json:"verdict,omitempty"`
	// Committed is true when this call ended the question as timed-out,
	// false when another ending (or an earlier delivery) came first.
	Committed bool `json:"-"`
}

// ExpireApproval is the queue-driven timeout of one question: it ends it
// as timed-out if it is still pending and due. Not yet due reports the
// time left, so a delayed-message scheduler can re-enqueue it. Any number
// of calls for one question commit at most one ending.
func (s *core) ExpireApproval(ctx context.Context, id string) (ApprovalExpiry, time.Duration, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalExpiry{}, 0, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return ApprovalExpiry{}, 0, err
	}
	now := s.now()
	if a.State == approvals.Pending && !approvals.Expired(a, now) {
		return ApprovalExpiry{ApprovalID: id}, approvals.Remaining(a, now), nil
	}
	ended, committed, warns := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
	if (!committed || len(warns) > 0) && approvals.NeedsAnnouncement(ended) {
		// Another ending whose announce is missing, or ours failed: try
		// (again) now rather than at the next sweep.
		s.announce(ctx, st, ended)
	}
	return ApprovalExpiry{ApprovalID: id, Verdict: ended.Verdict, Committed: committed && ended.Verdict == approvals.TimedOut}, 0, nil
}
