package approvals

import "time"

// ReminderAt is when a question asked at created with deadline is
// reminded of, for the person's share of its deadline (the
// approval_remind_at setting, 0 < share < 1): nil with no share, and nil
// when the moment would not fall strictly inside the question's life
// (a reminder at or past the deadline tells no one anything in time).
func ReminderAt(created, deadline time.Time, share float64) *time.Time {
	if share <= 0 || share >= 1 {
		return nil
	}
	at := created.Add(time.Duration(float64(deadline.Sub(created)) * share)).UTC()
	if !at.After(created) || !at.Before(deadline) {
		return nil
	}
	return &at
}

// NeedsReminder reports whether a's reminder is due at now: a pending,
// asked question with a reminder at or before now and its deadline not
// yet passed (past it, the question ends timed-out instead). Whether it
// was already sent the store decides, by a conditional write.
func NeedsReminder(a Approval, now time.Time) bool {
	return a.Asked && a.State == Pending && a.RemindAt != nil && !now.Before(*a.RemindAt) && !Expired(a, now)
}
