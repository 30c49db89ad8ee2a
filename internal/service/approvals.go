package service

// Tier escalation with human approval, as docs/design.md §6 describes
// it. The rules live in internal/approvals; the service orders them so
// that the escalation fails closed: the hop is validated before any
// question exists, a question exists only if someone can answer it, an
// answer is mapped to a verdict before anything acts on it, the first
// answer wins by a conditional write, and every ending of a question is
// announced through one best-effort helper. One file per job:
//
//	approvals.go          the settings, error codes and shared helpers
//	approvalsession.go    opening and showing sessions
//	approvalask.go        asking: Escalate, a rule's answer, refusals before a question
//	approvalverdict.go    the requester's wait and the verdict it receives
//	approvalsettle.go     the first answer wins (settle) and its announcement
//	approvalanswer.go     answering and cancelling
//	approvallist.go       showing and listing questions
//	approvalframes.go     the frame stream and its subscriber lease
//	approvalsweep.go      ending due questions: the sweep and the queued timeout
//	approvalaudit.go      the frame-log audit
//	approvaldeadline.go, approvalreminder.go, approvaltwoperson.go,
//	approvalwait.go       a requester's deadline, reminders, two-person
//	                      approval, bounded waits

import (
	"context"
	"errors"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/store"
)

// Approvals configures tier escalation: its store and its timings.
type Approvals struct {
	Store store.ApprovalStore
	// Timeout is a question's deadline (approvals.DefaultTimeout if zero).
	Timeout time.Duration
	// TimeoutMin and TimeoutMax bound the deadline a requester may ask
	// for (approvals.DeadlineRange: 30 s and Timeout if zero). Person-only
	// settings, like Timeout.
	TimeoutMin, TimeoutMax time.Duration
	// RemindAt is the person's share of a question's deadline (0 < RemindAt
	// < 1; 0: no reminders) after which, if nobody has answered, the hooks
	// that hear approval.reminder are told once (approvalreminder.go).
	RemindAt float64
	// TwoPersonFrom is the person's two-person rule: a question for this
	// tier or a wider one is approved only by two different approvers
	// (approvaltwoperson.go; unset: one approval decides).
	TwoPersonFrom approvals.TwoPersonFrom
	// Lease is how recently a client must have read a session's frames to
	// count as a live subscriber (DefaultSubscriberLease if zero).
	Lease time.Duration
	// Poll is how often blocking waits re-read the store (DefaultPoll if zero).
	Poll time.Duration
	// SessionCeiling is the widest tier an agent may open a session at
	// (approvals.DefaultSessionCeiling if unset); above it only a person
	// may (auth.Principal.IsPerson). It is a person's setting, read where
	// an agent cannot write it: dont serve's start-up flag or environment,
	// the deployment's configuration (docs/security.md).
	SessionCeiling approvals.Tier
	// PasskeyRequiredFrom is the narrowest tier whose approve needs a
	// fresh passkey assertion bound to the question (passkey.go); "" for
	// none. A person's setting, read like SessionCeiling.
	PasskeyRequiredFrom approvals.Tier
	// Rules are the person's approval rules (internal/rules), read by the
	// front end from the person's settings only: a rule that matches a
	// question answers it before a person is asked, recorded and
	// announced like a person's answer, by "rule:<name>".
	Rules rules.Set
	// Scheduled says a scheduled sweep ends due questions and repairs
	// missing ending frames (AWS: the sweeper function, every minute,
	// besides a queue message per deadline), so that every call's
	// sweep-first covers spawns only: two index reads fewer per call.
	Scheduled bool
}

// Defaults of the Approvals settings.
const (
	DefaultSubscriberLease = 10 * time.Second
	DefaultPoll            = 25 * time.Millisecond
	// MaxFramesWait bounds one long-poll of a session's frames.
	MaxFramesWait = 60 * time.Second
)

