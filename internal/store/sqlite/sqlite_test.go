package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/store/sqlite/sqlitetest"
	"github.com/dont-cli/dont/internal/storetest"
	"github.com/dont-cli/dont/internal/tools"
)

var ctx = context.Background()

// newStore opens a new store: a copy of an empty one (sqlitetest.Fresh);
// the tests that call Create themselves test it.
func newStore(t testing.TB) *sqlite.Store {
	t.Helper()
	s := sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "dont.db"))
	t.Cleanup(func() { s.Close() })
	return s
}

// createdStore is a new store made by sqlite.Create, whose first uses
// still probe for the schema's later parts (a copy's Open reads the
// version and skips the probes): for the tests that drop a part.
func createdStore(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

// The spawn protocol's scenario files, through the service's executor on
// a SQLite file.
func TestSpawnScenarios(t *testing.T) {
	storetest.RunSpawnScenarios(t, func(t *testing.T) store.Store { return newStore(t) })
}

// The sweep reads only due rows: a range search on the partial index over
// pending expiries, so its cost grows with the number expired.
func TestSweepFindsDueSpawnsThroughTheExpiryIndex(t *testing.T) {
	s := newStore(t)
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+sqlite.DueQuery, "0001-01-01T00:00:00.000000000Z", "2026-01-01T00:00:00.000000000Z", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "SEARCH spawns USING INDEX spawns_due (expires_at>? AND expires_at<?)") {
		t.Fatalf("due-spawn query plan = %q, want a range search on spawns_due", plan)
	}
}

func TestPathsWithURIMetacharactersOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a%20b?c#d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Create(context.Background(), filepath.Join(dir, "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "dont.db")); err != nil {
		t.Fatalf("database not created at the literal path: %v", err)
	}
}

// legacyDB is a database made before the CURIE key, holding what racing
// defines could leave then: two terms of ex:Widget (the older first), one
// of ex:Gadget and a claim, each with its defining event.
func legacyDB(t *testing.T) (path string, older, newer, gadget ledger.Entity) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "dont.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.DB().Exec("PRAGMA journal_mode=WAL;" + sqlite.V1Schema + "PRAGMA user_version=1;"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newTerm := func(curie string, at time.Time) ledger.Entity {
		return ledger.Entity{ID: ids.New(ids.Term, at), Kind: ledger.KindTerm, Curie: curie, Definition: "defined before the key",
			Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
	}
	older, newer, gadget = newTerm("ex:Widget", at), newTerm("ex:Widget", at.Add(time.Millisecond)), newTerm("ex:Gadget", at)
	c := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: "a claim", Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
	for _, e := range []ledger.Entity{newer, c, gadget, older} { // insertion order is not age
		doc, _ := json.Marshal(e)
		ev, _ := json.Marshal(ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvDefined, EntityID: e.ID, At: at})
		if _, err := s.DB().Exec("INSERT INTO entities(id, kind, status, version, doc) VALUES(?,?,?,?,?)", e.ID, e.Kind, e.Status, e.Version, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB().Exec("INSERT INTO events(id, entity_id, kind, doc) VALUES(?,?,?,?)", ids.New(ids.Event, at), e.ID, ledger.EvDefined, ev); err != nil {
			t.Fatal(err)
		}
	}
	return path, older, newer, gadget
}

