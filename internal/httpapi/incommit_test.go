package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
)

// dyingStore is the key store of a process that dies before it can write
// anything after the call's commit: every write of its own panics.
type dyingStore struct{ idempotency.Store }

func (dyingStore) Complete(context.Context, string, int, []byte) error { panic("the process died") }
func (dyingStore) Release(context.Context, string) error               { panic("the process died") }
func (dyingStore) Remember(context.Context, string, string, int, []byte, time.Time) error {
	panic("the process died")
}

// dyingWriter is a connection that dies before the response is written.
type dyingWriter struct{ *httptest.ResponseRecorder }

func (dyingWriter) WriteHeader(int)           { panic("the process died") }
func (dyingWriter) Write([]byte) (int, error) { panic("the process died") }

// callDying runs one keyed call in a process that dies after its commit:
// nothing is answered and nothing is written after the commit.
func (a *api) callDying(token, tool string, args map[string]any, key string) {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"args": args})
	a.callDyingWith(token, tool, body, key)
}

// callDyingWith is callDying of a raw body with more headers (name, value).
func (a *api) callDyingWith(token, tool string, body []byte, key string, header ...string) {
	a.t.Helper()
	h := httpapi.New(httpapi.Options{Backend: httpapi.SingleProject{Project: httpapi.Project{Service: a.svc, Idempotency: dyingStore{a.store}}}, RatePerSecond: -1})
	req := httptest.NewRequest(http.MethodPost, "/v1/tools/"+tool, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	func() {
		defer func() {
			if recover() == nil {
				a.t.Fatalf("%s: the dying process answered", tool)
			}
		}()
		h.ServeHTTP(dyingWriter{httptest.NewRecorder()}, req)
	}()
}

// The response to a keyed callback is written in the commit that applies
// it: a process that dies between the commit and its answer has already
// remembered it, and the retry replays the applied callback instead of
// running it again as a duplicate.
func TestAKeyedCallbackThatCommittedIsReplayedEvenIfTheProcessDiesBeforeAnsweringIt(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "a callback whose server dies"}).str("id")
	a.callDying(h, "assume", map[string]any{"id": id}, "as-dies")
	retried := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "as-dies")
	if retried.status != 200 || retried.header.Get("Idempotent-Replayed") != "true" || retried.env["envelope_kind"] != "spawn_request" {
		t.Fatalf("the retried assume was not replayed: %d %s", retried.status, retried.raw)
	}
	req := retried.data()
	token := req["callback"].(map[string]any)["token"].(string)
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": req["request_id"]}
	a.callDying(token, "dismiss", args, "cb-dies")
	events := a.eventCount()
	again := a.call(token, "dismiss", args, "Idempotency-Key", "cb-dies")
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retried callback was not replayed: %d %s", again.status, again.raw)
	}
	res, _ := again.data()["resolution"].(map[string]any)
	if res["applied"] != true || len(again.env["warnings"].([]any)) != 0 {
		t.Fatalf("the replay is not the applied callback: %s", again.raw)
	}
	if a.eventCount() != events {
		t.Fatal("the retry applied the callback again")
	}
	if st := a.ok(h, "show", map[string]any{"id": id}).str("status"); st != "verified" {
		t.Fatalf("status %s, want verified", st)
	}
}

// The key's record is written by the server, under the caller's own
// principal and tool: an agent holding the harness token that sends a
// subagent's key and body gets no replay of the subagent's answer, and
// cannot have its own call's answer stand for the subagent's key.
func TestAHarnessCannotReadOrPlantTheRememberedAnswerOfItsSubagentsKey(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "a subagent's key"}).str("id")
	req := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "shared").data()
	token := req["callback"].(map[string]any)["token"].(string)
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": req["request_id"]}
	// The harness answers first, with the subagent's key.
	planted := a.call(h, "dismiss", args, "Idempotency-Key", "cb-shared")
	if planted.header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("the harness's call was a replay: %s", planted.raw)
	}
	first := a.call(token, "dismiss", args, "Idempotency-Key", "cb-shared")
	if first.header.Get("Idempotent-Replayed") == "true" || bytes.Equal(first.raw, planted.raw) {
		t.Fatalf("the subagent was answered the harness's response: %s", first.raw)
	}
	again := a.call(token, "dismiss", args, "Idempotency-Key", "cb-shared")
	if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.raw, first.raw) {
		t.Fatalf("the subagent's retry is not its own first answer:\n%s\n%s", first.raw, again.raw)
	}
	read := a.call(h, "dismiss", args, "Idempotency-Key", "cb-shared")
	if !bytes.Equal(read.raw, planted.raw) || bytes.Equal(read.raw, first.raw) {
		t.Fatalf("the harness read another principal's answer: %s", read.raw)
	}
}

