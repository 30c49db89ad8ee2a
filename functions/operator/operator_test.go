package main

import (
	"context"
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// oneProject opens the same project whatever the name, and records the
// names, the settings put (by project) and the projects refreshed.
type oneProject struct {
	p         httpapi.Project
	names     []string
	settings  map[string]store.ProjectSettings
	refreshed []string
}

func (o *oneProject) Refresh(name string) { o.refreshed = append(o.refreshed, name) }

func (o *oneProject) Project(name string) httpapi.Project {
	o.names = append(o.names, name)
	p := o.p
	if p.Service == nil {
		p.Service = service.New(service.Deps{Settings: projectSettings{o, name}, Project: name})
	}
	return p
}

// projectSettings is the settings store of one project of o.
type projectSettings struct {
	o       *oneProject
	project string
}

func (s projectSettings) Settings(context.Context) (store.ProjectSettings, error) {
	return s.o.settings[s.project], nil
}

func (s projectSettings) PutSettings(_ context.Context, ps store.ProjectSettings) error {
	if s.o.settings == nil {
		s.o.settings = map[string]store.ProjectSettings{}
	}
	s.o.settings[s.project] = ps
	return nil
}

// secretsCreated counts the project secrets created through it.
type secretsCreated struct {
	*sqlite.Store
	n int
}

func (s *secretsCreated) CreateProjectSecret(ctx context.Context) ([]byte, error) {
	s.n++
	return s.Store.CreateProjectSecret(ctx)
}

func TestAnOperatorInvokeCreatesAProjectsFirstTokenAndBadOnesChangeNothing(t *testing.T) {
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	secrets := &secretsCreated{Store: st}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: secrets, SpawnTimeout: time.Hour, Author: "api"})
	proj := httpapi.Project{Service: svc, Idempotency: st}
	backend := &oneProject{p: proj}
	log := slog.New(slog.DiscardHandler)
	invoke := newFunction(backend, log)
	call := func(payload string) map[string]any {
		t.Helper()
		out, err := invoke(context.Background(), json.RawMessage(payload))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		var env map[string]any
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	tokens := func() int {
		list, err := st.ListTokens(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	for _, bad := range []string{
		`{"version":"2.0","rawPath":"/v1/tools/tokens.create","requestContext":{"http":{"method":"POST"}}}`,
		`[1,2]`,
		`{"dont_operator":{}}`,
		`{"dont_operator":{"create_token":{"role":"admin"}}}`,
		`{"dont_operator":{"create_token":{"project":"p1","role":"root"}}}`,
		`{"dont_operator":{"rotate_secret":{}}}`,
		`{"dont_operator":{"rotate_secret":{"project":"p1"}}}`, // this store's secret does not rotate
		`{"dont_operator":{"retire_secrets":{}}}`,
		`{"dont_operator":{"retire_secrets":{"project":"p1"}}}`, // nor has it versions to retire
		`{"dont_operator":{"reindex":{}}}`,
		`{"dont_operator":{"reindex":{"project":"p1"}}}`, // nor list indexes to backfill
		`{"dont_operator":{"reindex":{"project":"p1","cursor":"not-a-cursor"}}}`,
	} {
		env := call(bad)
		data, _ := env["data"].(map[string]any)
		if env["ok"] != false || len(data["remediation"].([]any)) == 0 {
			t.Fatalf("%s: want an error envelope with remediation, got %v", bad, env)
		}
		if n := tokens(); n != 0 || secrets.n != 0 {
			t.Fatalf("%s: %d tokens stored, %d project secrets created", bad, n, secrets.n)
		}
	}

	env := call(`{"dont_operator":{"create_token":{"project":"p1"}}}`)
	data, _ := env["data"].(map[string]any)
	secret, _ := data["token"].(string)
	if env["ok"] != true || data["role"] != "admin" || secret == "" || backend.names[len(backend.names)-1] != "p1" {
		t.Fatalf("create_token: %v (projects opened %v)", env, backend.names)
	}
	if secrets.n != 1 {
		t.Fatalf("create_token created the project's callback secret %d times, want once", secrets.n)
	}
	// The token works through the API (the handler the api function runs).
	api := httptest.NewServer(httpapi.New(httpapi.Options{Backend: httpapi.SingleProject{Project: proj}, Log: log}))
	defer api.Close()
	req, _ := http.NewRequest("POST", api.URL+"/v1/tools/tokens.list", strings.NewReader(`{"args":{}}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the operator's token through the API: %d", resp.StatusCode)
	}
}

func TestAnOperatorSetsAProjectsSpawnTimeoutAndBadValuesChangeNothing(t *testing.T) {
	backend := &oneProject{}
	invoke := newFunction(backend, slog.New(slog.DiscardHandler))
	call := func(payload string) map[string]any {
		t.Helper()
		out, err := invoke(context.Background(), json.RawMessage(payload))
		if err != nil {
			t.Fatal(err)
		}
		var env map[string]any
		if err := json.Unmarshal(out, &env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	for _, bad := range []string{
		`{"dont_operator":{"set_project":{"spawn_timeout":"2h"}}}`,
		`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"soon"}}}`,
		`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"0s"}}}`,
		`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"1000h"}}}`,
		`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"2h","spawn_max_lease":"forever"}}}`,
		`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"2h","spawn_max_lease":"1000h"}}}`,
	} {
		env := call(bad)
		data, _ := env["data"].(map[string]any)
		if env["ok"] != false || len(data["remediation"].([]any)) == 0 || len(backend.settings) != 0 {
			t.Fatalf("%s: want an error envelope with remediation and nothing stored, got %v, stored %v", bad, env, backend.settings)
		}
	}
	env := call(`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"90m"}}}`)
	if env["ok"] != true || backend.settings["p1"].SpawnTimeout != 90*time.Minute {
		t.Fatalf("set_project: %v, stored %v", env, backend.settings)
	}
	if len(backend.refreshed) != 1 || backend.refreshed[0] != "p1" {
		t.Fatalf("refreshed %v, want p1 once: this instance applies the new settings at once", backend.refreshed)
	}
}

func TestAnOperatorSetsAProjectsSpawnMaxLease(t *testing.T) {
	backend := &oneProject{}
	invoke := newFunction(backend, slog.New(slog.DiscardHandler))
	out, err := invoke(context.Background(), json.RawMessage(`{"dont_operator":{"set_project":{"project":"p1","spawn_timeout":"2h","spawn_max_lease":"48h"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	json.Unmarshal(out, &env)
	data, _ := env["data"].(map[string]any)
	if env["ok"] != true || data["spawn_max_lease"] != "48h0m0s" || backend.settings["p1"].SpawnMaxLease != 48*time.Hour {
		t.Fatalf("set_project with spawn_max_lease: %v, stored %v", env, backend.settings)
	}
}

// A reindex stops between pages once less than reindexSpare is left of
// its invocation (the context's deadline), or after reindexDefaultBudget
// without a deadline, so that it answers its cursor in time.
func TestAReindexStopsInTimeToAnswerItsCursor(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(60*time.Second))
	defer cancel()
	stop := reindexBudget(ctx, clock)
	if stop() {
		t.Fatal("stopped with 60 s left")
	}
	now = now.Add(60*time.Second - reindexSpare)
	if !stop() {
		t.Fatalf("did not stop with %v left", reindexSpare)
	}
	now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	free := reindexBudget(context.Background(), clock)
	now = now.Add(reindexDefaultBudget - time.Second)
	if free() {
		t.Fatal("stopped before its budget without a deadline")
	}
	now = now.Add(time.Second)
	if !free() {
		t.Fatal("did not stop at its budget without a deadline")
	}
}
