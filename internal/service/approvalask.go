package service

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/store"
)

// EscalateInput asks for one wider tier for one call of a session.
type EscalateInput struct {
	SessionID string
	CallID    string
	To        string
	Reason    string
	Preview   string // the command, as the approver will see it
	Requester string // who asks (an author name; a token id over HTTP)
	NoWait    bool
	// Deadline is how long the requester asks the question to stay open
	// (0: the person's default); it must lie in the person's range
	// (questionTimeout).
	Deadline time.Duration
	// Asked, if set, is told the question once it exists, before the call
	// waits for its answer: a front end tells the person where it went.
	Asked func(approvals.Approval)
	// ResumeSince, if set, is when an earlier run of this same request
	// (its Idempotency-Key, cut by a crash) claimed the key: if that run
	// asked its question, the call re-attaches to it instead of asking
	// again (resumedQuestion; docs/proof.md, "Idempotency across
	// crashes").
	ResumeSince time.Time
}

// Escalate asks a person for one wider tier for one call. Fail-closed by
// order: the input is checked, the hop table is consulted before any
// question exists (a refusal is recorded, no question is created), then
// the question is created only if a subscriber is live (else refused and
// recorded), and a store failure anywhere while asking is a refusal. It
// then waits for the verdict unless NoWait; an interrupted wait cancels
// the question. Only an approval returns without error, and only it
// carries a tier.
func (s *Escalations) Escalate(ctx context.Context, in EscalateInput) (ApprovalView, []envelope.Warning, error) {
	var res ApprovalView
	st, err := s.approvalStore()
	if err != nil {
		return res, nil, err
	}
	if err := checkEscalateInput(in); err != nil {
		return res, nil, err
	}
	timeout, err := s.questionTimeout(in.Deadline)
	if err != nil {
		return res, nil, err
	}
	in.Requester = s.by(ctx, in.Requester)
	ses, err := s.session(ctx, st, in.SessionID)
	if err != nil {
		if errs.Is(err, errs.StoreError) || errs.Is(err, errs.DBLocked) {
			return res, nil, channelRefusal("", err)
		}
		return res, nil, err
	}
	var a approvals.Approval
	if !in.ResumeSince.IsZero() {
		prior, err := s.resumedQuestion(ctx, st, ses, in)
		if err != nil {
			return res, nil, channelRefusal("", err)
		}
		if prior != nil {
			return s.reattach(ctx, st, ses, in, *prior)
		}
	}
	for attempt := 0; ; attempt++ {
		records, err := st.ListApprovals(ctx, store.ApprovalFilter{CallID: in.CallID})
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, approvals.Call{}, approvals.CauseChannelError, err)
		}
		call := approvals.CallOf(ses.ID, ses.Tier, in.CallID, records)
		// 1. The hop table, before the channel is consulted.
		if r := approvals.ValidateHop(ses.ID, call, approvals.Tier(in.To)); r != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, r.Rule, r)
		}
		// 2. The person's rules answer before a person is asked.
		if v, ok := s.Approvals.Rules.Decide(in.Preview, in.To); ok && v.Decision != rules.Ask {
			return s.answerByRule(ctx, st, ses, in, call, v, timeout)
		}
		// 3. A question needs someone who can answer it.
		last, err := s.lastRead(ctx, st, ses.ID)
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
		}
		if !s.live(last) && !s.hookSubscribed(ctx) {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseNoSubscriber, nil)
		}
		// 4. The question, created together with its delivery.
		now := s.now()
		a = approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
			To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, Asked: true,
			State: approvals.Pending, CreatedAt: now, Deadline: now.Add(timeout)}
		a.RemindAt = s.reminderAt(now, a.Deadline)
		a.TwoPerson = s.Approvals.TwoPersonFrom.Covers(a.To)
		q := approvals.RequestFrame(a)
		err = st.CreateApproval(ctx, a, &q)
		if store.FailedOn(err, in.CallID) && attempt < 3 {
			continue // another question for this call committed first: validate again
		}
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
		}
		break
	}
	if s.ApprovalScheduler != nil {
		if err := s.ApprovalScheduler.ScheduleApprovalTimeout(ctx, a.ID, a.Deadline); err != nil {
			s.logWarn("schedule approval timeout", "approval_id", a.ID, "err", err)
		}
	}
	return s.reattach(ctx, st, ses, in, a)
}

// resumedQuestion is the question the cut run of in asked, or nil if it
// asked none: the newest question of in's call asked (not refused before
// asking) by the same requester with the same target, reason and preview
// within the key's lifetime (idempotency.Window before the retry's claim;
// a retry that takes a stale claim over re-times the claim, so the first
// run's time is not known). A call has at most one open question and is
// widened at most once (approvals.ValidateHop), so the newest such
// question is the run's own or one that ended after it and carries the
// call's latest verdict: re-attaching to it never asks twice, and at worst
// repeats an earlier refusal (docs/proof.md, "Idempotency across
// crashes").
func (s *core) resumedQuestion(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput) (*approvals.Approval, error) {
	records, err := st.ListApprovals(ctx, store.ApprovalFilter{CallID: in.CallID})
	if err != nil {
		return nil, err
	}
	var found *approvals.Approval
	for i := range records {
		r := records[i]
		if !r.Asked || r.SessionID != ses.ID || r.Requester != in.Requester || r.To != approvals.Tier(in.To) ||
			r.Reason != in.Reason || r.Preview != in.Preview || r.CreatedAt.Before(in.ResumeSince.Add(-idempotency.Window)) {
			continue
		}
		if found == nil || r.CreatedAt.After(found.CreatedAt) {
			found = &r
		}
	}
	return found, nil
}

