package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// secretCount counts the project secrets made through it.
type secretCount struct {
	*sqlite.Store
	made int
}

func (s *secretCount) CreateProjectSecret(ctx context.Context) ([]byte, error) {
	s.made++
	return s.Store.CreateProjectSecret(ctx)
}

func TestAnOperatorTokenDefaultsToAnAdminAndMakesTheProjectsSecret(t *testing.T) {
	e := newEnv(t)
	counted := &secretCount{Store: e.store}
	e.svc.Tokens = counted
	for _, role := range []string{"root", auth.RoleCallback} {
		_, err := e.svc.Credentials.CreateOperatorToken(ctx, service.OperatorTokenInput{Role: role})
		if !errs.Is(err, errs.InvalidArgument) || len(present.Explain(err).Remediation) == 0 {
			t.Fatalf("role %q: %v, want invalid-argument with remediation", role, err)
		}
	}
	if list, _ := e.store.ListTokens(ctx); len(list) != 0 || counted.made != 0 {
		t.Fatalf("a refused role wrote %d tokens and made the secret %d times", len(list), counted.made)
	}

	tok, err := e.svc.Credentials.CreateOperatorToken(ctx, service.OperatorTokenInput{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Role != auth.RoleAdmin || tok.Name != service.DefaultOperatorTokenName || tok.Secret == "" || counted.made != 1 {
		t.Fatalf("token %+v, secret made %d times: want an admin named %q, shown once, and the secret", tok, counted.made, service.DefaultOperatorTokenName)
	}
	secret, err := e.store.ProjectSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.svc.Credentials.CreateOperatorToken(ctx, service.OperatorTokenInput{Role: auth.RoleHarness, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if tok := second; tok.Role != auth.RoleHarness || tok.Name != "ci" {
		t.Fatalf("token %+v, want the harness token named ci", tok)
	}
	if again, _ := e.store.ProjectSecret(ctx); string(again) != string(secret) {
		t.Fatal("a second operator token replaced the project's secret")
	}
	if p, err := e.svc.Credentials.Authenticate(ctx, tok.Secret); err != nil || p.Role != auth.RoleAdmin {
		t.Fatalf("the operator's token: %+v %v", p, err)
	}
}

// settingsStore keeps one project's settings in memory.
type settingsStore struct {
	ps   store.ProjectSettings
	puts int
}

func (s *settingsStore) Settings(context.Context) (store.ProjectSettings, error) { return s.ps, nil }

func (s *settingsStore) PutSettings(_ context.Context, ps store.ProjectSettings) error {
	s.ps, s.puts = ps, s.puts+1
	return nil
}

// The operator's spawn timeout follows the rule of spawn_timeout and
// DONT_SPAWN_TIMEOUT (internal/settings): a positive duration up to 720h.
func TestAProjectsSpawnTimeoutIsHeldToTheOneRule(t *testing.T) {
	st := &settingsStore{}
	svc := service.New(service.Deps{Settings: st})
	for _, bad := range []string{"", "soon", "0s", "-1s", "721h", "1000h"} {
		_, err := svc.SetProjectSettings(ctx, service.ProjectSettingsInput{SpawnTimeout: bad})
		if e := present.Explain(err); e.Code != errs.InvalidArgument || len(e.Remediation) == 0 || len(e.UnmetClauses) == 0 {
			t.Fatalf("%q: %v, want invalid-argument with the unmet clause and remediation", bad, err)
		}
	}
	if st.puts != 0 {
		t.Fatalf("bad values stored %d times", st.puts)
	}
	for _, good := range []struct {
		v    string
		want time.Duration
	}{{"90m", 90 * time.Minute}, {"720h", 720 * time.Hour}, {"500ms", 500 * time.Millisecond}} {
		res, err := svc.SetProjectSettings(ctx, service.ProjectSettingsInput{SpawnTimeout: good.v})
		if err != nil || st.ps.SpawnTimeout != good.want || res.SpawnTimeout != good.want.String() {
			t.Fatalf("%q: %+v %v, stored %v", good.v, res, err, st.ps)
		}
	}
	if _, err := service.New(service.Deps{}).SetProjectSettings(ctx, service.ProjectSettingsInput{SpawnTimeout: "2h"}); !errs.Is(err, service.SettingsUnavailable) {
		t.Fatalf("a store without project settings: %v", err)
	}
}