// Assumes of several entities sent at once under one key: the key's
// record is written with the first to commit, and every other is refused
// as a reuse of the key, applying nothing (with the record written after
// the commit, each would have issued its spawn).
func TestConcurrentAssumesOfDifferentEntitiesUnderOneKeyApplyOnce(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = a.ok(h, "conclude", map[string]any{"statement": "entity " + string(rune('a'+i))}).str("id")
	}
	replies := make([]reply, n)
	start := make(chan struct{})
	done := make(chan int)
	for i := range ids {
		go func() {
			<-start
			replies[i] = a.call(h, "assume", map[string]any{"id": ids[i]}, "Idempotency-Key", "one-key")
			done <- i
		}()
	}
	close(start)
	for range ids {
		<-done
	}
	applied := 0
	for _, r := range replies {
		switch {
		case r.status == 200 && r.header.Get("Idempotent-Replayed") == "":
			applied++
		case r.status == 422 && r.code() == "idempotency-key-reused", r.status == 409 && r.code() == "idempotency-in-progress":
		default:
			t.Fatalf("unexpected answer: %d %s", r.status, r.raw)
		}
	}
	pending := a.ok(h, "spawns", map[string]any{"pending": true}).data()["count"]
	if applied != 1 || pending != 1.0 {
		t.Fatalf("%d applied, %v spawns pending; want 1 and 1", applied, pending)
	}
}

