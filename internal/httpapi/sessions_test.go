package httpapi_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/service"
)

// A lost ses: id can be found again: sessions.list is read-only and open
// to every bearer role, harness included, as sessions.show is.
func TestSessionsListIsOpenToEveryRoleAndCountsOpenQuestions(t *testing.T) {
	a := newAPI(t)
	a.svc.Approvals = service.Approvals{Store: a.store}
	h, approver := a.tokens["harness"], a.tokens["approver"]
	ses := a.ok(h, "sessions.open", map[string]any{"tier": "read-only", "name": "build box"}).str("session_id")
	a.ok(approver, "approvals.frames", map[string]any{"session": ses})
	a.ok(h, "escalate", map[string]any{"session": ses, "call": "c1", "to": "workspace-write", "reason": "writes build/", "no_wait": true})
	for _, role := range []string{"harness", "approver", "admin"} {
		r := a.ok(a.tokens[role], "sessions.list", map[string]any{})
		if r.env["envelope_kind"] != "sessions" || r.data()["count"] != float64(1) {
			t.Fatalf("%s: %s", role, r.raw)
		}
		s := r.data()["sessions"].([]any)[0].(map[string]any)
		if s["session_id"] != ses || s["name"] != "build box" || s["tier"] != "read-only" || s["open_questions"] != float64(1) || s["live_subscriber"] != true {
			t.Fatalf("%s: %v", role, s)
		}
	}
	if r := a.call(h, "sessions.list", map[string]any{"pending": true}); r.status != 400 {
		t.Fatalf("an unknown parameter: %d %s", r.status, r.raw)
	}
	a.ok(h, "approvals.cancel", map[string]any{"id": a.ok(h, "approvals.list", map[string]any{}).data()["approvals"].([]any)[0].(map[string]any)["approval_id"]})
}

func TestACallbackTokenCannotListSessions(t *testing.T) {
	a := newAPI(t)
	a.svc.Approvals = service.Approvals{Store: a.store}
	h := a.tokens["harness"]
	a.ok(h, "sessions.open", map[string]any{"tier": "read-only"})
	id := a.ok(h, "conclude", map[string]any{"statement": "the build is hermetic"}).str("id")
	cb := a.ok(h, "assume", map[string]any{"id": id}).data()["callback"].(map[string]any)["token"].(string)
	if r := a.call(cb, "sessions.list", map[string]any{}); r.status != 403 || r.code() != "forbidden" {
		t.Fatalf("callback token listed sessions: %d %s", r.status, r.raw)
	}
}
