package service

import (
	"context"
	"errors"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// ErrAskingClientGone is the cause (context.WithCancelCause) a transport
// ends a requester's context with when the client that asked went away
// while it waited: an MCP client that cancelled its request
// (notifications/cancelled) or disconnected. The question is cancelled
// as on any interrupt, but with cause approvals.CauseClientGone, so the
// person reads why in its ending frame, the record and every display
// instead of a bare withdrawal.
var ErrAskingClientGone = errors.New("the asking client went away")

// interruptDecision is the ending of a question whose waiting requester
// was interrupted: cancelled, by the requester, with the reason the
// transport gave (ErrAskingClientGone) or a plain interrupt.
func interruptDecision(ctx context.Context, a approvals.Approval) approvals.Decision {
	if errors.Is(context.Cause(ctx), ErrAskingClientGone) {
		return approvals.Decision{Verdict: approvals.Cancelled, Cause: approvals.CauseClientGone, By: a.Requester,
			Detail: "the asking client went away (it cancelled its request or disconnected) while waiting for the answer"}
	}
	return approvals.Decision{Verdict: approvals.Cancelled, Cause: approvals.CauseRequester, By: a.Requester,
		Detail: "the requester was interrupted while waiting"}
}

// ApprovalStillOpen ends a bounded wait (WaitWithin) whose bound passed
// before the verdict: an error, so that no caller reads "not answered
// yet" as a grant (the CLI exits 1, as for every ending but an approval).
const ApprovalStillOpen errs.Code = "approval-still-open"

// MaxWaitBound is the longest bounded wait (WaitWithin) a caller may ask
// for; longer than any question's deadline is pointless.
const MaxWaitBound = 10 * time.Minute

// WaitWithin is Wait bounded by within: if the question is still open
// when within has passed, it fails with ApprovalStillOpen, naming the time
// left, for a caller that polls in bounded calls — an MCP host whose
// request timeout a whole wait would outlast (docs/harnesses.md, "MCP
// hosts"). A bound of 0 is Wait. Like Wait it never cancels the question.
func (s *Escalations) WaitWithin(ctx context.Context, id string, within time.Duration) (ApprovalView, []envelope.Warning, error) {
	if within < 0 || within > MaxWaitBound {
		return ApprovalView{}, nil, errs.E(errs.InvalidArgument, "approvals.wait: the bound is at most "+MaxWaitBound.String()).Unmet("0 <= max_wait <= " + MaxWaitBound.String())
	}
	if within == 0 {
		return s.Wait(ctx, id)
	}
	bctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	v, warns, err := s.Wait(bctx, id)
	if err == nil || ctx.Err() != nil || bctx.Err() == nil || !errs.Is(err, errs.Interrupted) {
		return v, warns, err
	}
	// The bound passed: say how the question stands.
	st, serr := s.approvalStore()
	if serr != nil {
		return ApprovalView{}, warns, serr
	}
	a, gerr := s.approvalRecord(ctx, st, id)
	if gerr != nil {
		return ApprovalView{}, warns, gerr
	}
	if a.State == approvals.Resolved {
		v, err := s.verdictResult(ctx, st, a)
		return v, warns, err
	}
	left := approvals.Remaining(a, s.now()).Round(time.Second)
	return ApprovalView{}, warns, errs.E(ApprovalStillOpen, id+" has no verdict yet ("+left.String()+" left until its deadline "+a.Deadline.Format(timeFormat)+"); wait again, and do not run the command until it is approved").
		On(id).Unmet("approved by a person before the deadline")
}
