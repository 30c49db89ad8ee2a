package httpapi_test

import (
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/service"
)

// Only a reader who could answer makes a session watched, and the answer
// records the approver's token.
func TestOnlyApproverReadersMakeASessionWatchedAndAnswersNameTheirToken(t *testing.T) {
	a := newAPI(t)
	a.svc.Approvals = service.Approvals{Store: a.store}
	h, approver := a.tokens["harness"], a.tokens["approver"]
	ses := a.ok(h, "sessions.open", map[string]any{"tier": "read-only"}).str("session_id")
	escalate := map[string]any{"session": ses, "call": "c1", "to": "workspace-write", "reason": "writes build/", "no_wait": true}

	a.ok(h, "approvals.frames", map[string]any{"session": ses})
	if r := a.call(h, "escalate", escalate); r.env["ok"] != false || !strings.Contains(r.code(), "subscriber") {
		t.Fatalf("a harness reading frames made the session watched: %s", r.raw)
	}

	a.ok(approver, "approvals.frames", map[string]any{"session": ses})
	escalate["call"] = "c2"
	apr := a.ok(h, "escalate", escalate).str("approval_id")
	answer := a.confirmed(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": a.ok(approver, "approvals.show", map[string]any{"id": apr}).str("shown_digest")}) // interactive-only: a person confirmed it
	if answer.status != 200 || answer.env["ok"] != true {
		t.Fatalf("approve: %d %s", answer.status, answer.raw)
	}
	done := answer.data()
	id, _, _ := auth.ParseBearer(approver)
	if done["answered_by"] != id || done["verdict"] != "approved" {
		t.Fatalf("answered_by %v verdict %v, want the approver's token %s", done["answered_by"], done["verdict"], id)
	}
}
