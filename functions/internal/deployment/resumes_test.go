package deployment_test

import (
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"context"
	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// countingSender answers every webhook attempt with 200 and counts them.
type countingSender struct{ sent atomic.Int64 }

func (c *countingSender) Send(context.Context, string, string, string, time.Time, []byte) service.SendResult {
	c.sent.Add(1)
	return service.SendResult{Status: 200}
}

// On DynamoDB too, a keyed guess and a keyed hooks.test whose function
// died after their writes (the spawn issued; the test message sent) are
// resumed by their retries once the claim is stale: the same spawn
// request, the same test message — not idempotency-outcome-unknown, not
// a second spawn or message.
func TestAKeyedGuessAndHookTestWhoseFunctionDiesAreResumedOverTheLambdaAPI(t *testing.T) {
	needServer(t)
	sender := &countingSender{}
	backend := deployment.NewBackend(newClient(nil, nil), table, func(st *dynamo.Store) *service.Service {
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour, Author: "api",
			HooksConfig: service.HooksConfig{Store: st, Sender: sender}})
	})
	project := "resume-dies-" + randomName()
	creds := backend.Project(project).Service.Credentials
	token := func(role string) string {
		res, err := creds.Create(ctx, role, role)
		if err != nil {
			t.Fatal(err)
		}
		return res.Secret
	}
	h, admin := token(auth.RoleHarness), token(auth.RoleAdmin)
	call := func(b httpapi.Backend, token, tool, body, key string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		httpapi.New(httpapi.Options{Backend: b, RatePerSecond: -1}).ServeHTTP(rec, keyedRequest("", token, tool, body, key))
		var env struct {
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(rec.Body.Bytes(), &env)
		return rec.Code, env.Data
	}
	dies := func(token, tool, body, key string) {
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: the dying function answered", tool)
			}
		}()
		httpapi.New(httpapi.Options{Backend: dyingBackend{backend}, RatePerSecond: -1}).
			ServeHTTP(dyingWriter{httptest.NewRecorder()}, keyedRequest("", token, tool, body, key))
	}
	late := lateBackend{backend, 2 * idempotency.StaleClaim}

	guess := `{"args":{"question":"boiling point at 2000 m?","n":2}}`
	dies(h, "guess", guess, "guess-1")
	code, d := call(late, h, "guess", guess, "guess-1")
	id, _ := d["request_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("the guess's retry once the claim is stale: %d %v", code, d)
	}
	if code, d := call(backend, h, "spawns", `{"args":{"pending":true}}`, ""); code != 200 || d["count"] != 1.0 {
		t.Fatalf("pending spawns after the resumed guess: %d %v", code, d)
	}

	code, d = call(backend, admin, "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "add-1")
	hook, _ := d["hook_id"].(string)
	if code != 200 || hook == "" {
		t.Fatalf("hooks.add: %d %v", code, d)
	}
	test := `{"args":{"id":"` + hook + `"},"cli_confirmed":true}`
	dies(admin, "hooks.test", test, "test-1")
	code, d = call(late, admin, "hooks.test", test, "test-1")
	delivery, _ := d["delivery"].(map[string]any)
	if code != 200 || d["message_id"] == nil || delivery["state"] != "delivered" {
		t.Fatalf("the hooks.test's retry once the claim is stale: %d %v", code, d)
	}
	if n := sender.sent.Load(); n != 1 {
		t.Fatalf("the receiver got %d test messages, want 1", n)
	}
}
