package httpapi_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/spawn"
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

// A keyed guess cut by a crash after it issued its spawn (harness mode:
// the spawn request made, the key's completion lost): the retry, once
// the claim is stale, answers that same spawn request instead of
// idempotency-outcome-unknown, and one guess spawn is pending.
func TestAKeyedGuessCutAfterItIssuedAnswersThatSpawnOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano()) // the spawn is dated by the clock the key is
	h := a.tokens["harness"]
	first, again := cutThenStale(a.api, store, tokenCreate{"guess", h, "guess", `{"args":{"question":"boiling point at 2000 m?","n":2}}`, "guess-1"})
	id := first.str("request_id")
	if first.status/100 != 2 || id == "" {
		t.Fatalf("guess: %d %s", first.status, first.raw)
	}
	cb, _ := again.data()["callback"].(map[string]any)
	if again.status/100 != 2 || again.str("request_id") != id || cb["token"] == nil || cb["token"] == "" {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := a.ok(h, "spawns", map[string]any{"pending": true}).data()["count"]; n != 1.0 {
		t.Fatalf("%v spawns pending, want 1", n)
	}
	// The retry's callback token answers the spawn.
	if r := a.ok(cb["token"].(string), "answer", map[string]any{"request_id": id, "candidate": []string{"93 C", "93 C"}}); r.data()["claim"] == nil {
		t.Fatalf("the resumed spawn's answer: %s", r.raw)
	}
}

// countingReasoner answers every guess with the same candidates, and
// counts the calls.
type countingReasoner struct{ asked atomic.Int64 }

func (*countingReasoner) Name() string { return "counting" }
func (*countingReasoner) Judge(context.Context, string) (spawn.Verdict, error) {
	return spawn.Verdict{}, spawn.ErrUnusableVerdict
}
func (c *countingReasoner) Candidates(_ context.Context, _ string, n int, _ float64) ([]string, error) {
	c.asked.Add(1)
	out := make([]string, n)
	for i := range out {
		out[i] = "93 C"
	}
	return out, nil
}

// A keyed direct-mode guess cut by a crash after its provider answered
// and the answer was committed (the key's completion lost): the retry,
// once the claim is stale, reports that spawn's resolution instead of
// idempotency-outcome-unknown, without asking the provider again or
// concluding a second claim.
func TestAKeyedDirectGuessCutAfterItsAnswerReportsItOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano())
	provider := &countingReasoner{}
	a.svc.Provider = provider
	h := a.tokens["harness"]
	first, again := cutThenStale(a.api, store, tokenCreate{"guess", h, "guess", `{"args":{"question":"boiling point at 2000 m?","n":2,"mode":"direct"}}`, "guess-2"})
	id := first.str("request_id")
	if first.status/100 != 2 || id == "" {
		t.Fatalf("guess: %d %s", first.status, first.raw)
	}
	res, _ := again.data()["resolution"].(map[string]any)
	if again.status/100 != 2 || again.str("request_id") != id || res["outcome"] != "callback-applied" {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := provider.asked.Load(); n != 1 {
		t.Fatalf("the provider was asked %d times, want 1", n)
	}
	if n := a.ok(h, "list", nil).data()["count"]; n != 1.0 {
		t.Fatalf("%v claims, want the one answer", n)
	}
}

// dyingReasoner is a provider whose process dies while it is asked the
// first time, and that answers afterwards.
type dyingReasoner struct{ countingReasoner }

func (d *dyingReasoner) Candidates(ctx context.Context, prompt string, n int, temp float64) ([]string, error) {
	if d.asked.Load() == 0 {
		d.asked.Add(1)
		panic("the process died")
	}
	return d.countingReasoner.Candidates(ctx, prompt, n, temp)
}

// A keyed direct-mode guess cut by a crash while its provider was asked
// (the spawn issued, no answer): the retry, once the claim is stale,
// answers that same spawn — its one answer, one claim — instead of
// idempotency-outcome-unknown or issuing a second spawn.
func TestAKeyedDirectGuessCutWhileItsProviderWasAskedAnswersThatSpawnOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano())
	provider := &dyingReasoner{}
	a.svc.Provider = provider
	h := a.tokens["harness"]
	body := `{"args":{"question":"boiling point at 2000 m?","n":2,"mode":"direct"}}`
	a.callDyingWith(h, "guess", []byte(body), "guess-3")
	spawns := a.ok(h, "spawns", map[string]any{"all": true}).data()
	if spawns["count"] != 1.0 {
		t.Fatalf("the cut run left %v spawns, want 1", spawns["count"])
	}
	store.late.Store(int64(2 * idempotency.StaleClaim))
	again := tokenCreate{"guess", h, "guess", body, "guess-3"}.send(a.api)
	store.late.Store(0)
	res, _ := again.data()["resolution"].(map[string]any)
	if again.status/100 != 2 || res["outcome"] != "callback-applied" || again.data()["claim"] == nil {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := a.ok(h, "spawns", map[string]any{"all": true}).data()["count"]; n != 1.0 {
		t.Fatalf("%v spawns after the retry, want the cut run's one", n)
	}
	if n := a.ok(h, "list", nil).data()["count"]; n != 1.0 {
		t.Fatalf("%v claims, want the one answer", n)
	}
}
