package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// verdictError is the error a requester receives for every ending but an
// approval. Its remediation names the request's session, which is not the
// error's entity, so the session goes along as an argument.
func verdictError(a approvals.Approval) *errs.Error {
	return verdictErrorOf(a).With("session", a.SessionID)
}

func verdictErrorOf(a approvals.Approval) *errs.Error {
	detail := ""
	if a.Detail != "" {
		detail = ": " + a.Detail
	}
	switch a.Verdict {
	case approvals.TimedOut:
		return errs.E(ApprovalTimedOut, "nobody answered before the deadline "+a.Deadline.Format(timeFormat)+"; the escalation is refused and the command must not run").
			Unmet("approved by a person before the deadline")
	case approvals.Cancelled:
		return errs.E(ApprovalCancelled, "the request was cancelled"+by(a)+"; the command must not run").Unmet("approved by a person before the deadline")
	case approvals.Refused:
		switch a.Cause {
		case approvals.RuleUnknownTier, approvals.RuleNotInRow, approvals.RuleRatchet, approvals.RuleOtherSession, approvals.RulePending:
			return errs.E(errs.Code(a.Cause), "refused before any question was asked"+detail).Unmet("the target is in the row of the call's current tier, once per call, within its own session")
		case approvals.CauseNoSubscriber:
			return errs.E(NoSubscriber, "refused: no client has read session "+a.SessionID+"'s frames recently, so nobody could answer; no question was asked").
				Unmet("a live subscriber on the session")
		case approvals.CauseChannelError:
			return errs.E(ApprovalChannelError, "refused: the store failed while asking"+detail).Unmet("the question must reach the session's subscribers")
		case approvals.CauseUnreadable:
			return errs.E(ApprovalRefused, "refused: the answer"+by(a)+" could not be read ("+quoteID(a.Answer)+"), and an unreadable answer is a refusal; the command must not run").
				Unmet("an explicit approval")
		}
		return errs.E(ApprovalRefused, "refused"+by(a)+detail+"; the command must not run, at this tier or any other").Unmet("an explicit approval")
	}
	return errs.E(errs.Internal, "approval "+a.ID+" has no verdict "+string(a.Verdict))
}

func by(a approvals.Approval) string {
	if a.AnsweredBy == "" {
		return ""
	}
	return " by " + a.AnsweredBy
}

// verdictResult is what a requester gets for an ended approval: the grant
// on approval (GrantedTier set), the verdict's error otherwise.
func (s *core) verdictResult(ctx context.Context, st store.ApprovalStore, a approvals.Approval) (ApprovalView, error) {
	if _, ok := a.Grant(); !ok {
		return ApprovalView{}, verdictError(a).On(a.ID)
	}
	v := s.view(a)
	if ses, err := st.GetSession(ctx, a.SessionID); err == nil {
		v.SessionTier = ses.Tier
	}
	return v, nil
}

// Wait blocks until the approval has a verdict: the requester's
// resumed wait. It returns the grant on approval and the verdict's error
// otherwise. At the deadline it ends the question itself (timed-out). If
// ctx ends first it stops waiting and the question stays open.
func (s *Escalations) Wait(ctx context.Context, id string) (ApprovalView, []envelope.Warning, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalView{}, nil, err
	}
	if _, err := s.approvalRecord(ctx, st, id); err != nil {
		return ApprovalView{}, nil, err
	}
	return s.waitVerdict(ctx, st, id, false)
}

// waitVerdict polls the store (across processes: the SQLite file) until
// the approval ends. A store failure while waiting is a refusal: the
// requester stops and ends the question as refused if it still can.
func (s *core) waitVerdict(ctx context.Context, st store.ApprovalStore, id string, cancelOnInterrupt bool) (ApprovalView, []envelope.Warning, error) {
	var warns []envelope.Warning
	withWarnings := func(v ApprovalView, err error) (ApprovalView, []envelope.Warning, error) {
		return v, warns, err
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	<-poll.C
	reminded := false
	for {
		a, err := st.GetApproval(ctx, id)
		if err != nil && ctx.Err() == nil {
			// The channel failed: fail closed. Try to end the question as
			// refused so that nobody approves a request nobody waits for.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if cur, gerr := st.GetApproval(cctx, id); gerr == nil {
				ended, _, w := s.settle(cctx, st, cur, approvals.Decision{Verdict: approvals.Refused, Cause: approvals.CauseChannelError,
					Detail: "the requester could not read the verdict: " + errs.As(err).Message}, s.now())
				warns = append(warns, w...)
				if ended.State == approvals.Resolved && ended.Verdict != approvals.Approved {
					return withWarnings(ApprovalView{}, verdictError(ended).On(id))
				}
			}
			return withWarnings(ApprovalView{}, channelRefusal(id, storeErr(err)))
		}
		if err == nil && a.State == approvals.Resolved {
			return withWarnings(s.verdictResult(ctx, st, a))
		}
		now := s.now()
		if err == nil && !reminded && approvals.NeedsReminder(a, now) {
			// The requester is a sweeper of its own question too; a failure
			// here is left to the next sweep.
			_, rerr := s.remind(ctx, st, a, now)
			reminded = rerr == nil
		}
		if err == nil && approvals.Expired(a, now) {
			ended, _, w := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
			warns = append(warns, w...)
			if ended.State == approvals.Resolved {
				return withWarnings(s.verdictResult(ctx, st, ended))
			}
			continue
		}
		wait := s.approvalPoll()
		if err == nil {
			wait = min(wait, approvals.Remaining(a, now)+time.Millisecond)
			if !reminded && a.RemindAt != nil && now.Before(*a.RemindAt) {
				wait = min(wait, a.RemindAt.Sub(now))
			}
		}
		poll.Reset(wait)
		select {
		case <-poll.C:
			continue
		case <-ctx.Done():
		}
		if !cancelOnInterrupt {
			return withWarnings(ApprovalView{}, errs.E(errs.Interrupted, "stopped waiting; "+id+" is still open until its deadline").On(id))
		}
		// The requester gave up: cancel the question (announced like every ending).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cur, gerr := st.GetApproval(cctx, id)
		if gerr != nil {
			return withWarnings(ApprovalView{}, channelRefusal(id, storeErr(gerr)))
		}
		ended, _, w := s.settle(cctx, st, cur, interruptDecision(ctx, cur), s.now())
		warns = append(warns, w...)
		if ended.Verdict == approvals.Approved {
			return withWarnings(ApprovalView{}, errs.E(errs.Interrupted, "interrupted; "+id+" had just been approved, but the grant is not used").On(id).
				Unmet("an interrupted wait does not use its grant").With("session", ended.SessionID))
		}
		return withWarnings(ApprovalView{}, verdictError(ended).On(id))
	}
}
