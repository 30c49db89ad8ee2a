package attacktest

import (
	"net/http"
	"strings"
	"time"
)

// An agent asks for its own question deadline only within the person's
// range (docs/approvals.md, "Deadlines that fit the channel"): a question
// that outlives the person's attention, or one that expires before they
// can read it, is refused before it exists. The targets run with the
// default range (30s to approval_timeout, 120s).
func harnessCannotAskForADeadlineOutsideThePersonsRange(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	ses := r.ok(harness, "sessions.open", map[string]any{"tier": "read-only"}).Str("session_id")
	r.ok(approver, "approvals.frames", map[string]any{"session": ses})
	ask := func(call, deadline string) Reply {
		return r.call(harness, "escalate", map[string]any{"session": ses, "call": call, "to": "danger-full-access",
			"reason": "installs packages", "preview": "make install", "no_wait": true, "deadline": deadline})
	}
	for _, d := range []string{"876000h", "121s", "1s"} {
		rep := ask("call-long", d)
		r.refused(rep, http.StatusBadRequest, "deadline-out-of-range", "a harness asking for a deadline of "+d)
		if !strings.Contains(rep.Raw, "30s to 2m") {
			r.t.Fatalf("deadline %s: the refusal does not name the range: %s", d, rep.Raw)
		}
	}
	if n := len(r.ok(approver, "approvals.list", map[string]any{"session": ses}).Data()["approvals"].([]any)); n != 0 {
		r.t.Fatalf("refused deadlines left %d records", n)
	}
	// Within the range the question carries the deadline asked for.
	rep := r.ok(harness, "escalate", map[string]any{"session": ses, "call": "call-ok", "to": "danger-full-access",
		"reason": "installs packages", "preview": "make install", "no_wait": true, "deadline": "45s"})
	created, err1 := time.Parse(time.RFC3339Nano, rep.Str("created_at"))
	deadline, err2 := time.Parse(time.RFC3339Nano, rep.Str("deadline"))
	if err1 != nil || err2 != nil || deadline.Sub(created) != 45*time.Second {
		r.t.Fatalf("a deadline of 45s: %s", rep.Raw)
	}
}
