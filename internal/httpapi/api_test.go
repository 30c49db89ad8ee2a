package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/store/sqlite/sqlitetest"
	"github.com/dont-cli/dont/internal/tools"
)

type api struct {
	t      *testing.T
	srv    *httptest.Server
	store  *sqlite.Store
	path   string // the store's file
	svc    *service.Service
	now    atomic.Int64
	tokens map[string]string // role -> bearer
}

func newAPI(t *testing.T, opts ...func(*httpapi.Options)) *api {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dont.db")
	st := sqlitetest.Fresh(t, path)
	t.Cleanup(func() { st.Close() })
	a := &api{t: t, store: st, path: path, tokens: map[string]string{}}
	a.now.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	a.svc = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, SpawnTimeout: time.Hour, Author: "api", Approvals: service.Approvals{Store: st},
		Clock: func() time.Time { return time.Unix(0, a.now.Load()).UTC() }})
	o := httpapi.Options{Backend: httpapi.SingleProject{Project: httpapi.Project{Service: a.svc, Idempotency: st}}, RatePerSecond: -1}
	for _, f := range opts {
		f(&o)
	}
	a.srv = httptest.NewServer(httpapi.New(o))
	t.Cleanup(func() { invariants.Require(t, a.svc) }) // runs after the server closes
	t.Cleanup(a.srv.Close)
	for _, role := range []string{"harness", "approver", "admin"} {
		res, err := a.svc.Credentials.Create(context.Background(), role, role)
		if err != nil {
			t.Fatal(err)
		}
		a.tokens[role] = res.Secret
	}
	return a
}

type reply struct {
	status int
	header http.Header
	raw    []byte
	env    map[string]any
}

func (r reply) data() map[string]any { d, _ := r.env["data"].(map[string]any); return d }
func (r reply) str(k string) string  { s, _ := r.data()[k].(string); return s }
func (r reply) code() string         { return r.str("code") }

func (a *api) do(method, path, token string, body []byte, header ...string) reply {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.env); err != nil && path != "/v1/openapi.json" {
		a.t.Fatalf("%s %s: not JSON: %q", method, path, raw)
	}
	return r
}

func (a *api) call(token, tool string, args map[string]any, header ...string) reply {
	a.t.Helper()
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args})
	return a.do(http.MethodPost, "/v1/tools/"+tool, token, body, header...)
}

func (a *api) ok(token, tool string, args map[string]any) reply {
	a.t.Helper()
	r := a.call(token, tool, args)
	if r.status != 200 || r.env["ok"] != true {
		a.t.Fatalf("%s %v: %d %s", tool, args, r.status, r.raw)
	}
	return r
}

