package service

import (
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
)

// Two people for the widest tiers (docs/approvals.md, "Two people"): a
// question the person's two-person rule covers ends on the first refusal
// or the second approval by a different approver (approvals.Resolve).
// "Different" is a different answerer name: the approver token's name
// over HTTP and MCP, the project owner at the embedded CLI.

// Warning codes of a two-person question's approvals that do not end it.
const (
	// WarnSecondApprovalNeeded: the approval was recorded; a second,
	// different approver must approve before the call may run.
	WarnSecondApprovalNeeded envelope.WarningCode = "second-approval-needed"
	// WarnAlreadyApprovedByYou: this approver approved first already; an
	// approver counts once.
	WarnAlreadyApprovedByYou envelope.WarningCode = "already-approved-by-you"
)

// twoPersonNote is the note of an approval that left a two-person question
// open: recorded as the first, or not counted again.
func twoPersonNote(ended approvals.Approval, committed bool, d approvals.Decision) (*envelope.Warning, bool) {
	if !approvals.AwaitsSecondApproval(ended) || d.Verdict != approvals.Approved {
		return nil, false
	}
	if committed {
		return &envelope.Warning{Code: WarnSecondApprovalNeeded, RequestID: ended.ID, Outcome: string(approvals.Pending),
			Message: ended.ID + " needs two approvers (the person's two-person rule): your approval is recorded; a second, different approver must approve before " +
				ended.Deadline.Format(timeFormat)}, true
	}
	return &envelope.Warning{Code: WarnAlreadyApprovedByYou, RequestID: ended.ID, Outcome: string(approvals.Pending),
		Message: ended.FirstApproval.By + " already approved " + ended.ID + "; an approver counts once, and a second, different approver must approve"}, true
}
