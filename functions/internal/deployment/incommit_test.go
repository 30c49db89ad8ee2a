package deployment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
)

// dyingBackend is the API function of a process that dies after the
// call's commit: its key store's own writes panic.
type dyingBackend struct{ httpapi.Backend }

func (b dyingBackend) Authenticate(ctx context.Context, presented string) (auth.Principal, httpapi.Project, error) {
	p, proj, err := b.Backend.Authenticate(ctx, presented)
	proj.Idempotency = dyingStore{proj.Idempotency}
	return p, proj, err
}

type dyingStore struct{ idempotency.Store }

func (dyingStore) Complete(context.Context, string, int, []byte) error { panic("the function died") }
func (dyingStore) Release(context.Context, string) error               { panic("the function died") }
func (dyingStore) Remember(context.Context, string, string, int, []byte, time.Time) error {
	panic("the function died")
}

// dyingWriter is a response the function dies before writing.
type dyingWriter struct{ *httptest.ResponseRecorder }

func (dyingWriter) WriteHeader(int)           { panic("the function died") }
func (dyingWriter) Write([]byte) (int, error) { panic("the function died") }

func (a *api) callDying(token, tool string, args map[string]any, key string) {
	a.t.Helper()
	h := httpapi.New(httpapi.Options{Backend: dyingBackend{a.backend}, RatePerSecond: -1})
	body, _ := json.Marshal(map[string]any{"args": args})
	req := httptest.NewRequest(http.MethodPost, "/v1/tools/"+tool, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	func() {
		defer func() {
			if recover() == nil {
				a.t.Fatalf("%s: the dying function answered", tool)
			}
		}()
		h.ServeHTTP(dyingWriter{httptest.NewRecorder()}, req)
	}()
}

// On DynamoDB an assume's response is remembered after the commit (its
// cost: docs/aws-cost.md), so a function that dies between the two has
// remembered nothing. The retry of the assume with its key finds the
// spawn its first run issued, which carries that key, and answers the
// same spawn request with a working callback token (before, 409
// spawn-pending, and the lost token left the spawn unanswerable until it
// timed out); the same assume without that key is still refused. The
// callback's response is kept on the resolution it commits, so its retry
// is the applied callback replayed, not applied twice.
func TestAKeyedCallWhoseFunctionDiesIsNotAppliedTwiceOverTheLambdaAPI(t *testing.T) {
	a := newAPI(t)
	p := "idem-dies-" + randomName()
	h := a.token(p, auth.RoleHarness)
	id, rid := a.deadAssume(h, "a-dies")
	retried := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-dies")
	cb, _ := retried.env.Data["callback"].(map[string]any)
	if retried.status != 200 || retried.str("request_id") != rid || cb["token"] == nil {
		t.Fatalf("the retried assume: %d %v, want spawn %s again with its callback token", retried.status, retried.env.Data, rid)
	}
	token, _ := cb["token"].(string)
	prompt := func(d map[string]any) any { c, _ := d["context"].(map[string]any); return c["prompt"] }
	if shown := a.call(h, "show", map[string]any{"id": rid}); prompt(retried.env.Data) == nil || prompt(retried.env.Data) != prompt(shown.env.Data) {
		t.Fatalf("the retried assume's prompt is not the spawn's: %v, stored %v", prompt(retried.env.Data), prompt(shown.env.Data))
	}
	if again := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-dies"); again.str("request_id") != rid {
		t.Fatalf("the second retry: %v", again.env.Data)
	}
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}
	a.callDying(token, "dismiss", args, "d-dies")
	again := a.call(token, "dismiss", args, "Idempotency-Key", "d-dies")
	res, _ := again.env.Data["resolution"].(map[string]any)
	if again.status != 200 || !again.replayed || res["applied"] != true {
		t.Fatalf("the retried callback is not the applied one replayed: %d %v %v", again.status, again.replayed, again.env.Data)
	}
	if s := a.call(h, "show", map[string]any{"id": id}); s.str("status") != "verified" {
		t.Fatalf("the entity after one applied callback: %v", s.env.Data)
	}
}

// deadAssume concludes a claim and assumes it under key through a
// function that dies after the commit: the claim and the spawn it issued.
func (a *api) deadAssume(token, key string) (id, rid string) {
	a.t.Helper()
	id = a.call(token, "conclude", map[string]any{"statement": "a callback whose function dies"}).str("id")
	a.callDying(token, "assume", map[string]any{"id": id}, key)
	pending := a.call(token, "spawns", map[string]any{"pending": true})
	list, _ := pending.env.Data["spawns"].([]any)
	if len(list) != 1 {
		a.t.Fatalf("pending spawns after the dying assume: %v, want the one it issued", pending.env.Data)
	}
	rid, _ = list[0].(map[string]any)["request_id"].(string)
	return id, rid
}

// The retry that answers a dead assume's spawn again hands out its
// callback token, so only that call's own retry gets it: another agent of
// the project sending the same Idempotency-Key (its own key's record, of
// its own token), or the same agent under another key, is refused
// spawn-pending and learns no token.
func TestAnotherCallerRetryingADeadAssumesKeyGetsNoCallbackToken(t *testing.T) {
	a := newAPI(t)
	p := "idem-steal-" + randomName()
	h := a.token(p, auth.RoleHarness)
	other := a.token(p, auth.RoleHarness)
	id, _ := a.deadAssume(h, "a-dies")
	for _, refused := range []struct {
		name, token, key string
	}{{"another caller with the same key", other, "a-dies"}, {"the same caller under another key", h, "a-other"}} {
		r := a.call(refused.token, "assume", map[string]any{"id": id}, "Idempotency-Key", refused.key)
		if r.status != http.StatusConflict || r.str("code") != "spawn-pending" || strings.Contains(fmt.Sprint(r.env), "dontcb_") {
			t.Fatalf("%s: %d %v, want 409 spawn-pending without a callback token", refused.name, r.status, r.env)
		}
	}
}

