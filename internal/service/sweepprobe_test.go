package service_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// probed is the SQLite store with its sweep reads counted.
type probed struct {
	*sqlite.Store
	probes, expiring atomic.Int64
}

func (p *probed) AnythingDue(ctx context.Context, now time.Time) (bool, error) {
	p.probes.Add(1)
	return p.Store.AnythingDue(ctx, now)
}

func (p *probed) ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error) {
	p.expiring.Add(1)
	return p.Store.ExpiringSpawns(ctx, after, until, limit)
}

// A call's sweep-first on a store with nothing due is one probe; once a
// spawn is due the same call sweeps it before it runs.
func TestASweepFirstThatFindsNothingDueCostsOneProbe(t *testing.T) {
	e := newEnv(t)
	st := &probed{Store: e.store}
	svc := e.clock.service(st)
	svc.SpawnTimeout = time.Minute
	id, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(svc, "assume", map[string]any{"id": id.ID}); err != nil {
		t.Fatal(err)
	}
	st.probes.Store(0)
	st.expiring.Store(0)
	if _, err := call(svc, "list", nil); err != nil {
		t.Fatal(err)
	}
	if p, x := st.probes.Load(), st.expiring.Load(); p != 1 || x != 0 {
		t.Fatalf("nothing due: %d probes and %d reads of due spawns, want 1 and 0", p, x)
	}
	e.clock.Advance(time.Minute)
	if _, err := call(svc, "list", nil); err != nil {
		t.Fatal(err)
	}
	if x := st.expiring.Load(); x == 0 {
		t.Fatal("a due spawn was not read by the sweep-first")
	}
	if v, err := e.store.GetEntity(ctx, id.ID); err != nil || v.PendingSpawn != "" || v.Status != ledger.Unverified {
		t.Fatalf("the expired spawn was not timed out before the call: %+v %v", v, err)
	}
}