// Every tool whose write is one commit of the service (tools.CommitsKey)
// commits its keyed response with that write: a process that dies right
// after the commit has remembered its answer, and the retry replays it
// rather than answering "in progress" and applying it again a minute later.
func TestAKeyedWriteThatCommittedIsReplayedEvenIfTheProcessDiesBeforeAnsweringIt(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	claim := func(s string) string { return a.ok(h, "conclude", map[string]any{"statement": s}).str("id") }
	pendingSpawn := func(s string) string {
		return a.ok(h, "assume", map[string]any{"id": claim(s)}).str("request_id")
	}
	a.svc.HooksConfig = service.HooksConfig{Store: a.store}
	admin := a.tokens["admin"]
	listed := func(tool string) func() int {
		return func() int {
			d := a.ok(admin, tool, nil).data()
			for _, k := range []string{"hooks", "tokens", "confirmations", "sessions"} {
				if list, ok := d[k].([]any); ok {
					return len(list)
				}
			}
			t.Fatalf("%s listed nothing: %v", tool, d)
			return 0
		}
	}
	cases := []struct {
		tool string
		args func() map[string]any
		// confirmed: a gated tool, confirmed by the CLI (cli_confirmed).
		confirmed bool
		// admin: the call is an admin's; count, what it writes (nil: the
		// ledger's events).
		admin bool
		count func() int
	}{
		{"conclude", func() map[string]any { return map[string]any{"statement": "a conclude whose server dies"} }, false, false, nil},
		{"define", func() map[string]any { return map[string]any{"curie": "ex:Dies", "doc": "a term whose server dies"} }, false, false, nil},
		{"trust", func() map[string]any {
			return map[string]any{"id": claim("a trust whose server dies"), "reason": "the cited table is for 1 atm, not 2000 m"}
		}, false, false, nil},
		{"dismiss", func() map[string]any {
			return map[string]any{"id": claim("a dismiss whose server dies"), "evidence": []string{"https://example.org/e"}}
		}, false, false, nil},
		{"spawns.manage", func() map[string]any {
			return map[string]any{"op": "cancel", "request_id": pendingSpawn("a manage cancel whose server dies")}
		}, true, false, nil},
		{"spawns.cancel", func() map[string]any {
			return map[string]any{"request_id": pendingSpawn("a cancel whose server dies")}
		}, true, false, nil},
		{"reopen", func() map[string]any {
			id := claim("a reopen whose server dies")
			a.confirmed(h, "ignore", map[string]any{"id": id, "reason": "superseded by the 2000 m table"})
			return map[string]any{"id": id, "reason": "the 2000 m table was withdrawn"}
		}, true, false, nil},
		{"ignore", func() map[string]any {
			return map[string]any{"id": claim("an ignore whose server dies"), "reason": "superseded by the 2000 m table"}
		}, true, false, nil},
		{"lock", func() map[string]any {
			id := claim("a lock whose server dies")
			a.ok(h, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/e"}})
			return map[string]any{"id": id, "reason": "measured twice"}
		}, true, false, nil},
		{"answer", func() map[string]any {
			rid := a.ok(h, "guess", map[string]any{"question": "boiling point at 2000 m?", "n": 2}).str("request_id")
			return map[string]any{"request_id": rid, "candidate": []string{"93 C", "93 C"}}
		}, false, false, nil},
		{"spawns.heartbeat", func() map[string]any {
			return map[string]any{"request_id": pendingSpawn("a heartbeat whose server dies"), "extend": "2h"}
		}, false, false, nil},
		{"hooks.add", func() map[string]any {
			return map[string]any{"url": "https://hooks.example.com/dies", "events": []string{"approval.asked"}}
		}, true, true, listed("hooks.list")},
		{"tokens.create", func() map[string]any { return map[string]any{"role": "harness", "name": "dies"} }, true, true, listed("tokens.list")},
		{"tokens.manage", func() map[string]any { return map[string]any{"op": "create", "role": "approver"} }, true, true, listed("tokens.list")},
		{"sessions.open", func() map[string]any { return map[string]any{"tier": "read-only", "name": "dies"} }, false, false, listed("sessions.list")},
		// Not confirmed: the call is held, and the held call is its write.
		{"hooks.add held", func() map[string]any {
			return map[string]any{"url": "https://hooks.example.com/held", "events": []string{"approval.asked"}}
		}, false, true, listed("confirmations.list")},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.tool] = true
	}
	for _, tool := range tools.All() {
		if tool.CommitsKey() && !covered[tool.Name] {
			t.Errorf("%s commits its key with its write but is not tested here", tool.Name)
		}
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			tool, _, _ := strings.Cut(c.tool, " ")
			who, count := h, a.eventCount
			if c.admin {
				who = admin
			}
			if c.count != nil {
				count = c.count
			}
			args := c.args()
			body, _ := json.Marshal(map[string]any{"args": args})
			var header []string
			if c.confirmed {
				body, _ = json.Marshal(map[string]any{"args": args, "cli_confirmed": true})
				header = []string{confirm.CapsHeader, confirm.CLICaps}
			}
			key := "dies-" + strings.ReplaceAll(c.tool, " ", "-")
			before := count()
			a.callDyingWith(who, tool, body, key, header...)
			applied := count()
			if applied == before {
				t.Fatal("the dying call applied nothing")
			}
			again := a.do(http.MethodPost, "/v1/tools/"+tool, who, body, append(header, "Idempotency-Key", key)...)
			if again.status/100 != 2 || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the retry was not replayed: %d %s", again.status, again.raw)
			}
			if count() != applied {
				t.Fatal("the retry applied the call again")
			}
		})
	}
}

// Concurrent requests with one key and one body: exactly one conclude is
// applied, and every other request answers its response or "in progress".
func TestConcurrentConcludesUnderOneKeyApplyOnce(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	const n = 8
	replies := make([]reply, n)
	start := make(chan struct{})
	done := make(chan struct{})
	for i := range replies {
		go func() {
			<-start
			replies[i] = a.call(h, "conclude", map[string]any{"statement": "one key, many racers"}, "Idempotency-Key", "one-key")
			done <- struct{}{}
		}()
	}
	close(start)
	for range replies {
		<-done
	}
	ids := map[any]bool{}
	for _, r := range replies {
		switch {
		case r.status == 201 || r.status == 200:
			ids[r.data()["id"]] = true
		case r.status == 409 && r.code() == "idempotency-in-progress":
		default:
			t.Fatalf("unexpected answer: %d %s", r.status, r.raw)
		}
	}
	list := a.ok(h, "list", nil).data()
	if len(ids) != 1 || list["count"] != 1.0 {
		t.Fatalf("%d distinct claims answered, %v listed; want 1 and 1", len(ids), list["count"])
	}
}
