package deployment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// On DynamoDB a key's response is remembered after the commit (its cost:
// docs/aws-cost.md), so a function that dies between the two has
// remembered nothing. The retry is then held by the service's own
// conditions: the assume is not issued twice (the entity's pending spawn
// is named, with how to read it), and the callback is not applied twice.
func TestAKeyedCallWhoseFunctionDiesIsNotAppliedTwiceOverTheLambdaAPI(t *testing.T) {
	a := newAPI(t)
	p := "idem-dies-" + randomName()
	h := a.token(p, auth.RoleHarness)
	id := a.call(h, "conclude", map[string]any{"statement": "a callback whose function dies"}).str("id")
	a.callDying(h, "assume", map[string]any{"id": id}, "a-dies")
	retried := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-dies")
	if retried.status != http.StatusConflict || retried.str("code") != "spawn-pending" {
		t.Fatalf("the retried assume: %d %v, want 409 spawn-pending", retried.status, retried.env.Data)
	}
	pending := a.call(h, "spawns", map[string]any{"pending": true})
	list, _ := pending.env.Data["spawns"].([]any)
	if len(list) != 1 {
		t.Fatalf("pending spawns after the retry: %v, want the one the dying assume issued", pending.env.Data)
	}
	rid, _ := list[0].(map[string]any)["request_id"].(string)
	// Its callback token was shown once, in the answer that was lost; a
	// re-read does not carry it. The test, which holds the table, makes the
	// token that answer carried, for the subagent's retried callback.
	issued := a.call(h, "show", map[string]any{"id": rid})
	if cb, _ := issued.env.Data["callback"].(map[string]any); cb["token"] != nil {
		t.Fatalf("a re-read carries the callback token: %v", cb)
	}
	token, err := a.backend.Project(p).Service.Credentials.CallbackTokenFor(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}
	a.callDying(token, "dismiss", args, "d-dies")
	again := a.call(token, "dismiss", args, "Idempotency-Key", "d-dies")
	res, _ := again.env.Data["resolution"].(map[string]any)
	if again.status != 200 || res["applied"] != false {
		t.Fatalf("the retried callback was applied again: %d %v", again.status, again.env.Data)
	}
	if s := a.call(h, "show", map[string]any{"id": id}); s.str("status") != "verified" {
		t.Fatalf("the entity after one applied callback: %v", s.env.Data)
	}
}
