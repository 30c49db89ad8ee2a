package slackapp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/slackapp"
)

func TestEveryEndingSaysHowTheQuestionEnded(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 2, 0, 0, time.UTC)
	base := approvals.Approval{ID: "apr:1", Asked: true, State: approvals.Resolved, Deadline: at, To: "workspace-write"}
	for _, c := range []struct {
		name string
		set  func(*approvals.Approval)
		want string
	}{
		{"approved", func(a *approvals.Approval) {
			a.Verdict, a.Cause, a.AnsweredBy = approvals.Approved, approvals.CauseAnswer, "tok:p"
		}, "Approved by tok:p."},
		{"refused", func(a *approvals.Approval) {
			a.Verdict, a.Cause, a.AnsweredBy, a.Detail = approvals.Refused, approvals.CauseAnswer, "tok:p", "not \x1b[2Know"
		}, "Refused by tok:p: not \\x1b[2Know"},
		{"timed out", func(a *approvals.Approval) { a.Verdict, a.Cause = approvals.TimedOut, approvals.CauseDeadline }, "Timed out: nobody answered before 2026-12-03T09:02:00Z."},
		{"cancelled", func(a *approvals.Approval) {
			a.Verdict, a.Cause, a.AnsweredBy, a.Detail = approvals.Cancelled, approvals.CauseRequester, "tok:agent", "gave up"
		}, "Cancelled by tok:agent: gave up"},
		{"refused before asked", func(a *approvals.Approval) {
			a.Asked, a.Verdict, a.Cause = false, approvals.Refused, approvals.CauseNoSubscriber
		}, "Refused before it was asked (no-subscriber)"},
	} {
		a := base
		c.set(&a)
		if got := slackapp.EndingLine(a); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		_, blocks := slackapp.Ending(a, "https://dont.example")
		b, _ := json.Marshal(blocks)
		if strings.Contains(string(b), slackapp.ActionApprove) || strings.Contains(string(b), slackapp.ActionRefuse) {
			t.Errorf("%s: an ending has answer buttons: %s", c.name, b)
		}
	}
}

func TestAButtonValueCarriesTheQuestionAndItsShownDigest(t *testing.T) {
	a := approvals.Approval{ID: "apr:1", Preview: "make build"}
	id, digest, ok := slackapp.ParseButtonValue(slackapp.ButtonValue(a))
	if !ok || id != "apr:1" || digest != approvals.ShownDigest(a.Shown()) {
		t.Fatalf("%q %q %v", id, digest, ok)
	}
	for _, bad := range []string{"", "apr:1", " sha256:x", "apr:1 "} {
		if _, _, ok := slackapp.ParseButtonValue(bad); ok {
			t.Errorf("%q read as a button value", bad)
		}
	}
}
