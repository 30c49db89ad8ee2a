package httpapi_test

import (
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
)

// A keyed hooks.test cut by a crash after it sent its test message (the
// receiver got it; the key's completion was lost): the retry, while the
// claim is fresh, is told the first is still running; once the claim is
// stale it reports that message and its delivery (delivered, with its
// attempt) instead of idempotency-outcome-unknown, and the receiver gets
// one test message, not two.
func TestAKeyedHookTestCutAfterItSentReportsThatMessageOnRetry(t *testing.T) {
	a, store, sender := newCutAPI(t)
	a.now.Store(time.Now().UnixNano()) // the message is dated by the clock the key is
	admin := a.tokens["admin"]
	hook := tokenCreate{"hooks.add", admin, "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "add-1"}.send(a.api)
	if hook.status != 200 {
		t.Fatalf("hooks.add: %d %s", hook.status, hook.raw)
	}
	test := tokenCreate{"hooks.test", admin, "hooks.test", `{"args":{"id":"` + hook.str("hook_id") + `"},"cli_confirmed":true}`, "cut-1"}
	store.cut.Store(true)
	first := test.send(a.api)
	if first.status != 200 || first.str("message_id") == "" {
		t.Fatalf("hooks.test: %d %s", first.status, first.raw)
	}
	store.cut.Store(false)
	if again := test.send(a.api); again.status != 409 || again.code() != "idempotency-in-progress" {
		t.Fatalf("a retry while the claim is fresh: %d %s", again.status, again.raw)
	}
	store.late.Store(int64(2 * idempotency.StaleClaim))
	again := test.send(a.api)
	store.late.Store(0)
	d, _ := again.data()["delivery"].(map[string]any)
	at, _ := again.data()["attempt"].(map[string]any)
	if again.status != 200 || again.str("message_id") != first.str("message_id") || d["state"] != "delivered" || at["outcome"] != "delivered" {
		t.Fatalf("a retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := sender.sent.Load(); n != 1 {
		t.Fatalf("the receiver got %d test messages, want 1", n)
	}
	// Answered now: the key replays that answer from here on.
	if replay := test.send(a.api); replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || replay.str("message_id") != first.str("message_id") {
		t.Fatalf("the key after the resumed answer: %d %s", replay.status, replay.raw)
	}
}
