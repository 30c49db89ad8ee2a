package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// settle commits decision d on a (first answer wins) and announces the
// ending. It returns the approval as it ended — by d, or by whichever
// resolver committed first — and whether d's commit was the one.
func (s *core) settle(ctx context.Context, st store.ApprovalStore, a approvals.Approval, d approvals.Decision, now time.Time) (approvals.Approval, bool, []envelope.Warning) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		r, ok := approvals.Resolve(a, d, now)
		if !ok {
			return a, false, nil
		}
		if r.State == approvals.Pending { // a two-person question's first approval: no ending yet
			err := st.RecordFirstApproval(ctx, r)
			if err == nil {
				return r, true, nil
			}
			if !isCondition(err) {
				s.logWarn("record first approval", "approval_id", a.ID, "err", err)
				return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID,
					Message: "could not record the approval: " + errs.As(storeErr(err)).Message}}
			}
			cur, err := st.GetApproval(ctx, a.ID)
			if err != nil {
				return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID, Message: "could not re-read " + a.ID}}
			}
			a = cur
			continue
		}
		err := st.ResolveApproval(ctx, r)
		if err == nil {
			return r, true, s.announce(ctx, st, r)
		}
		if !isCondition(err) {
			s.logWarn("resolve approval", "approval_id", a.ID, "err", err)
			return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID,
				Message: "could not record the verdict " + string(r.Verdict) + ": " + errs.As(storeErr(err)).Message}}
		}
		cur, err := st.GetApproval(ctx, a.ID)
		if err != nil {
			return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID, Message: "could not re-read " + a.ID}}
		}
		a = cur
	}
	return a, false, nil
}

// announce is the one helper that announces an ending: it appends the
// ending frame of a resolved question to its session's log. It is
// best-effort and never raises: the verdict already happened, so a failed
// announce is logged and becomes a warning, and the next sweep appends
// the missing frame. The store appends at most one ending frame per
// request, so a racing repair cannot announce twice.
func (s *core) announce(ctx context.Context, st store.ApprovalStore, a approvals.Approval) []envelope.Warning {
	f, ok := approvals.EndingFrame(a)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := st.AnnounceEnding(cctx, f)
	if err == nil || isCondition(err) {
		return nil
	}
	s.logWarn("announce ending", "approval_id", a.ID, "verdict", string(a.Verdict), "err", err)
	return []envelope.Warning{{Code: envelope.WarnAnnounceFailed, RequestID: a.ID, Outcome: string(a.Verdict),
		Message: "the verdict " + string(a.Verdict) + " stands, but its ending frame could not be appended yet (" + errs.As(storeErr(err)).Message + "); the next sweep announces it"}}
}
