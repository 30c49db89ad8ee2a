package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// inTheWindow runs other's write between a's COMMIT and what a does after
// it (afterBatch): the moment another process's writer, waiting for the
// lock, gets it. a's next Commit signals from inside its transaction; the
// checkpoint it is made to wait for after its COMMIT holds it there until
// other's write has returned. No sleeps: other's BEGIN waits for a's
// COMMIT, and a waits for other.
func inTheWindow(t *testing.T, a *Store, aWrite func() error, other func()) {
	t.Helper()
	inTx := make(chan struct{})
	var once sync.Once
	a.Hooks.BeforeCommit = func(context.Context) error { once.Do(func() { close(inTx) }); return nil }
	a.tailWanted.Store(true) // the commit's end waits for the checkpoint below
	a.checkpoints.Add(1)
	done := make(chan error, 1)
	go func() { done <- aWrite() }()
	<-inTx
	other()
	a.checkpoints.Done()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a.Hooks.BeforeCommit = nil
}

func twoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dont.db")
	a, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// What a Store knows is never taken as true of a database another
// process has committed to, even when that commit lands between this
// Store's COMMIT and its reading of data_version again: its next reads see
// the other's entity and its probe the other's expired spawn.
func TestAnotherProcessesCommitWhileAStoreEndsItsOwnIsSeenByItsNextRead(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	now := time.Now().UTC()
	x := ledger.Entity{ID: "claim:x", Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: now, UpdatedAt: now, Version: 1}
	if err := a.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: x}}}); err != nil {
		t.Fatal(err)
	}
	if due, err := a.AnythingDue(ctx, now); err != nil || due {
		t.Fatal(due, err)
	}
	y := x
	y.ID = "claim:y"
	inTheWindow(t, a, func() error { return a.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: y}}}) }, func() {
		x2 := x
		x2.Status, x2.Version = ledger.Verified, 2
		late := spawn.Spawn{ID: "spawn:late", Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness, Question: "q", N: 1,
			IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Second), Request: []byte("{}")}
		if err := b.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: x2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: late, Create: true}}}); err != nil {
			t.Fatal(err)
		}
	})
	if got, err := a.GetEntity(ctx, x.ID); err != nil || got.Version != 2 {
		t.Errorf("after the other's commit a reads %+v, %v; want version 2", got, err)
	}
	if due, err := a.AnythingDue(ctx, now); err != nil || !due {
		t.Errorf("a's probe misses the other's expired spawn: due %v, %v", due, err)
	}
}

// A hook another process adds in that same moment hears every event this
// Store commits after it.
func TestAHookAnotherProcessAddsWhileAStoreEndsItsCommitHearsItsLaterEvents(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	now := time.Now().UTC()
	ev := func(id string) ledger.Event {
		return ledger.Event{ID: id, Kind: ledger.EvSpawnRequested, RequestID: "spawn:" + id, At: now}
	}
	if err := a.Commit(ctx, store.Tx{Events: []ledger.Event{ev("e1")}}); err != nil { // a knows there is no hook
		t.Fatal(err)
	}
	inTheWindow(t, a, func() error { return a.Commit(ctx, store.Tx{Events: []ledger.Event{ev("e2")}}) }, func() {
		if err := b.PutHook(ctx, hooks.Hook{ID: "hook:1", URL: "https://example.org/h", Events: []hooks.EventType{hooks.SpawnRequested},
			Format: hooks.FormatJSON, CreatedAt: now, Secret: "whsec_x"}); err != nil {
			t.Fatal(err)
		}
	})
	for _, id := range []string{"e3", "e4", "e5"} {
		if err := a.Commit(ctx, store.Tx{Events: []ledger.Event{ev(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := a.db.QueryRow("SELECT count(*) FROM hook_deliveries WHERE hook_id = 'hook:1'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("hook:1 has %d deliveries of the 3 events committed after it was added", n)
	}
}

// A spawn read through what a Store knows is the reader's own: changing
// its request changes nothing the Store answers later.
func TestASpawnReadIsTheReadersOwnCopy(t *testing.T) {
	ctx := context.Background()
	a, _ := twoStores(t)
	now := time.Now().UTC()
	sp := spawn.Spawn{ID: "spawn:s", Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness, Question: "q", N: 1,
		IssuedAt: now, ExpiresAt: now.Add(time.Hour), Request: []byte(`{"a":1}`)}
	if err := a.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sp, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	sp.Request[5] = '7' // the writer's slice
	for range 2 {
		got, err := a.GetSpawn(ctx, sp.ID)
		if err != nil || string(got.Request) != `{"a":1}` {
			t.Fatalf("read %s, %v; want the request as committed", got.Request, err)
		}
		got.Request[5] = '9' // the reader's
	}
}