// Error codes of tier escalation. Every refusal exits 1; a missing
// session or request exits 3 like other state errors.
const (
	SessionNotFound      errs.Code = "session-not-found"
	ApprovalNotFound     errs.Code = "approval-not-found"
	UnknownTier          errs.Code = errs.Code(approvals.RuleUnknownTier)
	HopNotAllowed        errs.Code = errs.Code(approvals.RuleNotInRow)
	HopRatchet           errs.Code = errs.Code(approvals.RuleRatchet)
	CallOfAnotherSession errs.Code = errs.Code(approvals.RuleOtherSession)
	EscalationPending    errs.Code = errs.Code(approvals.RulePending)
	NoSubscriber         errs.Code = errs.Code(approvals.CauseNoSubscriber)
	ApprovalRefused      errs.Code = "approval-refused"
	ApprovalTimedOut     errs.Code = "approval-timed-out"
	ApprovalCancelled    errs.Code = "approval-cancelled"
	ApprovalChannelError errs.Code = "approval-channel-error"
	ApprovalsUnavailable errs.Code = "approvals-unavailable"
	FrameLogInconsistent errs.Code = "frame-log-inconsistent"
	// QuestionChanged refuses an answer whose shown digest is not the
	// question's: it was for another question, or another version of it.
	QuestionChanged errs.Code = "question-changed"
	// SessionAboveCeiling: an agent asked for a session wider than the
	// person's ceiling; only a person opens one.
	SessionAboveCeiling errs.Code = "session-above-ceiling"
)

func (s *core) approvalStore() (store.ApprovalStore, error) {
	if s.Approvals.Store == nil {
		return nil, errs.E(ApprovalsUnavailable, "this store keeps no sessions or approvals")
	}
	return s.Approvals.Store, nil
}

func (s *core) approvalTimeout() time.Duration {
	if s.Approvals.Timeout > 0 {
		return s.Approvals.Timeout
	}
	return approvals.DefaultTimeout
}

func (s *core) subscriberLease() time.Duration {
	if s.Approvals.Lease > 0 {
		return s.Approvals.Lease
	}
	return DefaultSubscriberLease
}

func (s *core) approvalPoll() time.Duration {
	if s.Approvals.Poll > 0 {
		return s.Approvals.Poll
	}
	return DefaultPoll
}

// by names who acts: the explicit name, else the API caller's token, else
// the service's author (the embedded CLI's user).
func (s *core) by(ctx context.Context, who string) string {
	if who != "" {
		return who
	}
	return s.actor(ctx)
}

// ApprovalView is an approval as callers see it.
type ApprovalView struct {
	approvals.Approval
	// GrantedTier is set only on an approval: the tier for this one call.
	GrantedTier approvals.Tier `json:"granted_tier,omitempty"`
	// SessionTier is the session's default, unchanged by any grant.
	SessionTier approvals.Tier `json:"session_tier,omitempty"`
	// RemainingMS is the time left of a pending question.
	RemainingMS *int64 `json:"remaining_ms,omitempty"`
	// Applied tells an answerer or a canceller whether its call decided.
	Applied *bool `json:"applied,omitempty"`
	// ShownDigest is the digest of what every answering medium shows of
	// the question (approvals.ShownDigest); an answer sends it back.
	ShownDigest string `json:"shown_digest"`
}

func (s *core) view(a approvals.Approval) ApprovalView {
	v := ApprovalView{Approval: a, ShownDigest: approvals.ShownDigest(a.Shown())}
	v.GrantedTier, _ = a.Grant()
	if a.State == approvals.Pending && a.Asked {
		ms := approvals.Remaining(a, s.now()).Milliseconds()
		v.RemainingMS = &ms
	}
	return v
}

func (s *core) logWarn(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Warn(msg, args...)
	}
}

func (s *core) approvalRecord(ctx context.Context, st store.ApprovalStore, id string) (approvals.Approval, error) {
	if ids.Kind(id) != ids.Approval {
		return approvals.Approval{}, errs.E(ApprovalNotFound, "not an approval id: "+quoteID(id)).Unmet("approval ids look like apr:<ULID>")
	}
	a, err := st.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return a, errs.E(ApprovalNotFound, "no approval "+id+" in this project").On(id)
	}
	if err != nil {
		return a, storeErr(err)
	}
	return a, nil
}

// CheckApprovals is the error every approvals operation returns when the
// service has no approvals port (nil when it has one). The tool surface
// asks it before the sweep a call runs first, as the operations do.
func (s *core) CheckApprovals() error {
	_, err := s.approvalStore()
	return err
}
