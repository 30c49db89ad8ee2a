package hooks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
)

func TestAReminderIsTheQuestionStillOpenWithItsDeadlineAndLink(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := approvals.Approval{ID: "apr:01JQ0000000000000000000000", SessionID: "ses:01JQ0000000000000000000001", CallID: "call-7",
		From: "read-only", To: "danger-full-access", Preview: "make install", Reason: "installs", Requester: "agent\x07",
		Asked: true, State: approvals.Pending, CreatedAt: at, Deadline: at.Add(10 * time.Minute)}
	if _, ok := OfReminder(a, at); ok {
		t.Fatal("a question with no reminder announced one")
	}
	a.RemindAt = approvals.ReminderAt(a.CreatedAt, a.Deadline, 0.5)
	m, ok := OfReminder(a, *a.RemindAt)
	if !ok || m.Type != ApprovalReminder {
		t.Fatalf("reminder: %+v %v", m, ok)
	}
	ended, _ := approvals.Resolve(a, approvals.VerdictOf("no"), at.Add(time.Minute))
	if _, ok := OfReminder(ended, *a.RemindAt); ok {
		t.Fatal("an ended question announced a reminder")
	}
	body, err := Body(FormatSlack, m, "https://dont.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	var s SlackMessage
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	raw := string(body)
	for _, want := range []string{"Still unanswered", "2026-03-04T05:16:07Z", "Open in dont", "make install"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the Slack reminder lacks %q: %s", want, raw)
		}
	}
	if strings.Contains(raw, "\x07") || !strings.Contains(s.Text, "Nobody has answered yet") {
		t.Fatalf("text %q", s.Text)
	}
}
