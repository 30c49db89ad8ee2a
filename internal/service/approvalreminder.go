package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/store"
)

// Reminders (docs/approvals.md, "Reminders"): a question nobody has
// answered by the person's share of its deadline (Approvals.RemindAt) is
// told once to the hooks that hear approval.reminder — the second line.
// Whoever comes first sends it: the waiting requester, or any sweep
// (embedded sweep-first, `dont serve`, the sweeper function). The store's
// conditional write (SendReminder) makes it once per question.

// reminderAt is when a question asked now with deadline is reminded of
// (nil: no reminder).
func (s *core) reminderAt(now, deadline time.Time) *time.Time {
	return approvals.ReminderAt(now, deadline, s.Approvals.RemindAt)
}

// remind sends a's reminder if it is due at now. It reports whether this
// call sent it; another sender's win, or a question that ended meanwhile,
// is not an error.
func (s *core) remind(ctx context.Context, st store.ApprovalStore, a approvals.Approval, now time.Time) (bool, error) {
	if !approvals.NeedsReminder(a, now) {
		return false, nil
	}
	err := st.SendReminder(ctx, a, now)
	if store.FailedOn(err, a.ID) {
		return false, nil
	}
	if err != nil {
		return false, storeErr(err)
	}
	return true, nil
}

// sweepReminders sends the reminders due at now, up to limit; what it
// could not send comes back as warnings.
func (s *core) sweepReminders(ctx context.Context, st store.ApprovalStore, now time.Time, limit int) ([]string, []envelope.Warning, error) {
	due, err := st.DueReminders(ctx, now, limit)
	if err != nil {
		return nil, nil, storeErr(err)
	}
	var sent []string
	var warns []envelope.Warning
	for _, a := range due {
		ok, err := s.remind(ctx, st, a, now)
		if err != nil {
			warns = append(warns, envelope.Warning{Code: envelope.WarnSweepFailed,
				Message: "the reminder of " + a.ID + " could not be sent: " + errs.As(err).Message + "; the next sweep tries again"})
			continue
		}
		if ok {
			sent = append(sent, a.ID)
		}
	}
	return sent, warns, nil
}