func (a *api) eventCount() int {
	evs, err := a.store.AllEvents(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return len(evs)
}

func TestBadInputOnEveryRouteGetsAnErrorEnvelopeAndChangesNothing(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	before := a.eventCount()
	big := `{"args":{"statement":"` + strings.Repeat("x", 70<<10) + `"}}`
	cases := []struct {
		name, method, path, token, body string
		header                          []string
		status                          int
	}{
		{"malformed JSON", "POST", "/v1/tools/conclude", h, `{"args":`, nil, 400},
		{"not an object", "POST", "/v1/tools/conclude", h, `[1,2]`, nil, 400},
		{"trailing data", "POST", "/v1/tools/conclude", h, `{"args":{"statement":"a"}} {}`, nil, 400},
		{"unknown top-level field", "POST", "/v1/tools/conclude", h, `{"args":{"statement":"a"},"extra":1}`, nil, 400},
		{"unknown parameter", "POST", "/v1/tools/conclude", h, `{"args":{"statement":"a","bogus":1}}`, nil, 400},
		{"wrong type", "POST", "/v1/tools/conclude", h, `{"args":{"statement":42}}`, nil, 400},
		{"wrong list type", "POST", "/v1/tools/dismiss", h, `{"args":{"id":"` + id + `","evidence":"https://x.org"}}`, nil, 400},
		{"missing required", "POST", "/v1/tools/trust", h, `{"args":{"id":"` + id + `"}}`, nil, 400},
		{"oversized body", "POST", "/v1/tools/conclude", h, big, nil, 413},
		{"wrong content type", "POST", "/v1/tools/conclude", h, `{"args":{"statement":"a"}}`, []string{"Content-Type", "text/plain"}, 415},
		{"invalid id", "POST", "/v1/tools/trust", h, `{"args":{"id":"claim:nope","reason":"ITS-90 says 99.97"}}`, nil, 400},
		{"unknown entity", "POST", "/v1/tools/show", h, `{"args":{"id":"claim:01HX05A9K8VP0000000000000A"}}`, nil, 404},
		{"hedge reason", "POST", "/v1/tools/trust", h, `{"args":{"id":"` + id + `","reason":"maybe wrong"}}`, nil, 422},
		{"missing auth", "POST", "/v1/tools/conclude", "", `{"args":{"statement":"a"}}`, nil, 401},
		{"garbage token", "POST", "/v1/tools/conclude", "dont_tok:x_y", `{"args":{"statement":"a"}}`, nil, 401},
		{"wrong role", "POST", "/v1/tools/conclude", a.tokens["approver"], `{"args":{"statement":"a"}}`, nil, 403},
		{"harness manages tokens", "POST", "/v1/tools/tokens.create", h, `{"args":{"role":"admin"}}`, nil, 403},
		{"unknown tool", "POST", "/v1/tools/nope", h, `{}`, nil, 404},
		{"unknown route", "GET", "/v2/x", h, ``, nil, 404},
		{"wrong method", "GET", "/v1/tools/conclude", h, ``, nil, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(c.method, c.path, c.token, []byte(c.body), c.header...)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.raw)
			}
			if r.env["ok"] != false || r.env["envelope_kind"] != "error" {
				t.Fatalf("not an error envelope: %s", r.raw)
			}
			if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
				t.Fatalf("empty remediation: %s", r.raw)
			}
		})
	}
	if after := a.eventCount(); after != before {
		t.Fatalf("bad input changed state: %d events, was %d", after, before)
	}
}

func TestCallbackTokenAllowsOnlyItsSpawnsCallbackActions(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	other := a.ok(h, "conclude", map[string]any{"statement": "ice melts at 0 C"}).str("id")
	req := a.ok(h, "assume", map[string]any{"id": id}).data()
	rid := req["request_id"].(string)
	cb := req["callback"].(map[string]any)["token"].(string)
	allowed := req["context"].(map[string]any)["allowed_tools"].([]any)
	if fmt.Sprint(allowed) != "[show dismiss trust]" {
		t.Fatalf("allowed_tools %v", allowed)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"lock", map[string]any{"id": id}},
		{"conclude", map[string]any{"statement": "x"}},
		{"list", map[string]any{}},
		{"assume", map[string]any{"id": id}},
		{"show", map[string]any{"id": other}},
		{"trust", map[string]any{"id": other, "reason": "ITS-90 says 99.97 C", "request_id": rid}},
		{"tokens.create", map[string]any{"role": "admin"}},
	} {
		if r := a.call(cb, c.tool, c.args); r.status != 403 || r.code() != "forbidden" {
			t.Fatalf("callback token on %s %v: %d %s", c.tool, c.args, r.status, r.raw)
		}
	}
	if r := a.call(cb, "show", map[string]any{"id": id}); r.status != 200 {
		t.Fatalf("show own entity: %d %s", r.status, r.raw)
	}
	if r := a.call(cb, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/bp"}, "request_id": rid}); r.status != 200 {
		t.Fatalf("own callback: %d %s", r.status, r.raw)
	}
	if r := a.call(cb, "show", map[string]any{"id": id}); r.status != 403 {
		t.Fatalf("callback token after resolution: %d %s", r.status, r.raw)
	}
	forged := cb[:len(cb)-3] + "AAA"
	if r := a.call(forged, "show", map[string]any{"id": id}); r.status != 401 {
		t.Fatalf("forged callback token: %d", r.status)
	}
}

func TestGuessCallbackTokenOnlyAnswers(t *testing.T) {
	a := newAPI(t)
	req := a.ok(a.tokens["harness"], "guess", map[string]any{"question": "boiling point at 2000 m?", "n": 2}).data()
	cb := req["callback"].(map[string]any)["token"].(string)
	rid := req["request_id"].(string)
	if r := a.call(cb, "conclude", map[string]any{"statement": "93 C"}); r.status != 403 {
		t.Fatalf("guess token concluded: %d", r.status)
	}
	if r := a.call(cb, "answer", map[string]any{"request_id": rid, "candidate": []string{"93 C", "93 C"}}); r.status != 200 {
		t.Fatalf("answer: %d %s", r.status, r.raw)
	}
}

