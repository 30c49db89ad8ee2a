package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// AnswerInput is an answer to a question. Answer is mapped to a verdict
// before anything acts on it (approvals.VerdictOf): only an explicit yes
// approves, and anything unreadable refuses.
type AnswerInput struct {
	ApprovalID string
	Answer     any
	Reason     string
	By         string
	// ShownDigest is the digest of the question as the person saw it
	// (approvals.ShownDigest). When given, nothing is answered unless the
	// question is still open and its digest is this one.
	ShownDigest string
	// PasskeyAssertion is the browser's assertion (PublicKeyCredential
	// JSON) over the challenge issued for this question (Passkeys.ApproveBegin);
	// an approve needs it at or above the person's level (passkeys.go).
	PasskeyAssertion json.RawMessage
}

// Answer answers a question. The first answer wins; a later one
// (same or contrary) changes nothing and receives the recorded verdict
// with a warning. An answer at or after the deadline ends the question as
// timed-out instead.
func (s *Escalations) Answer(ctx context.Context, in AnswerInput) (Decided, []envelope.Warning, error) {
	d := approvals.VerdictOf(in.Answer)
	if len(in.Reason) > 2048 {
		return Decided{}, nil, errs.E(errs.InvalidArgument, "a reason is at most 2048 bytes").Unmet("a reason is at most 2048 bytes")
	}
	d.By = s.by(ctx, in.By)
	if in.Reason != "" {
		d.Detail = in.Reason
	}
	if err := s.passkeyCheck(ctx, in, d); err != nil {
		return Decided{}, nil, err
	}
	return s.decideShown(ctx, in.ApprovalID, d, in.ShownDigest)
}

// Approve answers yes.
func (s *Escalations) Approve(ctx context.Context, id, by string) (Decided, []envelope.Warning, error) {
	return s.Answer(ctx, AnswerInput{ApprovalID: id, Answer: "approve", By: by})
}

// Refuse answers no.
func (s *Escalations) Refuse(ctx context.Context, id, reason, by string) (Decided, []envelope.Warning, error) {
	return s.Answer(ctx, AnswerInput{ApprovalID: id, Answer: "refuse", Reason: reason, By: by})
}

// Cancel withdraws a question (the requester giving up). Like an
// answer it is conditional on the question still being open.
func (s *Escalations) Cancel(ctx context.Context, id, reason, by string) (Decided, []envelope.Warning, error) {
	if err := s.withdrawable(ctx, id); err != nil {
		return Decided{}, nil, err
	}
	d := approvals.Decision{Verdict: approvals.Cancelled, Cause: approvals.CauseRequester, By: s.by(ctx, by), Detail: reason}
	return s.decide(ctx, id, d)
}

// Decided is what an answer or a cancel did: the approval as it ended
// and, when the call did not simply decide it, a note saying why (the
// answer was unreadable, came after the deadline, or came second).
type Decided struct {
	View ApprovalView
	Note *envelope.Warning
}

// decide returns the warnings settling raised; the note comes apart,
// so that the tool surface can place its sweep's warnings between them.
func (s *core) decide(ctx context.Context, id string, d approvals.Decision) (Decided, []envelope.Warning, error) {
	return s.decideShown(ctx, id, d, "")
}

// decideShown decides id by d. With shown (the digest of the question as
// the person saw it), it answers only the question that was shown: if
// its digest is another one, nothing is answered (question-changed). The
// stored question never changes while pending (its shown fields are
// written once, and the store's answer commit is conditioned on them:
// ApprovalStore.ResolveApproval), so the record checked here is the one
// the commit answers.
func (s *core) decideShown(ctx context.Context, id string, d approvals.Decision, shown string) (Decided, []envelope.Warning, error) {
	st, err := s.approvalStore()
	if err != nil {
		return Decided{}, nil, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return Decided{}, nil, err
	}
	if shown != "" {
		if cur := approvals.ShownDigest(a.Shown()); !approvals.DigestMatches(shown, cur) {
			return Decided{}, nil, errs.E(QuestionChanged, id+" is not the question that was shown (its digest is "+cur+", the answer was for "+quoteID(shown)+"); nothing was answered").
				On(id).Unmet("an answer names the digest of the question as shown")
		}
	}
	ended, committed, warns := s.settle(ctx, st, a, d, s.now())
	var res Decided
	applied := committed && ended.Verdict == d.Verdict
	if n, ok := twoPersonNote(ended, committed, d); ok {
		res.Note, applied = n, committed
		res.View = s.view(ended)
		res.View.Applied = &applied
		return res, warns, nil
	}
	switch {
	case d.Cause == approvals.CauseUnreadable && applied:
		res.Note = &envelope.Warning{Code: envelope.WarningCode(approvals.CauseUnreadable), RequestID: id, Outcome: string(ended.Verdict),
			Message: "the answer " + quoteID(d.Answer) + " could not be read as approve or refuse; it was recorded as a refusal"}
	case committed && !applied:
		res.Note = &envelope.Warning{Code: envelope.WarnApprovalExpired, RequestID: id, Outcome: string(ended.Verdict),
			Message: id + " reached its deadline " + ended.Deadline.Format(timeFormat) + " before this answer; it ended as timed-out and the answer was not applied"}
	case !committed && ended.State == approvals.Resolved:
		res.Note = &envelope.Warning{Code: envelope.WarnApprovalAlreadyResolved, RequestID: id, Outcome: string(ended.Verdict),
			Message: id + " had already ended (" + string(ended.Verdict) + "); the first answer wins and this one changed nothing"}
	case !committed:
		return Decided{}, warns, errs.E(ApprovalChannelError, "the answer could not be recorded (the store failed); "+id+" is still open").On(id).
			Unmet("an answer counts once it is recorded")
	}
	res.View = s.view(ended)
	res.View.Applied = &applied
	return res, warns, nil
}
