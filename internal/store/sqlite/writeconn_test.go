package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// requested commits a new claim with a spawn_requested event, which a
// hook on spawn.requested hears.
func requested(t testing.TB, s *sqlite.Store, statement string) {
	t.Helper()
	if err := s.Commit(ctx, requestedTx(statement)); err != nil {
		t.Fatal(err)
	}
}

func requestedTx(statement string) store.Tx {
	at := time.Now().UTC()
	e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: statement, Status: ledger.Unverified, CreatedAt: at, UpdatedAt: at, Version: 1}
	ev := ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: ids.New(ids.Spawn, at), At: at}
	return store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}
}

func deliveries(t *testing.T, s *sqlite.Store, hookID string) int {
	t.Helper()
	pg, err := s.Deliveries(ctx, hookID, store.DeliveryFilter{Deliveries: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(pg.Deliveries)
}

func newHook(at time.Time) hooks.Hook {
	return hooks.Hook{ID: ids.New(ids.Hook, at), URL: "https://hooks.example.com/", Events: []hooks.EventType{hooks.SpawnRequested},
		Format: hooks.FormatJSON, CreatedAt: at, Secret: "whsec_AAAA"}
}

// Statements stay prepared on the write connection across transactions,
// yet a hook added by another process (another connection to the file)
// is heard by this store's very next event, and one removed there is no
// longer delivered to.
func TestAHookAddedOrRemovedByAnotherProcessIsSeenByTheNextEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	a := newStore2(t, path)
	b := openStore(t, path)
	requested(t, a, "before any hook") // a reads the (empty) hooks and remembers them
	requested(t, a, "still none")
	h := newHook(time.Now().UTC())
	if err := b.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	requested(t, a, "after the hook")
	if n := deliveries(t, b, h.ID); n != 1 {
		t.Fatalf("deliveries to the hook another process added: %d, want 1", n)
	}
	if err := b.RemoveHook(ctx, h.ID, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	requested(t, a, "after the removal")
	if n := deliveries(t, b, h.ID); n != 1 {
		t.Fatalf("deliveries after the hook was removed elsewhere: %d, want still 1", n)
	}
}

// The store's own hook writes are seen by its next event too.
func TestAHookThisStoreAddsIsHeardByItsNextEvent(t *testing.T) {
	s := newStore(t)
	requested(t, s, "before any hook")
	h := newHook(time.Now().UTC())
	if err := s.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	requested(t, s, "after the hook")
	if n := deliveries(t, s, h.ID); n != 1 {
		t.Fatalf("deliveries: %d, want 1", n)
	}
	if err := s.RemoveHook(ctx, h.ID, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	requested(t, s, "after the removal")
	if n := deliveries(t, s, h.ID); n != 1 {
		t.Fatalf("deliveries after the removal: %d, want still 1", n)
	}
}

func newStore2(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Commits never checkpoint inside the write lock, yet the WAL stays
// bounded: a long-lived store checkpoints in the background as it
// commits, even while another process has the file open (so that closing
// is never the last connection's checkpoint).
func TestALongLivedWriterKeepsTheWALBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	s := newStore2(t, path)
	other := openStore(t, path)
	if _, err := other.GetEntity(ctx, "claim:none"); err == nil {
		t.Fatal("found a claim in a new store")
	}
	big := strings.Repeat("x", 8<<10) // ~12 frames a commit
	restarts, last := 0, 0
	for i := 0; i < 2000; i++ {
		requested(t, s, big)
		length, _ := s.WALFrames()
		if length < last {
			restarts++
		}
		last = length
	}
	// 2000 commits of ~12 frames would be ~100 MiB of WAL unchecked; past
	// 4096 frames (~17 MiB) a commit checkpoints at once.
	if n := walSize(t, path); n > 20<<20 || restarts < 5 {
		t.Fatalf("WAL after 2000 commits: %d bytes, started over %d times; want at most 20 MiB, 5 times", n, restarts)
	}
}

// Short-lived processes (each opens, writes a little, closes) sharing the
// file with a long-lived one that does not write do not grow the WAL
// without bound: Close checkpoints a WAL grown large.
func TestShortLivedWritersDoNotGrowTheWALForever(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	newStore2(t, path)
	long := openStore(t, path) // holds the file open: no closing checkpoint
	if _, err := long.GetEntity(ctx, "claim:none"); err == nil {
		t.Fatal("found a claim in a new store")
	}
	big := strings.Repeat("x", 64<<10)
	for run := 0; run < 30; run++ {
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ { // ~700 KiB a run, under one background checkpoint's worth
			requested(t, s, big)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// 30 runs of ~1 MiB would be ~30 MiB unchecked; Close checkpoints a
	// WAL past 1000 frames and the next writer starts it over.
	if n := walSize(t, path); n > 16<<20 {
		t.Fatalf("WAL after 30 short runs: %d bytes, want at most 16 MiB", n)
	}
}

// Writers on one store from many goroutines, with background checkpoints
// running, all commit (run with -race).
func TestConcurrentWritersWithBackgroundCheckpoints(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if err := s.Commit(ctx, requestedTx("x")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	all, err := s.ListEntities(ctx, store.EntityFilter{})
	if err != nil || len(all) != 400 {
		t.Fatalf("entities: %d, %v; want 400", len(all), err)
	}
}