// A callback token's keyed call keeps its response on the resolution it
// commits (no record item of its own, docs/aws-cost.md): its retry is
// replayed byte for byte while the resolution is on the entity's item,
// and still once the entity's next spawn moved it into history; the same
// key with another body is refused as a reuse, and nothing is applied
// twice. A keyed heartbeat, which resolves nothing, is remembered as
// before while its spawn is pending.
func TestACallbacksKeyedRetryIsReplayedFromItsResolutionAfterTheNextSpawn(t *testing.T) {
	a := newAPI(t)
	h := a.token("ride-"+randomName(), auth.RoleHarness)
	id, rid, token := a.claimUnderReview(h, "boiling <point> & pressure at sea level")
	beat := a.call(token, "spawns.heartbeat", map[string]any{"request_id": rid}, "Idempotency-Key", "beat-1")
	if beat.status != 200 || beat.replayed {
		t.Fatalf("the heartbeat: %d %s", beat.status, beat.raw)
	}
	if again := a.call(token, "spawns.heartbeat", map[string]any{"request_id": rid}, "Idempotency-Key", "beat-1"); !again.replayed || !bytes.Equal(again.raw, beat.raw) {
		t.Fatalf("the heartbeat's retry is not its first answer replayed:\n%s\n%s", beat.raw, again.raw)
	}
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e?a=1&b=<2>"}, "request_id": rid}
	first := a.call(token, "dismiss", args, "Idempotency-Key", "ride-1")
	if first.status != 200 || first.replayed {
		t.Fatalf("the callback: %d %s", first.status, first.raw)
	}
	again := a.call(token, "dismiss", args, "Idempotency-Key", "ride-1")
	if !again.replayed || !bytes.Equal(again.raw, first.raw) {
		t.Fatalf("the retry is not the first answer replayed:\n%s\n%s", first.raw, again.raw)
	}
	// The entity's next spawn moves the first one's resolution into history.
	if next := a.call(h, "assume", map[string]any{"id": id}); next.status != 200 || next.str("request_id") == rid {
		t.Fatalf("the next assume: %d %s", next.status, next.raw)
	}
	later := a.call(token, "dismiss", args, "Idempotency-Key", "ride-1")
	if !later.replayed || !bytes.Equal(later.raw, first.raw) {
		t.Fatalf("the retry after the next spawn is not the first answer replayed:\n%s\n%s", first.raw, later.raw)
	}
	other := map[string]any{"id": id, "evidence": []string{"https://example.org/other"}, "request_id": rid}
	if reused := a.call(token, "dismiss", other, "Idempotency-Key", "ride-1"); reused.status != 422 || reused.str("code") != "idempotency-key-reused" {
		t.Fatalf("the key with another body: %d %s", reused.status, reused.raw)
	}
	hist := a.call(h, "show", map[string]any{"id": id, "history": true})
	if n := strings.Count(string(hist.raw), `"spawn_resolved"`); n != 1 {
		t.Fatalf("%d spawn_resolved events in the history, want 1: %s", n, hist.raw)
	}
}

// Over the Lambda API, where a callback's record rides on the resolution
// it commits: an agent holding the harness token that resolves the spawn
// first under its subagent's key plants nothing the subagent's call is
// answered with, and cannot read the subagent's answer with that key,
// whether the subagent or the harness answered first.
func TestAHarnessCannotReadOrPlantItsSubagentsCallbackAnswerOverTheLambdaAPI(t *testing.T) {
	a := newAPI(t)
	h := a.token("plant-"+randomName(), auth.RoleHarness)
	id, rid, token := a.claimUnderReview(h, "a subagent's key over the Lambda API")
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}
	planted := a.call(h, "dismiss", args, "Idempotency-Key", "cb-shared")
	if planted.status != 200 || planted.replayed {
		t.Fatalf("the harness's callback: %d %s", planted.status, planted.raw)
	}
	first := a.call(token, "dismiss", args, "Idempotency-Key", "cb-shared")
	if first.replayed || bytes.Equal(first.raw, planted.raw) {
		t.Fatalf("the subagent was answered the harness's response: %s", first.raw)
	}
	again := a.call(token, "dismiss", args, "Idempotency-Key", "cb-shared")
	if !again.replayed || !bytes.Equal(again.raw, first.raw) {
		t.Fatalf("the subagent's retry is not its own first answer:\n%s\n%s", first.raw, again.raw)
	}
	read := a.call(h, "dismiss", args, "Idempotency-Key", "cb-shared")
	if !read.replayed || !bytes.Equal(read.raw, planted.raw) {
		t.Fatalf("the harness's retry is not its own first answer:\n%s\n%s", planted.raw, read.raw)
	}

	// The subagent first: its answer rides on the resolution, and the
	// harness's call under the same key is a duplicate of its own.
	id, rid, token = a.claimUnderReview(h, "a subagent's key, answered first")
	args = map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}
	sub := a.call(token, "dismiss", args, "Idempotency-Key", "cb-first")
	if sub.status != 200 || sub.replayed {
		t.Fatalf("the subagent's callback: %d %s", sub.status, sub.raw)
	}
	if read := a.call(h, "dismiss", args, "Idempotency-Key", "cb-first"); read.replayed || bytes.Equal(read.raw, sub.raw) {
		t.Fatalf("the harness read the subagent's answer: %s", read.raw)
	}
}