func TestRolesSeparateHarnessApproverAdmin(t *testing.T) {
	a := newAPI(t)
	if r := a.confirmed(a.tokens["admin"], "tokens.create", map[string]any{"role": "harness"}); r.status != 200 {
		t.Fatalf("admin creates tokens: %d %s", r.status, r.raw)
	}
	if r := a.call(a.tokens["approver"], "list", nil); r.status != 200 {
		t.Fatalf("approver reads: %d %s", r.status, r.raw)
	}
	list := a.ok(a.tokens["admin"], "tokens.list", nil)
	_, harnessSecret, _ := auth.ParseBearer(a.tokens["harness"])
	if strings.Contains(string(list.raw), "hash") || strings.Contains(string(list.raw), harnessSecret) {
		t.Fatalf("token list leaks secrets or hashes: %s", list.raw)
	}
	revoked := list.data()["tokens"].([]any)[0].(map[string]any)["id"].(string)
	if r := a.confirmed(a.tokens["admin"], "tokens.revoke", map[string]any{"id": revoked}); r.status != 200 {
		t.Fatalf("admin revokes: %d %s", r.status, r.raw)
	}
	for role, tok := range a.tokens {
		if strings.Contains(tok, revoked+"_") {
			if r := a.call(tok, "list", nil); r.status != 401 {
				t.Fatalf("revoked %s token still works: %d", role, r.status)
			}
		}
	}
}

func TestTokensAreRandomAndStoredOnlyAsHashes(t *testing.T) {
	a := newAPI(t)
	seen := map[string]bool{}
	for _, tok := range a.tokens {
		_, secret, _ := auth.ParseBearer(tok)
		if len(secret) < 43 || seen[secret] { // 32 bytes base64url = 43 chars
			t.Fatalf("weak or repeated secret %q", secret)
		}
		seen[secret] = true
		rows, err := a.store.ListTokens(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if strings.Contains(row.Hash, secret) || row.Hash == "" {
				t.Fatalf("stored token is not a hash of the secret: %+v", row)
			}
		}
	}
}

func TestIdempotencyKeyReturnsTheFirstResponseAndAppliesOnce(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	first := a.call(h, "conclude", map[string]any{"statement": "retried claim"}, "Idempotency-Key", "k-1")
	second := a.call(h, "conclude", map[string]any{"statement": "retried claim"}, "Idempotency-Key", "k-1")
	if first.status != 200 || !bytes.Equal(first.raw, second.raw) || second.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry did not replay the first response:\n%s\n%s", first.raw, second.raw)
	}
	list := a.ok(h, "list", nil)
	if list.data()["count"] != 1.0 {
		t.Fatalf("the retried conclude applied %v times", list.data()["count"])
	}
	reused := a.call(h, "conclude", map[string]any{"statement": "a different claim"}, "Idempotency-Key", "k-1")
	if reused.status != 422 || reused.code() != "idempotency-key-reused" {
		t.Fatalf("key reused for another body: %d %s", reused.status, reused.raw)
	}
	// Concurrent retries of one request: applied once.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.call(h, "conclude", map[string]any{"statement": "concurrent retry"}, "Idempotency-Key", "k-2")
		}()
	}
	wg.Wait()
	if n := a.ok(h, "list", nil).data()["count"]; n != 2.0 {
		t.Fatalf("concurrent retries applied: %v entities, want 2", n)
	}
}

