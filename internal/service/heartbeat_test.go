package service_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
)

func (e *env) heartbeat(svc *service.Service, requestID, extend string) (service.HeartbeatResult, tools.Output) {
	e.t.Helper()
	a := map[string]any{"request_id": requestID}
	if extend != "" {
		a["extend"] = extend
	}
	res, err := call(svc, "spawns.heartbeat", a)
	if err != nil {
		e.t.Fatalf("heartbeat %s: %v", requestID, err)
	}
	return res.Data.(service.HeartbeatResult), res
}

func TestAHeartbeatMovesTheExpiryForwardAndIsRecorded(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id) // expires in 1h
	e.clock.Advance(50 * time.Minute)
	r, res := e.heartbeat(e.svc, req.RequestID, "30m")
	want := e.clock.Now().Add(30 * time.Minute)
	if !r.Moved || !r.ExpiresAt.Equal(want) || !r.Previous.Equal(req.ExpiresAt) || len(res.Warnings) != 0 {
		t.Fatalf("heartbeat: %+v, warnings %v", r, warningCodes(res))
	}
	sp, _ := e.store.GetSpawn(ctx, req.RequestID)
	if !sp.ExpiresAt.Equal(want) || sp.State != spawn.Pending {
		t.Fatalf("stored spawn %+v", sp)
	}
	var payload spawn.Request
	if err := json.Unmarshal(sp.Request, &payload); err != nil || !payload.ExpiresAt.Equal(want) {
		t.Fatalf("the stored payload's expires_at did not follow: %v %v", payload.ExpiresAt, err)
	}
	evs := e.events(id, ledger.EvSpawnHeartbeat)
	if len(evs) != 1 || evs[0].RequestID != req.RequestID {
		t.Fatalf("spawn_heartbeat events %+v", evs)
	}
	// Past the original expiry, the spawn is still pending; the subagent's callback applies.
	e.clock.Advance(20 * time.Minute)
	call(e.svc, "list", nil)
	if sp, _ := e.store.GetSpawn(ctx, req.RequestID); sp.State != spawn.Pending {
		t.Fatalf("timed out at the original expiry despite the heartbeat: %+v", sp)
	}
	res = e.transition(ledger.Verify, id, req.RequestID)
	if len(res.Warnings) != 0 || e.status(id) != ledger.Verified {
		t.Fatalf("callback after a heartbeat: %v, status %s", warningCodes(res), e.status(id))
	}
}

func TestAHeartbeatNeverMovesTheExpiryBackwards(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	r, _ := e.heartbeat(e.svc, req.RequestID, "1m")
	if r.Moved || !r.ExpiresAt.Equal(req.ExpiresAt) {
		t.Fatalf("a shorter heartbeat moved the expiry: %+v", r)
	}
	if len(e.events(id, ledger.EvSpawnHeartbeat)) != 0 {
		t.Fatal("a heartbeat that moved nothing was recorded")
	}
}

func TestAHeartbeatBeyondTheMaxLeaseIsCappedWithAWarning(t *testing.T) {
	e := newEnv(t)
	e.svc.SpawnMaxLease = 3 * time.Hour
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	r, res := e.heartbeat(e.svc, req.RequestID, "10h")
	lease := req.IssuedAt.Add(3 * time.Hour)
	if !r.Moved || !r.Capped || !r.ExpiresAt.Equal(lease) || !r.LeaseEndsAt.Equal(lease) || !hasWarning(res, "spawn-lease-capped") {
		t.Fatalf("capped heartbeat: %+v, warnings %v", r, warningCodes(res))
	}
	r, res = e.heartbeat(e.svc, req.RequestID, "10h")
	if r.Moved || !hasWarning(res, "spawn-lease-capped") {
		t.Fatalf("a heartbeat at the lease moved: %+v", r)
	}
}

