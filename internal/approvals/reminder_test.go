package approvals

import (
	"testing"
	"time"
)

func TestAReminderFallsAtThePersonsShareOfTheDeadline(t *testing.T) {
	deadline := t0.Add(10 * time.Minute)
	at := ReminderAt(t0, deadline, 0.5)
	if at == nil || !at.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("ReminderAt(0.5) = %v, want halfway", at)
	}
	for _, share := range []float64{0, -1, 1, 1.5} {
		if at := ReminderAt(t0, deadline, share); at != nil {
			t.Errorf("share %v gave a reminder at %v, want none", share, at)
		}
	}
	if at := ReminderAt(t0, t0.Add(time.Nanosecond), 0.5); at != nil {
		t.Fatalf("a reminder that cannot fall inside the question's life: %v", at)
	}
}

func TestOnlyAnOpenQuestionPastItsReminderAndBeforeItsDeadlineNeedsOne(t *testing.T) {
	a := Approval{ID: "apr:1", Asked: true, State: Pending, CreatedAt: t0, Deadline: t0.Add(10 * time.Minute)}
	a.RemindAt = ReminderAt(a.CreatedAt, a.Deadline, 0.5)
	if NeedsReminder(a, t0.Add(5*time.Minute-time.Nanosecond)) || !NeedsReminder(a, t0.Add(5*time.Minute)) {
		t.Fatal("the reminder is due exactly at its moment")
	}
	if NeedsReminder(a, a.Deadline) {
		t.Fatal("a question at its deadline is timed out, not reminded")
	}
	ended, _ := Resolve(a, VerdictOf("refuse"), t0.Add(time.Minute))
	if NeedsReminder(ended, t0.Add(6*time.Minute)) {
		t.Fatal("an answered question needs no reminder")
	}
	unasked := a
	unasked.Asked = false
	if NeedsReminder(unasked, t0.Add(6*time.Minute)) {
		t.Fatal("a request refused before it was asked is no question to remind of")
	}
}