// A database made before the CURIE key is migrated on its first commit:
// the oldest term of each CURIE holds the key, a later duplicate keeps its
// row and history outside the key, and no new term of a held CURIE is
// written — the service refuses it naming the oldest.
func TestADatabaseMadeBeforeTheCurieKeyIsMigratedKeepingTheOldestTerm(t *testing.T) {
	path, older, newer, gadget := legacyDB(t)
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
	for curie, holder := range map[string]string{"ex:Widget": older.ID, "ex:Gadget": gadget.ID} {
		_, err := svc.Ledger.Define(ctx, curie, "defined again", nil)
		if e := errs.As(err); e.Code != errs.AlreadyExists || e.EntityID != holder {
			t.Fatalf("define %s: %v, want already-exists on %s", curie, err, holder)
		}
	}
	if _, err := svc.Ledger.Define(ctx, "ex:Sprocket", "a new term", nil); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := s.DB().QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != 2 {
		t.Fatalf("user_version = %d %v, want 2", version, err)
	}
	held := map[string]string{}
	rows, err := s.DB().Query("SELECT id, coalesce(curie, '') FROM entities")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, curie string
		rows.Scan(&id, &curie)
		held[id] = curie
	}
	rows.Close()
	if held[older.ID] != "ex:Widget" || held[newer.ID] != "" || held[gadget.ID] != "ex:Gadget" {
		t.Fatalf("keys after the migration: %v", held)
	}
	// The duplicate is still read as before.
	if e, err := s.GetEntity(ctx, newer.ID); err != nil || e.Curie != "ex:Widget" {
		t.Fatalf("the later duplicate: %+v %v", e, err)
	}
	if evs, err := s.Events(ctx, newer.ID); err != nil || len(evs) != 1 {
		t.Fatalf("the later duplicate's history: %v %v", evs, err)
	}
	terms, err := s.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
	if err != nil || len(terms) != 4 {
		t.Fatalf("terms after the migration: %d %v", len(terms), err)
	}
	// The store itself refuses a new term of a held CURIE.
	dup := older
	dup.ID = ids.New(ids.Term, time.Now())
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: dup}}}); !store.FailedOn(err, store.CurieKey("ex:Widget")) {
		t.Fatalf("commit of a third ex:Widget: %v", err)
	}
}

// Processes that open a database made before the CURIE key all commit at
// once: one migrates, the others find it migrated inside their transaction.
func TestConcurrentFirstCommitsMigrateOnce(t *testing.T) {
	path, _, _, _ := legacyDB(t)
	const n = 6
	var wg sync.WaitGroup
	fails := make([]error, n)
	for i := range n {
		s, err := sqlite.Open(path) // one store per process
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, fails[i] = (service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})).Ledger.Define(ctx, fmt.Sprintf("ex:Part%d", i), "a part", nil)
		}()
	}
	wg.Wait()
	for i, err := range fails {
		if err != nil {
			t.Errorf("first commit %d: %v", i, err)
		}
	}
}

// A BeforeCommit hook runs inside the commit's transaction, after its
// writes: what it returns is the commit's error, and an error leaves
// nothing written. With no hook the same commit goes through.
func TestBeforeCommitHookHoldsTheTransaction(t *testing.T) {
	s := newStore(t)
	at := time.Now()
	e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: "held", Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
	tx := store.Tx{Entities: []store.EntityPut{{Entity: e}}}
	stop := context.Canceled
	calls := 0
	s.Hooks.BeforeCommit = func(hctx context.Context) error {
		calls++
		if hctx != ctx {
			t.Error("the hook did not get the commit's context")
		}
		return stop
	}
	if err := s.Commit(ctx, tx); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("commit through a failing hook: %v after %d calls, want the hook's error after 1", err, calls)
	}
	if _, err := s.GetEntity(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the hook failed: %v, want nothing written", err)
	}
	s.Hooks = sqlite.Hooks{}
	if err := s.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEntity(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
}

// A write that panics (a bug in a caller's code, which net/http's handler
// recovery would survive) must not leave its transaction open: the store
// keeps writing, and no read sees what the panicked write wrote.
func TestAWriteThatPanicsLeavesNoTransactionOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	s, err := sqlite.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now()
	claim := func(text string) ledger.Entity {
		return ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: text, Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
	}
	panicked := claim("written, then the write panicked")
	s.Hooks.BeforeCommit = func(context.Context) error { panic("a bug inside the write") }
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the writer")
			}
		}()
		s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: panicked}}}) //nolint:errcheck // it panics
	}()
	s.Hooks = sqlite.Hooks{}
	if _, err := s.GetEntity(ctx, panicked.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the panicked write's entity read back: %v, want not found (its transaction rolled back)", err)
	}
	next := claim("the next write")
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: next}}}); err != nil {
		t.Fatalf("the write after a panicked one: %v", err)
	}
	other, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.GetEntity(ctx, next.ID); err != nil {
		t.Fatalf("another store on the file reads the next write: %v", err)
	}
}

func TestTokenStoreConformance(t *testing.T) {
	storetest.RunTokens(t, func(t *testing.T) (store.TokenStore, store.TokenStore) { return newStore(t), nil })
}