func TestAHeartbeatAfterTheTimeoutChangesNothingAndWarns(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour) // expired, not yet swept: the heartbeat's own sweep times it out first
	r, res := e.heartbeat(e.svc, req.RequestID, "30m")
	if r.Moved || r.State != spawn.Resolved || r.Outcome != spawn.TimeoutRestored || !hasWarning(res, "spawn-heartbeat-late") {
		t.Fatalf("heartbeat after expiry: %+v, warnings %v", r, warningCodes(res))
	}
	if len(e.events(id, ledger.EvSpawnTimeout)) != 1 || len(e.events(id, ledger.EvSpawnHeartbeat)) != 0 || e.status(id) != ledger.Verified {
		t.Fatal("the late heartbeat changed the record")
	}
}

func TestAHeartbeatOfAnExpiredSpawnTimesItOutFirstEvenWithoutTheSweep(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour)
	r, w, err := e.svc.Spawns.Heartbeat(ctx, req.RequestID, time.Hour, nil)
	if err != nil || r.Moved || r.Outcome != spawn.TimeoutRestored || len(w) != 1 || w[0].Code != "spawn-heartbeat-late" {
		t.Fatalf("heartbeat of an expired spawn: %+v %v %v", r, w, err)
	}
}

func TestAHeartbeatAfterTheCallbackChangesNothingAndWarns(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.transition(ledger.Verify, id, req.RequestID)
	r, res := e.heartbeat(e.svc, req.RequestID, "30m")
	if r.Moved || r.Outcome != spawn.CallbackApplied || !hasWarning(res, "spawn-heartbeat-late") {
		t.Fatalf("heartbeat after the callback: %+v, warnings %v", r, warningCodes(res))
	}
}

func TestAHeartbeatKeepsATimeoutRestoringThePreSpawnStatus(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.heartbeat(e.svc, req.RequestID, "90m")
	e.clock.Advance(2 * time.Hour)
	call(e.svc, "sweep", nil)
	if e.status(id) != ledger.Verified {
		t.Fatalf("the timeout after a heartbeat did not restore: %s", e.status(id))
	}
}

func TestAHeartbeatOfAGuessMovesItsExpiry(t *testing.T) {
	e := newEnv(t)
	res, err := call(e.svc, "guess", map[string]any{"question": "which port?", "n": 2, "mode": string(spawn.ModeHarness)})
	if err != nil {
		t.Fatal(err)
	}
	var req spawn.Request
	json.Unmarshal(res.Data.(json.RawMessage), &req)
	e.clock.Advance(50 * time.Minute)
	r, _ := e.heartbeat(e.svc, req.RequestID, "30m")
	e.clock.Advance(20 * time.Minute)
	call(e.svc, "sweep", nil)
	if sp, _ := e.store.GetSpawn(ctx, req.RequestID); !r.Moved || sp.State != spawn.Pending {
		t.Fatalf("guess heartbeat: %+v, spawn %+v", r, sp)
	}
}

func TestHeartbeatTimeoutAndCallbackRaceYieldsOneResolution(t *testing.T) {
	for round := 0; round < 10; round++ {
		e := newEnv(t)
		id := e.verified("water boils at 100 C at sea level")
		req := e.spawnReq(spawn.Assume, id)
		e.clock.Advance(time.Hour) // due exactly now: the sweep and the heartbeat race, and the callback
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, f := range []func(*service.Service){
			func(s *service.Service) {
				call(s, "spawns.heartbeat", map[string]any{"request_id": req.RequestID, "extend": "1h"})
			},
			func(s *service.Service) { call(s, "sweep", nil) },
			func(s *service.Service) { call(s, "dismiss", callbackArgs(ledger.Verify, id, req.RequestID)) },
		} {
			wg.Add(1)
			s := e.another()
			go func() { defer wg.Done(); <-start; f(s) }()
		}
		close(start)
		wg.Wait()
		sp, _ := e.store.GetSpawn(ctx, req.RequestID)
		ends := len(e.events(id, ledger.EvSpawnTimeout)) + len(e.events(id, ledger.EvSpawnResolved))
		if sp.State != spawn.Resolved || ends != 1 {
			t.Fatalf("round %d: spawn %+v, %d terminal events", round, sp, ends)
		}
	}
}
