package service_test

import (
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/tools"
)

func (e *env) cancel(svc *service.Service, requestID string) (service.CancelResult, tools.Output) {
	e.t.Helper()
	res, err := call(svc, "spawns.cancel", map[string]any{"request_id": requestID, "reason": "no longer needed"})
	if err != nil {
		e.t.Fatalf("cancel %s: %v", requestID, err)
	}
	return res.Data.(service.CancelResult), res
}

func TestCancellingAPendingSpawnRestoresThePreSpawnStatusLikeATimeout(t *testing.T) {
	for _, pre := range []ledger.Status{ledger.Verified, ledger.Doubted, ledger.Unverified} {
		t.Run(string(pre), func(t *testing.T) {
			e := newEnv(t)
			id := e.conclude("water boils at 100 C at sea level")
			switch pre {
			case ledger.Verified:
				e.transition(ledger.Verify, id, "")
			case ledger.Doubted:
				e.transition(ledger.Doubt, id, "")
			}
			req := e.spawnReq(spawn.Assume, id)
			r, _ := e.cancel(e.svc, req.RequestID)
			if !r.Applied || !r.Restored || r.Outcome != spawn.Cancelled || e.status(id) != pre {
				t.Fatalf("cancel: %+v, status %s, want %s", r, e.status(id), pre)
			}
			evs := e.events(id, ledger.EvSpawnCancelled)
			if len(evs) != 1 || evs[0].RequestID != req.RequestID || evs[0].Outcome != string(spawn.Cancelled) || evs[0].Reason != "no longer needed" {
				t.Fatalf("spawn_cancelled events: %+v", evs)
			}
			sp, _ := e.store.GetSpawn(ctx, req.RequestID)
			if sp.State != spawn.Resolved || sp.Outcome != spawn.Cancelled {
				t.Fatalf("spawn %+v", sp)
			}
			if ent, _ := e.store.GetEntity(ctx, id); ent.PendingSpawn != "" {
				t.Fatal("the entity still names the cancelled spawn as pending")
			}
			// Cancelled is terminal: the callback changes nothing, the sweep never touches it.
			res := e.transition(ledger.Verify, id, req.RequestID)
			if !hasWarning(res, "spawn-duplicate") || e.status(id) != pre {
				t.Fatalf("late callback after cancel: %v, status %s", warningCodes(res), e.status(id))
			}
			e.clock.Advance(2 * time.Hour)
			call(e.svc, "list", nil)
			if len(e.events(id, ledger.EvSpawnTimeout)) != 0 {
				t.Fatal("a cancelled spawn timed out as well")
			}
		})
	}
}

func TestCancelLeavesAMovedEntityAlone(t *testing.T) {
	e := newEnv(t)
	id, dep := e.verifiedDependent()
	req := e.spawnReq(spawn.Assume, id)
	e.transition(ledger.Doubt, dep, "") // its dependency is doubted meanwhile: it goes stale
	r, _ := e.cancel(e.svc, req.RequestID)
	if !r.Applied || r.Restored || e.status(id) != ledger.Stale {
		t.Fatalf("cancel overwrote a newer status: %+v, status %s", r, e.status(id))
	}
}

func TestCancelAfterAnotherResolverChangesNothing(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour)
	call(e.svc, "list", nil) // the sweep resolves it by timeout
	before := len(e.events(id, ledger.EvSpawnCancelled))
	r, res := e.cancel(e.svc, req.RequestID)
	if r.Applied || r.Outcome != spawn.TimeoutRestored || !hasWarning(res, "spawn-lost-to-timeout") || len(e.events(id, ledger.EvSpawnCancelled)) != before {
		t.Fatalf("cancel after timeout: %+v %v", r, warningCodes(res))
	}
	if _, _, err := e.svc.Spawns.Cancel(ctx, "spawn:01HX05A9K8VP0000000000000A", "", nil); !errs.Is(err, errs.SpawnNotFound) {
		t.Fatalf("unknown spawn: %v", err)
	}
}

// Cancel is one more terminal resolver: racing a callback and the sweep
// from separate connections, exactly one of them commits.
func TestCancelCallbackAndTimeoutRaceYieldsOneResolution(t *testing.T) {
	for round := 0; round < 5; round++ {
		e := newEnv(t)
		id := e.verified("water boils at 100 C at sea level")
		req := e.spawnReq(spawn.Assume, id)
		e.clock.Advance(2 * time.Hour) // due, so the sweep competes too
		a, b, c := e.another(), e.another(), e.another()
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); a.Spawns.Cancel(ctx, req.RequestID, "race", nil) }()
		go func() { defer wg.Done(); b.Spawns.Resolve(ctx, callbackInput(ledger.Doubt, id, req.RequestID)) }()
		go func() { defer wg.Done(); c.Sweep(ctx, 10) }()
		wg.Wait()
		resolutions := len(e.events(id, ledger.EvSpawnCancelled)) + len(e.events(id, ledger.EvSpawnTimeout)) + len(e.events(id, ledger.EvSpawnResolved))
		if resolutions != 1 {
			t.Fatalf("round %d: %d resolutions, want exactly 1", round, resolutions)
		}
	}
}

func TestCancellingAGuessSpawn(t *testing.T) {
	e := newEnv(t)
	if _, err := call(e.svc, "guess", map[string]any{"question": "boiling point at 2000 m?", "n": 2, "mode": string(spawn.ModeHarness)}); err != nil {
		t.Fatal(err)
	}
	sps, _ := e.store.ListSpawns(ctx, store.SpawnFilter{})
	r, _ := e.cancel(e.svc, sps[0].ID)
	if !r.Applied || r.Restored || r.EntityID != "" {
		t.Fatalf("%+v", r)
	}
	if _, err := call(e.svc, "answer", map[string]any{"request_id": sps[0].ID, "candidate": []string{"93 C"}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := call(e.svc, "list", nil); l.Data.(service.EntityList).Count != 0 {
		t.Fatal("an answer to a cancelled guess concluded a claim")
	}
}
