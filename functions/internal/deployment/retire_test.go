package deployment_test

import (
	"github.com/dont-cli/dont/internal/tools"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// Retiring a project's old secret versions waits out the project's
// longest spawn lease from the rotation that replaced them, refusing
// before then (a conflict with the time to retry, nothing removed); once
// retired, a callback token of that version is refused by the API.
func TestRetiringOldSecretVersionsWaitsOutTheLeaseAndTheirTokensAreThenRefused(t *testing.T) {
	needServer(t)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	const lease = 2 * time.Hour
	backend := deployment.NewBackend(newClient(nil, nil), table, func(st *dynamo.Store) *service.Service {
		st.SetSecretClock(clock)
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour,
			SpawnMaxLease: lease, Author: "api", Clock: clock})
	})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Backend: backend, RatePerSecond: -1}))
	t.Cleanup(srv.Close)
	a := &api{t: t, srv: srv, backend: backend}
	project := "retire-" + randomName()
	svc := backend.Project(project).Service

	if _, err := deployment.RetireSecrets(ctx, svc, clock()); errs.As(err).Code != errs.NotFound {
		t.Fatalf("a project without a secret: %v", err)
	}
	harness := a.token(project, auth.RoleHarness)
	claim, rid, oldToken := a.claimUnderReview(harness, "water boils at 100 C at sea level")
	if auth.CallbackKeyID(oldToken) != "1" {
		t.Fatalf("the first token names version %q", auth.CallbackKeyID(oldToken))
	}
	if rep, err := deployment.RetireSecrets(ctx, svc, clock()); err != nil || len(rep.Retired) != 0 || len(rep.Kept) != 0 || rep.KeyID != "1" {
		t.Fatalf("nothing older than the current version: %+v %v", rep, err)
	}
	if _, err := svc.Credentials.RotateProjectSecret(ctx); err != nil {
		t.Fatal(err)
	}
	rotated := clock()

	now.Add(int64(lease - time.Minute))
	rep, err := deployment.RetireSecrets(ctx, svc, clock())
	e := errs.As(err)
	if e.Code != errs.Conflict || len(e.Remediation) == 0 || !slices.Contains(e.UnmetClauses, "retirable_at "+rotated.Add(lease+time.Minute).Format(time.RFC3339)) {
		t.Fatalf("retiring before the lease is out: %+v", e)
	}
	if len(rep.Kept) != 1 || rep.Kept[0].KeyID != "1" || !rep.Kept[0].RetirableAt.Equal(rotated.Add(lease+time.Minute)) {
		t.Fatalf("kept: %+v", rep.Kept)
	}
	st := dynamo.New(newClient(nil, nil), table, project)
	if vs, _ := st.SecretVersions(ctx); len(vs) != 2 {
		t.Fatalf("a refused retirement removed a version: %+v", vs)
	}
	// Until retired, the old token still resolves its spawn.
	if r := a.call(oldToken, "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/its-90"}, "request_id": rid}); r.status != 200 {
		t.Fatalf("the old token before retiring: %d %v", r.status, r.env.Data)
	}

	now.Add(int64(time.Minute)) // the lease is out, the minute after it not yet
	if _, err := deployment.RetireSecrets(ctx, svc, clock()); errs.As(err).Code != errs.Conflict {
		t.Fatalf("retiring at the lease's end, before the warm instances' minute: %v", err)
	}
	now.Add(int64(time.Minute))
	rep, err = deployment.RetireSecrets(ctx, svc, clock())
	if err != nil || len(rep.Retired) != 1 || rep.Retired[0] != "1" || rep.KeyID != "2" || len(rep.Kept) != 0 {
		t.Fatalf("retiring once the lease is out: %+v %v", rep, err)
	}
	if vs, _ := st.SecretVersions(ctx); len(vs) != 1 || vs[0].KeyID != "2" {
		t.Fatalf("versions after retiring: %+v", vs)
	}
	t.Run("a callback token of a retired version is refused by the API", func(t *testing.T) {
		r := a.call(oldToken, "show", map[string]any{"id": claim})
		if r.status != 401 || r.str("code") != string(service.Unauthenticated) {
			t.Fatalf("the retired version's token: %d %v", r.status, r.env.Data)
		}
	})
	t.Run("tokens of the current version keep working", func(t *testing.T) {
		claim2, _, newToken := a.claimUnderReview(harness, "ice melts at 0 C")
		if auth.CallbackKeyID(newToken) != "2" {
			t.Fatalf("a new token names version %q", auth.CallbackKeyID(newToken))
		}
		if r := a.call(newToken, "show", map[string]any{"id": claim2}); r.status != 200 {
			t.Fatalf("the current version's token: %d %v", r.status, r.env.Data)
		}
	})
}

// The wait is at least the minute a warm function instance keeps the
// version it read as current, whatever the project's lease.
func TestRetiringWaitsAtLeastAMinuteAfterTheRotation(t *testing.T) {
	needServer(t)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	backend := deployment.NewBackend(newClient(nil, nil), table, func(st *dynamo.Store) *service.Service {
		st.SetSecretClock(clock)
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Second,
			SpawnMaxLease: time.Second, Author: "api", Clock: clock})
	})
	project := "retire-" + randomName()
	svc := backend.Project(project).Service
	if _, err := svc.Credentials.CreateOperatorToken(ctx, service.OperatorTokenInput{Role: auth.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Credentials.RotateProjectSecret(ctx); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(30 * time.Second))
	if _, err := deployment.RetireSecrets(ctx, svc, clock()); errs.As(err).Code != errs.Conflict {
		t.Fatalf("30 s after the rotation with a 1 s lease: %v", err)
	}
	now.Add(int64(30 * time.Second))
	if _, err := deployment.RetireSecrets(ctx, svc, clock()); errs.As(err).Code != errs.Conflict {
		t.Fatalf("a minute after the rotation with a 1 s lease: %v", err)
	}
	now.Add(int64(time.Second))
	if rep, err := deployment.RetireSecrets(ctx, svc, clock()); err != nil || len(rep.Retired) != 1 || rep.Wait != "1m1s" {
		t.Fatalf("a minute after: %+v %v", rep, err)
	}
}
