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

// On DynamoDB the key's record is one more item of the call's
// TransactWriteItems: a function that dies between the commit and its
// answer has remembered it, and the retry replays the applied assume and
// callback rather than running them again.
func TestAKeyedCallbackThatCommittedIsReplayedOverTheLambdaAPIEvenIfTheFunctionDies(t *testing.T) {
	a := newAPI(t)
	p := "idem-dies-" + randomName()
	h := a.token(p, auth.RoleHarness)
	id := a.call(h, "conclude", map[string]any{"statement": "a callback whose function dies"}).str("id")
	a.callDying(h, "assume", map[string]any{"id": id}, "a-dies")
	retried := a.call(h, "assume", map[string]any{"id": id}, "Idempotency-Key", "a-dies")
	if retried.status != 200 || retried.str("request_id") == "" {
		t.Fatalf("the retried assume was not replayed: %d %v", retried.status, retried.env.Data)
	}
	cb, _ := retried.env.Data["callback"].(map[string]any)
	token, _ := cb["token"].(string)
	args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": retried.str("request_id")}
	a.callDying(token, "dismiss", args, "d-dies")
	again := a.call(token, "dismiss", args, "Idempotency-Key", "d-dies")
	res, _ := again.env.Data["resolution"].(map[string]any)
	if again.status != 200 || res["applied"] != true {
		t.Fatalf("the retried callback is not the applied one: %d %v", again.status, again.env.Data)
	}
	if s := a.call(h, "show", map[string]any{"id": id}); s.str("status") != "verified" {
		t.Fatalf("status %s, want verified", s.str("status"))
	}
}
