package dynamo_test

import (
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// Many resolvers of one spawn, callbacks and sweeps at once, after its
// expiry: exactly one commits; every other is told who won.
func TestTimeoutAndCallbackRaceYieldsOneStatusMutation(t *testing.T) {
	s := newStore(t)
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Clock: func() time.Time { return now }})
	res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "exactly one resolver"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.ID
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatal(err)
	}
	var req spawn.Request
	json.Unmarshal(r.Request, &req)

	late := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Clock: func() time.Time { return now.Add(2 * time.Hour) }})
	const n = 16
	var applied, timedOut atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				out, _, err := late.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id,
					Evidence: []string{"https://example.org/e"}, RequestID: req.RequestID})
				if err != nil {
					t.Error(err)
					return
				}
				if v := out; v.Resolution != nil && v.Resolution.Applied {
					applied.Add(1)
				}
				return
			}
			rep, err := late.Sweep(ctx, 10)
			if err != nil {
				t.Error(err)
				return
			}
			timedOut.Add(int32(len(rep.TimedOut)))
		}()
	}
	wg.Wait()
	if applied.Load()+timedOut.Load() != 1 {
		t.Fatalf("%d callbacks applied and %d timeouts committed, want exactly one resolver", applied.Load(), timedOut.Load())
	}
	evs, err := s.Events(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	terminal := 0
	for _, ev := range evs {
		if ev.Kind == ledger.EvSpawnResolved || ev.Kind == ledger.EvSpawnTimeout {
			terminal++
		}
	}
	if terminal != 1 {
		t.Fatalf("%d terminal events in the history, want 1", terminal)
	}
	if got, _ := s.GetSpawn(ctx, req.RequestID); got.State != spawn.Resolved {
		t.Fatalf("spawn is %s", got.State)
	}
	if due, _ := s.ExpiringSpawns(ctx, time.Time{}, now.Add(3*time.Hour), 10); len(due) != 0 {
		t.Fatalf("a resolved spawn is still in the pending index: %v", due)
	}
}
