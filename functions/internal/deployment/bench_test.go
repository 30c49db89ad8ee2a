package deployment_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// BenchmarkSpawnLifecycle/api is the callback lifecycle through the HTTP
// API handler and the multi-project backend, as a harness drives it:
// bearer token for assume, callback token for dismiss, an Idempotency-Key
// on both, as the CLI sends. It counts DynamoDB capacity with
// capacity.Counter, like the store-level lifecycles in internal/store/dynamo.
//
// The "api" case reads the project's hooks on every commit; "deployed"
// caches them as the functions do (deployment.DefaultHookCache).
//
//	go test ./functions/internal/deployment -run '^$' -bench SpawnLifecycle -benchtime 200x
func BenchmarkSpawnLifecycle(b *testing.B) {
	for _, c := range []struct {
		name      string
		hookCache time.Duration
	}{{"api", 0}, {"deployed", deployment.DefaultHookCache}} {
		b.Run(c.name, func(b *testing.B) { benchLifecycle(b, c.hookCache) })
	}
}

func benchLifecycle(b *testing.B, hookCache time.Duration) {
	{
		needServer(b)
		counter := newCounter()
		backend := deployment.NewBackend(newClient(nil, counter), table, func(st *dynamo.Store) *service.Service {
			st.SetHookCache(hookCache, nil, nil)
			return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour, Author: "bench"})
		})
		srv := httptest.NewServer(httpapi.New(httpapi.Options{Backend: backend, RatePerSecond: -1}))
		defer srv.Close()
		project := "bench-api-" + randomName()
		tok, err := backend.Project(project).Service.Credentials.Create(ctx, auth.RoleHarness, "bench")
		if err != nil {
			b.Fatal(err)
		}
		harness := tok.Secret
		claim := post(b, srv.URL, harness, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"})["id"].(string)
		counter.Reset()
		b.ResetTimer()
		for i := range b.N {
			req := post(b, srv.URL, harness, "assume", map[string]any{"id": claim}, "Idempotency-Key", fmt.Sprintf("a-%d", i))
			cb := req["callback"].(map[string]any)
			post(b, srv.URL, cb["token"].(string), "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/boiling"},
				"request_id": req["request_id"]}, "Idempotency-Key", fmt.Sprintf("d-%d", i))
		}
		b.StopTimer()
		counter.Report(b, "lifecycle")
	}
}

func post(b *testing.B, base, token, tool string, args map[string]any, header ...string) map[string]any {
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/tools/"+tool, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data map[string]any `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&env)
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d %v", tool, resp.StatusCode, env.Data)
	}
	return env.Data
}
