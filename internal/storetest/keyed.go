package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// keyedPut is a call's response to commit with its write (store.Tx.Key)
// that no store may defer: nothing but the record keeps its retry from
// applying the call again.
func keyedPut(name, body string, at time.Time) *idempotency.Put {
	return &idempotency.Put{Name: name, Fingerprint: "fp-" + name, Status: 201, Body: []byte(body), At: at}
}

// keyStore is the idempotency port of a store under the suite: every
// store.Store that carries Tx.Key implements it.
func keyStore(t *testing.T, s store.Store) idempotency.Store {
	t.Helper()
	k, ok := s.(idempotency.Store)
	if !ok {
		t.Fatalf("%T keeps no Idempotency-Key records", s)
	}
	return k
}

// keyedWriteCommitsWithItsRecord: the write and its key's record are one
// commit. A commit carrying a key already recorded applies nothing
// (idempotency.ErrTaken); a commit that fails (its own condition: what a
// crash before the commit leaves) records nothing, so a retry applies it.
func keyedWriteCommitsWithItsRecord(t *testing.T, s store.Store) {
	ctx := context.Background()
	keys := keyStore(t, s)
	first := claim(ledger.Unverified)
	put := keyedPut("tok/conclude/k1", `{"ok":true,"first":1}`, base)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: first}}, Events: []ledger.Event{ev(ledger.EvConcluded, first.ID)}, Key: put}))
	if put.Deferred {
		t.Fatal("a key the service does not guard was deferred past its commit")
	}
	rec, err := keys.Lookup(ctx, put.Name, base)
	if err != nil || rec == nil || !rec.Done || rec.Status != 201 || string(rec.Body) != `{"ok":true,"first":1}` || rec.Fingerprint != "fp-tok/conclude/k1" {
		t.Fatalf("the record committed with the write: %+v %v", rec, err)
	}
	if _, err := s.GetEntity(ctx, first.ID); err != nil {
		t.Fatalf("the write committed with its record: %v", err)
	}

	// The same key again (a retry that missed the record): nothing applied.
	second := claim(ledger.Unverified)
	again := keyedPut("tok/conclude/k1", `{"ok":true,"second":2}`, base.Add(time.Minute))
	err = s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: second}}, Events: []ledger.Event{ev(ledger.EvConcluded, second.ID)}, Key: again})
	if !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a second commit of one key: want ErrTaken, got %v", err)
	}
	if _, err := s.GetEntity(ctx, second.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a commit refused for its key applied its write: %v", err)
	}
	if rec, err := keys.Lookup(ctx, put.Name, base.Add(time.Minute)); err != nil || rec == nil || string(rec.Body) != `{"ok":true,"first":1}` {
		t.Fatalf("the first response was replaced: %+v %v", rec, err)
	}

	// A commit that fails applies neither its write nor its key.
	dup := first
	dup.Statement = "overwritten"
	lost := keyedPut("tok/conclude/k2", `{"ok":true}`, base)
	wantCondition(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: dup}}, Key: lost}), first.ID)
	if rec, err := keys.Lookup(ctx, lost.Name, base); err != nil || rec != nil {
		t.Fatalf("a failed commit recorded its key: %+v %v", rec, err)
	}
	// So its retry applies it, once.
	third := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: third}}, Events: []ledger.Event{ev(ledger.EvConcluded, third.ID)}, Key: lost}))
	if rec, err := keys.Lookup(ctx, lost.Name, base); err != nil || rec == nil || !rec.Done {
		t.Fatalf("the retry's record: %+v %v", rec, err)
	}

	// Past the window the key is absent and may be recorded again.
	later := base.Add(idempotency.Window + time.Second)
	fourth := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: fourth}}, Key: keyedPut("tok/conclude/k1", `{"ok":true,"later":1}`, later)}))
	if rec, err := keys.Lookup(ctx, put.Name, later); err != nil || rec == nil || string(rec.Body) != `{"ok":true,"later":1}` {
		t.Fatalf("the key recorded again after the window: %+v %v", rec, err)
	}
}

// keyedSpawnCommitsWithItsRecord: a commit that issues a spawn on an
// entity (one conditional put on DynamoDB when unkeyed) carries its key
// too, and refuses a key already recorded.
func keyedSpawnCommitsWithItsRecord(t *testing.T, s store.Store) {
	ctx := context.Background()
	keys := keyStore(t, s)
	e := claim(ledger.Verified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}))
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	e2 := e
	e2.Version, e2.Status, e2.PendingSpawn = 2, ledger.Unverified, sp.ID
	put := keyedPut("tok/guess/k1", `{"ok":true}`, base)
	taken := keyedPut("tok/guess/k1", `{"ok":false}`, base)
	other := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: other}}, Key: taken}))
	err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}},
		Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}, Key: put})
	if !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a spawn issued under a recorded key: want ErrTaken, got %v", err)
	}
	if got, err := s.GetEntity(ctx, e.ID); err != nil || got.Version != 1 || got.PendingSpawn != "" {
		t.Fatalf("a spawn refused for its key was applied: %+v %v", got, err)
	}
	put.Name = "tok/guess/k2"
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}},
		Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}, Key: put}))
	if rec, err := keys.Lookup(ctx, put.Name, base); err != nil || rec == nil || !rec.Done {
		t.Fatalf("the spawn's record: %+v %v", rec, err)
	}
	if got, err := s.GetEntity(ctx, e.ID); err != nil || got.Version != 2 {
		t.Fatalf("the spawn's write: %+v %v", got, err)
	}
}
