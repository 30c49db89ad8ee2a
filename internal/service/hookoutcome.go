package service

import (
	"strings"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/harnesshook"
)

// HookOutcome is how a harness's permission request ended when its
// escalation (or the session it needed) failed with err: a refusal, a
// timeout, nobody watching, a store dont cannot reach. Every ending but
// an approval denies. The permission hook (cli/dont) and the MCP
// permission-prompt tool (internal/mcp) read it from here, so that one
// error means one ending on both.
func HookOutcome(err error) harnesshook.Outcome {
	e := errs.As(err)
	o := harnesshook.Outcome{Ending: harnesshook.Failed, ApprovalID: e.EntityID, Detail: e.Message}
	switch e.Code {
	case ApprovalRefused:
		o.Ending, o.Detail = harnesshook.Refused, ""
	case ApprovalTimedOut:
		o.Ending, o.Detail = harnesshook.TimedOut, ""
	case ApprovalCancelled:
		o.Ending = harnesshook.Cancelled
	case NoSubscriber:
		o.Ending, o.Detail = harnesshook.NoSubscriber, ""
	case errs.NotInitialised, errs.StoreError, errs.DBLocked, ApprovalChannelError, ApprovalsUnavailable:
		o.Ending = harnesshook.Unreachable
	}
	return o
}

// HookAnswered completes a refused outcome with the approval's record:
// who answered and why; a person's rule that forbade it is RuleForbid.
func HookAnswered(o harnesshook.Outcome, rec approvals.Approval) harnesshook.Outcome {
	if o.Ending != harnesshook.Refused {
		return o
	}
	o.AnsweredBy, o.Detail = rec.AnsweredBy, rec.Detail
	if strings.HasPrefix(rec.AnsweredBy, RuleAuthor) {
		o.Ending, o.Detail = harnesshook.RuleForbid, ""
	}
	return o
}
