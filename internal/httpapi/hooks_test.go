package httpapi_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// A hook's signing secret is shown once: a replay of hooks.add under its
// Idempotency-Key answers the first response with the secret redacted,
// and neither the stored record nor a read shows it.
func TestAReplayedHooksAddDoesNotShowTheSecretAgain(t *testing.T) {
	a := newAPI(t)
	a.svc.HooksConfig = service.HooksConfig{Store: a.store}
	c := tokenCreate{"hooks.add", a.tokens["admin"], "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "ha-1"}
	first := c.send(a)
	secret := first.str("secret")
	if first.status != 200 || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("hooks.add: %d %s", first.status, first.raw)
	}
	again := c.send(a)
	if again.header.Get("Idempotent-Replayed") != "true" || bytes.Contains(again.raw, []byte(secret)) ||
		again.str("secret") != idempotency.Redacted || again.str("hook_id") != first.str("hook_id") || !hasWarning(again, string(idempotency.SecretNotReplayed)) {
		t.Fatalf("the replay:\n%s\n%s", first.raw, again.raw)
	}
	if n := a.idempotencyRecords("instr(CAST(body AS TEXT), '" + secret + "') > 0"); n != 0 {
		t.Fatalf("%d idempotency records hold the secret", n)
	}
	if list := a.ok(a.tokens["admin"], "hooks.list", nil); bytes.Contains(list.raw, []byte(secret)) || list.data()["count"] != 1.0 {
		t.Fatalf("hooks.list: %s", list.raw)
	}
}