// reattach answers an escalate, new or resumed, once its question
// exists: the question at once under NoWait, else its verdict, waited
// for if it is still open.
func (s *core) reattach(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput, a approvals.Approval) (ApprovalView, []envelope.Warning, error) {
	if in.Asked != nil && a.State == approvals.Pending {
		in.Asked(a)
	}
	if in.NoWait {
		v := s.view(a)
		v.SessionTier = ses.Tier
		return v, nil, nil
	}
	return s.waitVerdict(ctx, st, a.ID, true)
}

// RuleAuthor is how a rule's verdict names who answered: "rule:<name>".
const RuleAuthor = "rule:"

// answerByRule records the question a rule answers, as asked (its
// question frame, so that the inbox, webhooks and audit see it like any
// other), and settles it at once by the rule: approved by an allow rule,
// refused by a forbid rule, announced with its ending frame. The
// requester receives the verdict as from a person.
func (s *core) answerByRule(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput, call approvals.Call, v rules.Verdict, timeout time.Duration) (ApprovalView, []envelope.Warning, error) {
	now := s.now()
	a := approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
		To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, Asked: true,
		State: approvals.Pending, CreatedAt: now, Deadline: now.Add(timeout)}
	q := approvals.RequestFrame(a)
	if err := st.CreateApproval(ctx, a, &q); err != nil {
		return ApprovalView{}, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
	}
	d := approvals.Decision{Verdict: approvals.Approved, Cause: approvals.CauseAnswer, By: RuleAuthor + v.Rule, Answer: string(v.Decision),
		Detail: "the person's rule " + v.Rule + " allows it"}
	if v.Decision == rules.Forbid {
		d.Verdict, d.Detail = approvals.Refused, "the person's rule "+v.Rule+" forbids it"
	}
	ended, _, warns := s.settle(ctx, st, a, d, now)
	if ended.State != approvals.Resolved {
		return ApprovalView{}, warns, verdictError(approvals.Approval{SessionID: ses.ID, Verdict: approvals.Refused, Cause: approvals.CauseChannelError,
			Detail: "the rule's verdict could not be recorded"}).On(a.ID)
	}
	v2, err := s.verdictResult(ctx, st, ended)
	return v2, warns, err
}

func checkEscalateInput(in EscalateInput) error {
	bad := func(msg, clause string) error {
		return errs.E(errs.InvalidArgument, msg).Unmet(clause)
	}
	switch {
	case strings.TrimSpace(in.CallID) == "" || len(in.CallID) > 200 || !utf8.ValidString(in.CallID) || strings.ContainsAny(in.CallID, "\n\r\t"):
		return bad("a `call` id of 1 to 200 printable bytes is required", "call id must not be empty")
	case strings.TrimSpace(in.Reason) == "" || len(in.Reason) > 2048:
		return bad("a `reason` of 1 to 2048 bytes is required: the person answering reads it", "reason must not be empty")
	case len(in.Preview) > 4096:
		return bad("the command preview is at most 4096 bytes", "preview <= 4096 bytes")
	case len(in.To) > 64:
		return bad("`to` names a tier", "to is a tier name")
	}
	return nil
}

// refuseUnasked records a request that was refused before it became a
// question and returns the refusal. Recording is best-effort: the refusal
// stands even if the store cannot record it.
func (s *core) refuseUnasked(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput, call approvals.Call, cause approvals.Cause, why error) error {
	now := s.now()
	a := approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
		To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, State: approvals.Pending,
		CreatedAt: now, Deadline: now}
	d := approvals.Decision{Verdict: approvals.Refused, Cause: cause}
	if why != nil {
		d.Detail = why.Error()
		var r *approvals.Refusal
		if errors.As(why, &r) {
			d.Detail = r.Message
		}
	}
	a, _ = approvals.Resolve(a, d, now)
	recorded := true
	if err := st.CreateApproval(context.WithoutCancel(ctx), a, nil); err != nil {
		recorded = false
		s.logWarn("record refused escalation", "session_id", ses.ID, "call_id", in.CallID, "cause", cause, "err", err)
	}
	e := verdictError(a)
	if recorded {
		e = e.On(a.ID)
	}
	if why != nil && cause == approvals.CauseChannelError {
		e = e.Wrap(why)
	}
	return e
}

// channelRefusal is the refusal when the store failed before even the
// session could be read.
func channelRefusal(id string, err error) *errs.Error {
	e := errs.E(ApprovalChannelError, "the escalation is refused: the store failed while asking ("+errs.As(err).Message+")").
		Unmet("the question must reach the session's subscribers").Wrap(err)
	if id != "" {
		e = e.On(id)
	}
	return e
}