// Calls the service applies at most once by its own conditions — a
// callback, an assume — remember their first success without claiming
// the key first: a retry replays it; concurrent duplicates apply once,
// the others being refused by the spawn rules.
func TestExclusiveCallsReplayTheirFirstSuccessAndApplyOnce(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "retried callback"}).str("id")
	first := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "as-1")
	retry := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "as-1")
	if first.status != 200 || !bytes.Equal(first.raw, retry.raw) || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("assume retry did not replay:\n%s\n%s", first.raw, retry.raw)
	}
	req := first.data()
	token := req["callback"].(map[string]any)["token"].(string)
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": req["request_id"]}
	done := a.call(token, "dismiss", args, "Idempotency-Key", "cb-1")
	events := a.eventCount()
	again := a.call(token, "dismiss", args, "Idempotency-Key", "cb-1")
	if done.status != 200 || !bytes.Equal(done.raw, again.raw) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("callback retry did not replay:\n%s\n%s", done.raw, again.raw)
	}
	if a.eventCount() != events {
		t.Fatalf("the callback retry wrote %d events", a.eventCount()-events)
	}
	if r := a.call(token, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/other"}, "request_id": req["request_id"]}, "Idempotency-Key", "cb-1"); r.status != 422 {
		t.Fatalf("same key, other body: %d %s", r.status, r.raw)
	}

	// Concurrent duplicates of one assume: one spawn; the others are told
	// it is pending (or replay it).
	other := a.ok(h, "conclude", map[string]any{"statement": "concurrent assume"}).str("id")
	var wg sync.WaitGroup
	replies := make([]reply, 8)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = a.call(h, "assume", map[string]any{"id": other}, "Idempotency-Key", "as-2")
		}()
	}
	wg.Wait()
	issued := map[string]bool{}
	for _, r := range replies {
		switch {
		case r.status == 200:
			issued[r.str("request_id")] = true
		case r.code() != "spawn-pending":
			t.Fatalf("concurrent assume: %d %s", r.status, r.raw)
		}
	}
	pending := a.ok(h, "spawns", map[string]any{"pending": true}).data()["spawns"].([]any)
	if len(issued) != 1 || len(pending) != 1 {
		t.Fatalf("concurrent assumes issued %v; pending %d", issued, len(pending))
	}
}

func TestPerTokenRateLimitAnswers429WithRetryAfter(t *testing.T) {
	a := newAPI(t, func(o *httpapi.Options) { o.RatePerSecond, o.Burst = 1, 3 })
	h := a.tokens["harness"]
	var limited reply
	for i := 0; i < 10; i++ {
		if r := a.call(h, "list", nil); r.status == 429 {
			limited = r
			break
		}
	}
	if limited.status != 429 || limited.header.Get("Retry-After") == "" || limited.code() != "rate-limited" {
		t.Fatalf("no 429 with Retry-After: %d %v %s", limited.status, limited.header, limited.raw)
	}
	if r := a.call(a.tokens["approver"], "list", nil); r.status != 200 {
		t.Fatalf("another token was limited too: %d", r.status)
	}
}

// The race scenarios of docs/design.md §5.4, through the API: concurrent
// callbacks and sweeps over HTTP, exactly one resolver.
func TestRaceScenariosOverHTTPResolveOnce(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	for round := 0; round < 5; round++ {
		id := a.ok(h, "conclude", map[string]any{"statement": fmt.Sprintf("claim %d", round)}).str("id")
		a.ok(h, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/a"}})
		rid := a.ok(h, "assume", map[string]any{"id": id}).str("request_id")
		if round%2 == 0 {
			a.now.Add(int64(2 * time.Hour)) // expired: callbacks race the sweep
		}
		var wg sync.WaitGroup
		var applied, timedOut atomic.Int32
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if i%3 == 0 {
					r := a.call(h, "sweep", nil)
					timedOut.Add(int32(len(r.data()["timed_out"].([]any))))
					return
				}
				r := a.call(h, "trust", map[string]any{"id": id, "reason": "ITS-90 gives 99.97 C", "request_id": rid})
				if r.status != 200 {
					t.Errorf("callback: %d %s", r.status, r.raw)
					return
				}
				if res := r.data()["resolution"].(map[string]any); res["applied"] == true {
					applied.Add(1)
				} else if len(r.env["warnings"].([]any)) == 0 {
					t.Errorf("a losing callback carried no warning: %s", r.raw)
				}
			}(i)
		}
		wg.Wait()
		if applied.Load()+timedOut.Load() != 1 {
			t.Fatalf("round %d: %d applied + %d timed out, want exactly one resolver", round, applied.Load(), timedOut.Load())
		}
	}
}

func TestGetToolsAndHealthNeedNoToken(t *testing.T) {
	a := newAPI(t)
	if r := a.do("GET", "/v1/health", "", nil); r.status != 200 {
		t.Fatalf("health: %d", r.status)
	}
	r := a.do("GET", "/v1/tools", "", nil)
	if r.status != 200 || r.env["envelope_kind"] != "tools" || len(r.data()["tools"].([]any)) < 15 {
		t.Fatalf("tools: %d %s", r.status, r.raw)
	}
}
