package service_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
)

// Under dont serve a request remembers its reads (internal/readmemo): the
// check of a callback token's powers and the callback read the spawn once.
// A resolver that commits in between (another process) must still win
// alone: the callback's commit fails its condition, it reads again and
// answers that the spawn was already resolved, changing nothing.
func TestACallbackWhoseCheckReadTheSpawnBeforeAnotherResolverCommittedLosesCleanly(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C")
	req := e.spawnReq(spawn.Assume, id)
	request := readmemo.With(ctx)
	args := callbackArgs(ledger.Verify, id, req.RequestID)
	p := auth.Principal{Role: auth.RoleCallback, RequestID: req.RequestID}
	if err := e.svc.Credentials.CheckCallback(request, p, string(ledger.Verify), args); err != nil {
		t.Fatal(err)
	}
	if _, err := call(e.another(), string(ledger.Verify), callbackArgs(ledger.Verify, id, req.RequestID)); err != nil {
		t.Fatal(err)
	}
	before, err := e.store.GetEntity(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tools.Call(request, e.svc, string(ledger.Verify), args)
	if err != nil {
		t.Fatalf("the late callback failed instead of losing: %v", err)
	}
	if len(res.Warnings) == 0 {
		t.Fatalf("the late callback answered as if it had applied: %+v", res)
	}
	after, err := e.store.GetEntity(ctx, id)
	if err != nil || after.Version != before.Version {
		t.Fatalf("the late callback changed the entity: version %d -> %d (%v)", before.Version, after.Version, err)
	}
}
