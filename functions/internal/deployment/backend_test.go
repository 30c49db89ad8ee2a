package deployment_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
	"github.com/dont-cli/dont/internal/tools"
)

// api is the HTTP API over one table shared by several projects.
type api struct {
	t       *testing.T
	srv     *httptest.Server
	backend *deployment.Backend
	now     atomic.Int64
	// counter tallies the backend's DynamoDB requests.
	counter *capacity.Counter

	mu    sync.Mutex
	built map[string]int // project -> services the backend built for it
}

func newAPI(t *testing.T) *api {
	t.Helper()
	needServer(t)
	a := &api{t: t, counter: newCounter(), built: map[string]int{}}
	a.now.Store(t0.UnixNano())
	a.backend = deployment.NewBackend(newClient(nil, a.counter), table, func(st *dynamo.Store) *service.Service {
		a.mu.Lock()
		a.built[st.Project()]++
		a.mu.Unlock()
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour, Author: "api",
			Clock: func() time.Time { return time.Unix(0, a.now.Load()).UTC() }})
	})
	a.srv = httptest.NewServer(httpapi.New(httpapi.Options{Backend: a.backend, RatePerSecond: -1}))
	t.Cleanup(a.srv.Close)
	return a
}

// token makes a bearer token of role in project.
func (a *api) token(project, role string) string {
	a.t.Helper()
	res, err := a.backend.Project(project).Service.Credentials.Create(ctx, role, role)
	if err != nil {
		a.t.Fatal(err)
	}
	return res.Secret
}

type reply struct {
	status int
	// replayed: the answer is a remembered one (Idempotent-Replayed).
	replayed bool
	raw      []byte
	env      struct {
		OK   bool           `json:"ok"`
		Data map[string]any `json:"data"`
	}
}

func (r reply) str(k string) string { s, _ := r.env.Data[k].(string); return s }

func (a *api) call(token, tool string, args map[string]any, header ...string) reply {
	a.t.Helper()
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args})
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/tools/"+tool, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if r.raw, err = io.ReadAll(resp.Body); err != nil {
		a.t.Fatal(err)
	}
	if err := json.Unmarshal(r.raw, &r.env); err != nil {
		a.t.Fatal(err)
	}
	return r
}

// claimUnderReview concludes a claim and assumes it: the claim id, the
// spawn id and the callback token.
func (a *api) claimUnderReview(token, statement string) (claim, rid, callback string) {
	a.t.Helper()
	c := a.call(token, "conclude", map[string]any{"statement": statement})
	if c.status != 200 {
		a.t.Fatalf("conclude: %d %v", c.status, c.env.Data)
	}
	s := a.call(token, "assume", map[string]any{"id": c.str("id")})
	if s.status != 200 {
		a.t.Fatalf("assume: %d %v", s.status, s.env.Data)
	}
	cb, _ := s.env.Data["callback"].(map[string]any)
	tok, _ := cb["token"].(string)
	return c.str("id"), s.str("request_id"), tok
}

func TestProjectsSharingATableAreIsolated(t *testing.T) {
	a := newAPI(t)
	pa, pb := "alpha-"+randomName(), "beta#E%-"+randomName() // key separators in a name are escaped
	harnessA, harnessB := a.token(pa, auth.RoleHarness), a.token(pb, auth.RoleHarness)
	adminA := a.token(pa, auth.RoleAdmin)
	a.token(pb, auth.RoleAdmin)

	claimA, ridA, cbA := a.claimUnderReview(harnessA, "alpha's claim")
	claimB, ridB, cbB := a.claimUnderReview(harnessB, "beta's claim")

	t.Run("a project's bearer token reads only its own project", func(t *testing.T) {
		if r := a.call(harnessA, "show", map[string]any{"id": claimB}); r.status != 404 || r.str("code") != "not-found" {
			t.Fatalf("A showing B's claim: %d %v", r.status, r.env.Data)
		}
		if r := a.call(harnessA, "show", map[string]any{"id": claimA}); r.status != 200 {
			t.Fatalf("A showing its own claim: %d %v", r.status, r.env.Data)
		}
		list := a.call(harnessA, "list", map[string]any{})
		if n, _ := list.env.Data["count"].(float64); n != 1 {
			t.Fatalf("A lists %v entities, want 1: %v", n, list.env.Data)
		}
		sp := a.call(harnessA, "spawns", map[string]any{"all": true})
		if n, _ := sp.env.Data["count"].(float64); n != 1 || !strings.Contains(mustJSON(sp.env.Data), ridA) {
			t.Fatalf("A lists spawns %v", sp.env.Data)
		}
		tl := a.call(adminA, "tokens.list", map[string]any{})
		if n, _ := tl.env.Data["count"].(float64); n != 2 {
			t.Fatalf("A's admin lists %v tokens, want A's 2", n)
		}
		if r := a.call(harnessA, "dismiss", map[string]any{"id": claimB, "evidence": []string{"https://example.org"}, "request_id": ridB}); r.status == 200 {
			t.Fatalf("A resolved B's spawn: %v", r.env.Data)
		}
	})

	t.Run("a callback token acts only on its own spawn in its own project", func(t *testing.T) {
		if r := a.call(cbB, "show", map[string]any{"id": claimA}); r.status != 403 {
			t.Fatalf("B's callback token showing A's claim: %d %v", r.status, r.env.Data)
		}
		// A callback token for B's spawn made with A's secret proves nothing.
		secretA, err := a.backend.Project(pa).Service.Tokens.ProjectSecret(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forged := auth.CallbackToken(secretA, ridB)
		if r := a.call(forged, "show", map[string]any{"id": claimB}); r.status != 401 {
			t.Fatalf("forged callback token: %d %v", r.status, r.env.Data)
		}
		if r := a.call(cbA, "dismiss", map[string]any{"id": claimA, "evidence": []string{"https://example.org/a"}, "request_id": ridA}); r.status != 200 {
			t.Fatalf("A's callback: %d %v", r.status, r.env.Data)
		}
		if r := a.call(harnessB, "show", map[string]any{"id": claimB}); r.str("status") != string(ledger.Unverified) {
			t.Fatalf("B's claim moved when A's spawn resolved: %v", r.env.Data)
		}
	})

	t.Run("unknown, malformed and wrong tokens are refused", func(t *testing.T) {
		id, _, _ := auth.ParseBearer(harnessA)
		for name, tok := range map[string]string{
			"unknown id":      auth.BearerString("tok:01J0000000000000000000000A", "secret"),
			"wrong secret":    auth.BearerString(id, "not-the-secret"),
			"malformed":       "dont_",
			"unknown spawn":   "dontcb_spawn:01J0000000000000000000000A_mac",
			"malformed cb":    "dontcb_",
			"not a token":     "hello",
			"another's token": strings.Replace(cbA, ridA, ridB, 1),
		} {
			if r := a.call(tok, "list", map[string]any{}); r.status != 401 {
				t.Errorf("%s: %d %v", name, r.status, r.env.Data)
			}
		}
	})

	t.Run("store reads never cross projects", func(t *testing.T) {
		stA, stB := storeOf(a, pa), storeOf(a, pb)
		if _, err := stA.GetEntity(ctx, claimB); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetEntity across projects: %v", err)
		}
		if _, err := stA.GetSpawn(ctx, ridB); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetSpawn across projects: %v", err)
		}
		idB, _, _ := auth.ParseBearer(harnessB)
		if _, err := stA.GetToken(ctx, idB); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetToken across projects: %v", err)
		}
		if evs, _ := stA.Events(ctx, claimB); len(evs) != 0 {
			t.Errorf("Events across projects: %d", len(evs))
		}
		due, _ := stB.ExpiringSpawns(ctx, time.Time{}, t0.Add(48*time.Hour), 100)
		if len(due) != 1 || due[0].ID != ridB {
			t.Errorf("B's due spawns = %v, want only %s", due, ridB)
		}
	})
}

func storeOf(a *api, project string) *dynamo.Store {
	return a.backend.Project(project).Service.Store.(*dynamo.Store)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestIdempotencyKeysReplayThroughTheAPI(t *testing.T) {
	a := newAPI(t)
	p := "idem-" + randomName()
	h := a.token(p, auth.RoleHarness)
	first := a.call(h, "conclude", map[string]any{"statement": "said once"}, "Idempotency-Key", "k-1")
	again := a.call(h, "conclude", map[string]any{"statement": "said once"}, "Idempotency-Key", "k-1")
	if first.status != 200 || again.str("id") != first.str("id") {
		t.Fatalf("replay: %v then %v", first.env.Data, again.env.Data)
	}
	if r := a.call(h, "conclude", map[string]any{"statement": "said twice"}, "Idempotency-Key", "k-1"); r.status != 422 {
		t.Fatalf("same key, other body: %d", r.status)
	}
	if list := a.call(h, "list", map[string]any{}); list.env.Data["count"] != float64(1) {
		t.Fatalf("the replayed conclude was applied twice: %v", list.env.Data)
	}
}

// An assume (the spawn rules apply it at most once) remembers its first
// success with one write, and a retry with the same key replays it.
func TestAnExclusiveCallReplaysItsFirstSuccessThroughTheAPI(t *testing.T) {
	a := newAPI(t)
	p := "idem-x-" + randomName()
	h := a.token(p, auth.RoleHarness)
	id := a.call(h, "conclude", map[string]any{"statement": "assumed once"}).str("id")
	first := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-1")
	again := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-1")
	if first.status != 200 || again.status != 200 || again.str("request_id") != first.str("request_id") {
		t.Fatalf("replay: %d %v then %d %v", first.status, first.env.Data, again.status, again.env.Data)
	}
	if r := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-2"); r.status == 200 {
		t.Fatalf("a second assume with a new key issued a spawn: %v", r.env.Data)
	}
	if list := a.call(h, "spawns", map[string]any{"pending": true}); list.env.Data["count"] != float64(1) {
		t.Fatalf("pending spawns: %v", list.env.Data)
	}
}
