// Package storetest is the conformance suite every store.Store must
// pass. Call Run from a store's own tests with a constructor of empty stores.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// Run runs the suite; newStore must return an empty store each call.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"missing items are ErrNotFound", missing},
		{"create is conditional on absence", createOnce},
		{"update is conditional on version and all-or-nothing", updateVersioned},
		{"a commit is conditional on the entities it leaves unchanged", unchangedConditions},
		{"spawn resolution is conditional on pending", spawnPending},
		{"a heartbeat moves a pending spawn's expiry, conditional on pending", heartbeatMoves},
		{"expiring spawns are pending and in range, earliest first, bounded", dueSpawns},
		{"list spawns filters and orders by issue time", listSpawns},
		{"dependents and entity filters", dependents},
		{"an entity's events keep commit order", eventOrder},
		{"concurrent resolvers: exactly one commits", concurrentResolvers},
		{"a CURIE is held by one term", curieHeldOnce},
		{"concurrent terms of one CURIE: exactly one commits", concurrentCuries},
		{"a spawn keeps who requested it, pending, heartbeated and resolved", spawnKeepsItsRequester},
		{"a keyed write commits with its idempotency record or not at all", keyedWriteCommitsWithItsRecord},
		{"a keyed spawn commits with its idempotency record or not at all", keyedSpawnCommitsWithItsRecord},
	}
	tests = append(tests, pageTests...)
	if _, ok := newStore(t).(store.PendingSpawnStore); ok {
		tests = append(tests, struct {
			name string
			fn   func(t *testing.T, s store.Store)
		}{"a spawn read with its entity is the pending spawn, heartbeated, until resolved", pendingSpawnOnItsEntity})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

var base = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func claim(status ledger.Status) ledger.Entity {
	return ledger.Entity{ID: ids.New(ids.Claim, base), Kind: ledger.KindClaim, Statement: "water boils at 100 C at sea level",
		Status: status, Version: 1, CreatedAt: base, UpdatedAt: base}
}

func term(curie string) ledger.Entity {
	return ledger.Entity{ID: ids.New(ids.Term, base), Kind: ledger.KindTerm, Curie: curie, Definition: "a thing",
		Status: ledger.Unverified, Version: 1, CreatedAt: base, UpdatedAt: base}
}

func ev(kind ledger.EventKind, entity string) ledger.Event {
	return ledger.Event{ID: ids.New(ids.Event, base), Kind: kind, EntityID: entity, At: base}
}

func newSpawn(entity string, issued, expires time.Time) spawn.Spawn {
	return spawn.Spawn{ID: ids.New(ids.Spawn, issued), Kind: spawn.Assume, EntityID: entity, State: spawn.Pending,
		Mode: spawn.ModeHarness, PreStatus: ledger.Verified, IssuedAt: issued, ExpiresAt: expires, Request: []byte(`{"request_id":"x"}`)}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCondition(t *testing.T, err error, id string) {
	t.Helper()
	if !store.FailedOn(err, id) {
		t.Fatalf("want ConditionFailed on %s, got %v", id, err)
	}
}

func missing(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.GetEntity(ctx, "claim:01HX05A9K8VP0000000000000A"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEntity: want ErrNotFound, got %v", err)
	}
	if _, err := s.GetSpawn(ctx, "spawn:01HX05A9K8VP0000000000000A"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSpawn: want ErrNotFound, got %v", err)
	}
	// An empty id names nothing (DynamoDB refuses an empty key), and the
	// events about no entity are read under it.
	if _, err := s.GetEntity(ctx, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetEntity(\"\"): want ErrNotFound, got %v", err)
	}
	if _, err := s.GetSpawn(ctx, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSpawn(\"\"): want ErrNotFound, got %v", err)
	}
	if evs, err := s.Events(ctx, ""); err != nil || len(evs) != 0 {
		t.Fatalf("Events(\"\") of an empty store: %v %v", evs, err)
	}
}

func createOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev(ledger.EvConcluded, e.ID)}}))
	got, err := s.GetEntity(ctx, e.ID)
	must(t, err)
	if got.Statement != e.Statement || got.Status != ledger.Unverified || got.Version != 1 {
		t.Fatalf("read back %+v", got)
	}
	again := e
	again.Statement = "overwritten"
	wantCondition(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: again}}}), e.ID)
	got, _ = s.GetEntity(ctx, e.ID)
	if got.Statement != e.Statement {
		t.Fatalf("a failed create overwrote the entity: %q", got.Statement)
	}
}

func updateVersioned(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := claim(ledger.Unverified), claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: a}, {Entity: b}}}))
	a2, b2 := a, b
	a2.Status, a2.Version = ledger.Verified, 2
	b2.Status, b2.Version = ledger.Doubted, 2
	stray := ev(ledger.EvDismissed, a.ID)
	// b's condition is stale (expects version 5): nothing of the tx may land.
	err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: a2, PrevVersion: 1}, {Entity: b2, PrevVersion: 5}}, Events: []ledger.Event{stray}})
	wantCondition(t, err, b.ID)
	got, _ := s.GetEntity(ctx, a.ID)
	if got.Status != ledger.Unverified || got.Version != 1 {
		t.Fatalf("partial write: a is %s v%d", got.Status, got.Version)
	}
	evs, err := s.Events(ctx, a.ID)
	must(t, err)
	if len(evs) != 0 {
		t.Fatalf("partial write: %d events landed", len(evs))
	}
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: a2, PrevVersion: 1}}, Events: []ledger.Event{stray}}))
	got, _ = s.GetEntity(ctx, a.ID)
	if got.Status != ledger.Verified || got.Version != 2 {
		t.Fatalf("update lost: %s v%d", got.Status, got.Version)
	}
}

// unchangedConditions: a doubt that left a dependent alone for what it
// was (doubted, so not staled) must not commit once that dependent has
// moved (verified meanwhile): store.Tx.Unchanged.
func unchangedConditions(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, dep := claim(ledger.Unverified), claim(ledger.Doubted)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: a}, {Entity: dep}}}))
	moved := dep
	moved.Status, moved.Version = ledger.Verified, 2
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: moved, PrevVersion: 1}}}))
	a2 := a
	a2.Status, a2.Version = ledger.Doubted, 2
	doubt := store.Tx{Entities: []store.EntityPut{{Entity: a2, PrevVersion: 1}}, Events: []ledger.Event{ev(ledger.EvTrusted, a.ID)},
		Unchanged: []store.EntityCheck{{ID: dep.ID, Version: 1}}}
	wantCondition(t, s.Commit(ctx, doubt), dep.ID)
	got, err := s.GetEntity(ctx, a.ID)
	must(t, err)
	if got.Status != ledger.Unverified || got.Version != 1 {
		t.Fatalf("a commit whose unchanged entity moved landed: a is %s v%d", got.Status, got.Version)
	}
	doubt.Unchanged[0].Version = 2
	must(t, s.Commit(ctx, doubt))
	if got, _ = s.GetEntity(ctx, a.ID); got.Status != ledger.Doubted || got.Version != 2 {
		t.Fatalf("the commit with its unchanged entity as read was lost: a is %s v%d", got.Status, got.Version)
	}
}

func spawnPending(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}))
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	issued := e
	issued.Version, issued.PendingSpawn, issued.LastSpawn = 2, sp.ID, sp.ID
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: issued, PrevVersion: 1}},
		Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}, Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}}))
	again := issued
	again.Version = 3
	wantCondition(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: again, PrevVersion: 2}},
		Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}), sp.ID)
	got, err := s.GetSpawn(ctx, sp.ID)
	must(t, err)
	if string(got.Request) != string(sp.Request) || got.State != spawn.Pending || !got.ExpiresAt.Equal(sp.ExpiresAt) || got.EntityID != e.ID {
		t.Fatalf("read back %+v", got)
	}
	resolve := func(outcome spawn.Outcome, prev int64) error {
		done := sp
		done.State, done.Outcome = spawn.Resolved, outcome
		e2 := issued
		e2.Version, e2.PendingSpawn = prev+1, ""
		return s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: prev}},
			Spawns: []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}}, Events: []ledger.Event{ev(ledger.EvSpawnResolved, e.ID)}})
	}
	must(t, resolve(spawn.CallbackApplied, 2))
	// A second resolver, whether it read the entity before the first
	// committed or after, changes nothing.
	if err := resolve(spawn.TimeoutRestored, 2); !store.FailedOn(err, sp.ID) && !store.FailedOn(err, e.ID) {
		t.Fatalf("a resolver with a stale entity: want ConditionFailed, got %v", err)
	}
	wantCondition(t, resolve(spawn.TimeoutRestored, 3), sp.ID)
	got, _ = s.GetSpawn(ctx, sp.ID)
	if got.State != spawn.Resolved || got.Outcome != spawn.CallbackApplied {
		t.Fatalf("second resolver overwrote the first: %s %s", got.State, got.Outcome)
	}
	if string(got.Request) != string(sp.Request) {
		t.Fatalf("resolution lost the request payload: %s", got.Request)
	}
	evs, err := s.Events(ctx, e.ID)
	must(t, err)
	var kinds []ledger.EventKind
	for _, x := range evs {
		kinds = append(kinds, x.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]ledger.EventKind{ledger.EvSpawnRequested, ledger.EvSpawnResolved}) {
		t.Fatalf("history = %v", kinds)
	}
}

// heartbeatMoves: a pending spawn rewritten still pending with a later
// expiry (and payload) — a heartbeat — is read back with it, is found by
// ExpiringSpawns only at the new expiry; every replace is conditioned on
// the expiry it read, so neither a heartbeat nor a resolver commits on a
// stale one, and a heartbeat is refused once a resolver committed; on an
// entity and on none (a guess).
func heartbeatMoves(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}))
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	issued := e
	issued.Version, issued.PendingSpawn, issued.LastSpawn = 2, sp.ID, sp.ID
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: issued, PrevVersion: 1}},
		Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}, Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}}))
	guess := newSpawn("", base, base.Add(time.Hour))
	guess.Kind = spawn.Guess
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: guess, Create: true, Step: spawn.StepIssue}}}))

	moved := sp
	moved.ExpiresAt, moved.Request, moved.EntityVersion = base.Add(3*time.Hour), []byte(`{"request_id":"x","moved":true}`), 3
	e3 := issued
	e3.Version = 3
	// The heartbeat is conditioned on the expiry it moves: one that read
	// another is refused.
	wantCondition(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e3, PrevVersion: 2}},
		Spawns: []store.SpawnPut{{Spawn: moved, PrevExpiresAt: base.Add(2 * time.Hour), Step: spawn.StepHeartbeat}}, Events: []ledger.Event{ev(ledger.EvSpawnHeartbeat, e.ID)}}), sp.ID)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e3, PrevVersion: 2}},
		Spawns: []store.SpawnPut{{Spawn: moved, PrevExpiresAt: sp.ExpiresAt, Step: spawn.StepHeartbeat}}, Events: []ledger.Event{ev(ledger.EvSpawnHeartbeat, e.ID)}}))
	movedGuess := guess
	movedGuess.ExpiresAt = base.Add(3 * time.Hour)
	hb := ev(ledger.EvSpawnHeartbeat, "")
	hb.RequestID = guess.ID
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: movedGuess, PrevExpiresAt: guess.ExpiresAt, Step: spawn.StepHeartbeat}}, Events: []ledger.Event{hb}}))

	for _, want := range []spawn.Spawn{moved, movedGuess} {
		got, err := s.GetSpawn(ctx, want.ID)
		must(t, err)
		if got.State != spawn.Pending || !got.ExpiresAt.Equal(want.ExpiresAt) || string(got.Request) != string(want.Request) || got.EntityVersion != want.EntityVersion {
			t.Fatalf("read back after the heartbeat %+v, want expiry %v", got, want.ExpiresAt)
		}
	}
	// The index may lag (eventually consistent, as DynamoDB's global
	// indexes are): each read is repeated until it shows the heartbeats.
	var due []spawn.Spawn
	converges(t, func() bool {
		var err error
		due, err = s.ExpiringSpawns(ctx, time.Time{}, base.Add(2*time.Hour), 100)
		must(t, err)
		return len(due) == 0
	}, func() string { return fmt.Sprintf("due at the old expiry after the heartbeat: %v", spawnIDs(due)) })
	converges(t, func() bool {
		var err error
		due, err = s.ExpiringSpawns(ctx, base.Add(2*time.Hour), base.Add(3*time.Hour), 100)
		must(t, err)
		got := fmt.Sprint(spawnIDs(due))
		return got == fmt.Sprint([]string{sp.ID, guess.ID}) || got == fmt.Sprint([]string{guess.ID, sp.ID})
	}, func() string { return fmt.Sprintf("due at the new expiry: %v", spawnIDs(due)) })
	list, err := s.ListSpawns(ctx, store.SpawnFilter{State: spawn.Pending})
	must(t, err)
	for _, l := range list {
		if !l.ExpiresAt.Equal(base.Add(3 * time.Hour)) {
			t.Fatalf("listed with the old expiry: %+v", l)
		}
	}
	evs, err := s.Events(ctx, e.ID)
	must(t, err)
	if len(evs) != 2 || evs[1].Kind != ledger.EvSpawnHeartbeat {
		t.Fatalf("history after the heartbeat: %+v", evs)
	}

	// A resolver that read the spawn before the heartbeat (its expiry as
	// issued) cannot commit on that read, on an entity or on none.
	stale := sp
	stale.State, stale.Outcome = spawn.Resolved, spawn.TimeoutRestored
	e4stale := e3
	e4stale.Version, e4stale.PendingSpawn = 4, ""
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e4stale, PrevVersion: 3}},
		Spawns: []store.SpawnPut{{Spawn: stale, Step: spawn.StepTimeout}}, Events: []ledger.Event{ev(ledger.EvSpawnTimeout, e.ID)}}); !store.FailedOn(err, sp.ID) {
		t.Fatalf("a timeout on the expiry before the heartbeat: want ConditionFailed on %s, got %v", sp.ID, err)
	}
	staleGuess := guess
	staleGuess.State, staleGuess.Outcome = spawn.Resolved, spawn.TimeoutRestored
	wantCondition(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: staleGuess, Step: spawn.StepTimeout}}}), guess.ID)

	// Resolved, neither takes another heartbeat.
	done := moved
	done.State, done.Outcome = spawn.Resolved, spawn.TimeoutRestored
	e4 := e3
	e4.Version, e4.PendingSpawn = 4, ""
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e4, PrevVersion: 3}},
		Spawns: []store.SpawnPut{{Spawn: done, Step: spawn.StepTimeout}}, Events: []ledger.Event{ev(ledger.EvSpawnTimeout, e.ID)}}))
	late := moved
	late.ExpiresAt = base.Add(5 * time.Hour)
	e5 := e4
	e5.Version = 5
	err = s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e5, PrevVersion: 4}},
		Spawns: []store.SpawnPut{{Spawn: late, PrevExpiresAt: moved.ExpiresAt, Step: spawn.StepHeartbeat}}, Events: []ledger.Event{ev(ledger.EvSpawnHeartbeat, e.ID)}})
	if !store.FailedOn(err, sp.ID) && !store.FailedOn(err, e.ID) {
		t.Fatalf("a heartbeat after the resolution: want ConditionFailed, got %v", err)
	}
	guessDone := movedGuess
	guessDone.State, guessDone.Outcome = spawn.Resolved, spawn.CallbackApplied
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: guessDone, Step: spawn.StepCallback}}}))
	lateGuess := movedGuess
	lateGuess.ExpiresAt = base.Add(5 * time.Hour)
	wantCondition(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: lateGuess, PrevExpiresAt: movedGuess.ExpiresAt, Step: spawn.StepHeartbeat}}}), guess.ID)
	for _, id := range []string{sp.ID, guess.ID} {
		if got, _ := s.GetSpawn(ctx, id); got.State != spawn.Resolved {
			t.Fatalf("a late heartbeat revived %s: %+v", id, got)
		}
	}
}

func dueSpawns(t *testing.T, s store.Store) {
	ctx := context.Background()
	var due []string
	for i := 0; i < 5; i++ {
		sp := newSpawn("", base, base.Add(time.Duration(5-i)*time.Minute))
		must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}))
		due = append([]string{sp.ID}, due...)
	}
	future := newSpawn("", base, base.Add(time.Hour))
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: future, Create: true, Step: spawn.StepIssue}}}))
	done := newSpawn("", base, base.Add(time.Minute))
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: done, Create: true, Step: spawn.StepIssue}}}))
	done.State, done.Outcome = spawn.Resolved, spawn.CallbackApplied
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}}}))

	// The index may lag the writes (DynamoDB's global secondary indexes
	// are eventually consistent): each read is repeated until it shows
	// them, and must then be exact.
	now := base.Add(10 * time.Minute)
	expiring := func(after, until time.Time, limit int, want []string, what string) {
		t.Helper()
		var got []spawn.Spawn
		converges(t, func() bool {
			var err error
			got, err = s.ExpiringSpawns(ctx, after, until, limit)
			must(t, err)
			return fmt.Sprint(spawnIDs(got)) == fmt.Sprint(want)
		}, func() string { return fmt.Sprintf("%s = %v, want %v", what, spawnIDs(got), want) })
	}
	expiring(time.Time{}, now, 100, due, "due (earliest expiry first, pending only)")
	expiring(time.Time{}, now, 2, due[:2], "limit 2")
	expiring(time.Time{}, base.Add(time.Minute), 100, due[:1], "expires_at == now must be due")
	// A slice of the future: after < expires_at <= until.
	expiring(base.Add(2*time.Minute), base.Add(4*time.Minute), 100, due[2:4], "(2m, 4m]")
	expiring(now, base.Add(2*time.Hour), 100, []string{future.ID}, "(10m, 2h]")
}

// converges polls ok, for an eventually consistent read, until it holds
// or 10 s have passed; then it fails with what says.
func converges(t *testing.T, ok func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func listSpawns(t *testing.T, s store.Store) {
	ctx := context.Background()
	var all []string
	var second ledger.Entity
	for i := 0; i < 3; i++ {
		// One pending spawn per entity at most: three entities.
		e := claim(ledger.Unverified)
		if i == 1 {
			second = e
		}
		sp := newSpawn(e.ID, base.Add(time.Duration(i)*time.Second), base.Add(time.Hour))
		e.PendingSpawn, e.LastSpawn = sp.ID, sp.ID
		if i == 1 {
			sp.State, sp.Outcome = spawn.Resolved, spawn.TimeoutRestored
			e.PendingSpawn = ""
		}
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}))
		all = append(all, sp.ID)
	}
	got, err := s.ListSpawns(ctx, store.SpawnFilter{})
	must(t, err)
	if fmt.Sprint(spawnIDs(got)) != fmt.Sprint(all) {
		t.Fatalf("all = %v, want %v", spawnIDs(got), all)
	}
	got, err = s.ListSpawns(ctx, store.SpawnFilter{State: spawn.Pending})
	must(t, err)
	if fmt.Sprint(spawnIDs(got)) != fmt.Sprint([]string{all[0], all[2]}) {
		t.Fatalf("pending = %v", spawnIDs(got))
	}
	got, err = s.ListSpawns(ctx, store.SpawnFilter{State: spawn.Resolved, EntityID: second.ID})
	must(t, err)
	if len(got) != 1 || got[0].ID != all[1] || got[0].Outcome != spawn.TimeoutRestored {
		t.Fatalf("resolved of %s = %+v", second.ID, got)
	}
	got, err = s.ListSpawns(ctx, store.SpawnFilter{EntityID: "claim:nobody"})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("entity filter leaked %v", spawnIDs(got))
	}
}

func dependents(t *testing.T, s store.Store) {
	ctx := context.Background()
	root, other := claim(ledger.Verified), claim(ledger.Doubted)
	child := claim(ledger.Unverified)
	child.DependsOn = []string{root.ID}
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: root}, {Entity: other}, {Entity: child}}}))
	deps, err := s.Dependents(ctx, root.ID)
	must(t, err)
	if len(deps) != 1 || deps[0].ID != child.ID {
		t.Fatalf("dependents of root = %v", deps)
	}
	doubted, err := s.ListEntities(ctx, store.EntityFilter{Status: ledger.Doubted})
	must(t, err)
	if len(doubted) != 1 || doubted[0].ID != other.ID {
		t.Fatalf("status filter = %v", doubted)
	}
	all, err := s.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindClaim})
	must(t, err)
	if len(all) != 3 {
		t.Fatalf("kind filter = %d entities", len(all))
	}
}

func eventOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev("kind00", e.ID)}}))
	want := []ledger.EventKind{"kind00"}
	for v := int64(1); v < 10; v++ {
		// Each event is written with the entity version it produced (as the
		// service always does); ids deliberately run backwards in time:
		// history order is commit order, not id order.
		next := e
		next.Version = v + 1
		a, b := ev(ledger.EventKind(fmt.Sprintf("kind%02da", v)), e.ID), ev(ledger.EventKind(fmt.Sprintf("kind%02db", v)), e.ID)
		a.ID = ids.New(ids.Event, base.Add(-time.Duration(v)*time.Hour))
		b.ID = ids.New(ids.Event, base.Add(-time.Duration(v)*time.Hour-time.Minute))
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: next, PrevVersion: v}}, Events: []ledger.Event{a, b}}))
		want = append(want, a.Kind, b.Kind)
	}
	got, err := s.Events(ctx, e.ID)
	must(t, err)
	var kinds []ledger.EventKind
	for _, x := range got {
		kinds = append(kinds, x.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events out of commit order: %v", kinds)
	}
}

func concurrentResolvers(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	e.PendingSpawn, e.LastSpawn = sp.ID, sp.ID
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}))
	const n = 16
	var wins, losses atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			done := sp
			done.State, done.Outcome = spawn.Resolved, spawn.Outcome(fmt.Sprintf("resolver-%d", i))
			e2 := e
			e2.Version, e2.Status = 2, ledger.Verified
			err := s.Commit(ctx, store.Tx{
				Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}},
				Spawns:   []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}},
				Events:   []ledger.Event{ev(ledger.EvSpawnResolved, e.ID)},
			})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.As(err, new(*store.ConditionFailed)):
				losses.Add(1)
			default:
				t.Errorf("resolver %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 || losses.Load() != n-1 {
		t.Fatalf("wins=%d losses=%d, want exactly one winner", wins.Load(), losses.Load())
	}
	evs, err := s.Events(ctx, e.ID)
	must(t, err)
	if len(evs) != 1 {
		t.Fatalf("%d resolution events, want 1", len(evs))
	}
}

// curieHeldOnce: a new term whose CURIE another term holds fails on the
// CURIE's key and writes nothing; other CURIEs, claims and later writes of
// the holder are not affected, and a CURIE longer than any key limit is
// held like a short one.
func curieHeldOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	long := "ex:" + strings.Repeat("Widget", 400)
	for _, curie := range []string{"ex:Widget", long} {
		first := term(curie)
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: first}}, Events: []ledger.Event{ev(ledger.EvDefined, first.ID)}}))
		dup := term(curie)
		dup.Definition = "another thing"
		err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: dup}}, Events: []ledger.Event{ev(ledger.EvDefined, dup.ID)}})
		wantCondition(t, err, store.CurieKey(curie))
		if _, err := s.GetEntity(ctx, dup.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused term was written: %v", err)
		}
		if evs, err := s.Events(ctx, dup.ID); err != nil || len(evs) != 0 {
			t.Fatalf("the refused term's events: %v %v", evs, err)
		}
		// A claim beside a refused term is refused with it.
		c := claim(ledger.Unverified)
		err = s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: c}, {Entity: term(curie)}}})
		wantCondition(t, err, store.CurieKey(curie))
		if _, err := s.GetEntity(ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("partial write: the claim beside a refused term landed: %v", err)
		}
		// The holder still moves.
		next := first
		next.Status, next.Version = ledger.Verified, 2
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: next, PrevVersion: 1}}, Events: []ledger.Event{ev(ledger.EvDismissed, first.ID)}}))
	}
	other := term("ex:Gadget")
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: other}, {Entity: claim(ledger.Unverified)}}}))
	// The CURIE is the whole key: neither a prefix nor a case variant of it.
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: term("ex:Widge")}, {Entity: term("ex:widget")}, {Entity: term("ex:" + strings.Repeat("Widget", 399))}}}))
	terms, err := s.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
	must(t, err)
	if len(terms) != 6 {
		t.Fatalf("%d terms stored, want 6", len(terms))
	}
}

// concurrentCuries: writers race, each creating its own term of one of a
// few CURIEs; for each CURIE exactly one commits, the others fail on its
// key, and one term of it is stored.
func concurrentCuries(t *testing.T, s store.Store) {
	ctx := context.Background()
	const curies, racers = 3, 8
	var wins [curies]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := 0; c < curies; c++ {
		curie := fmt.Sprintf("ex:Raced%d", c)
		for r := 0; r < racers; r++ {
			e := term(curie)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev(ledger.EvDefined, e.ID)}})
				switch {
				case err == nil:
					wins[c].Add(1)
				case store.FailedOn(err, store.CurieKey(curie)):
				default:
					t.Errorf("term %s of %s: %v", e.ID, curie, err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	terms, err := s.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
	must(t, err)
	held := map[string]int{}
	for _, e := range terms {
		held[e.Curie]++
		if evs, err := s.Events(ctx, e.ID); err != nil || len(evs) != 1 {
			t.Errorf("term %s: events %v %v", e.ID, evs, err)
		}
	}
	for c := range curies {
		curie := fmt.Sprintf("ex:Raced%d", c)
		if wins[c].Load() != 1 || held[curie] != 1 {
			t.Errorf("%s: %d commits, %d terms stored; want exactly one", curie, wins[c].Load(), held[curie])
		}
	}
}

func spawnIDs(sps []spawn.Spawn) []string {
	out := []string{}
	for _, sp := range sps {
		out = append(out, sp.ID)
	}
	return out
}

// spawnKeepsItsRequester: the principal that issued a spawn is read back
// from every read of it (GetSpawn, ListSpawns, ExpiringSpawns) while it is
// pending, after a heartbeat rewrote it and after it resolved, on an
// entity and on none: the service lets only it (or its callback token, or
// a person) cancel, heartbeat or resolve the spawn.
// pendingSpawnOnItsEntity: a store that keeps the spawn pending on an
// entity with it (store.PendingSpawnStore) answers it as GetSpawn does but
// for the request, with the expiry a heartbeat moved it to, and only for
// that entity and while the spawn is pending there.
func pendingSpawnOnItsEntity(t *testing.T, s store.Store) {
	ctx := context.Background()
	on := s.(store.PendingSpawnStore)
	e, other := claim(ledger.Unverified), claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}, {Entity: other}}}))
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	sp.RequestedBy, sp.KeyDigest, sp.EntityVersion = "tok:01HX05A9K8VP0000000000000A", "306a4606092fbce9af38ab122d994e5d", 2
	issued := e
	issued.Version, issued.PendingSpawn, issued.LastSpawn = 2, sp.ID, sp.ID
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: issued, PrevVersion: 1}},
		Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}, Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}}))
	want := func(when string, want spawn.Spawn) {
		t.Helper()
		got, found, err := on.PendingSpawn(ctx, e.ID, sp.ID)
		must(t, err)
		full, err := s.GetSpawn(ctx, sp.ID)
		must(t, err)
		full.Request = nil
		g, w, f := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want), fmt.Sprintf("%+v", full)
		if !found || got.Request != nil || !got.ExpiresAt.Equal(want.ExpiresAt) || g != w || f != w {
			t.Fatalf("%s: PendingSpawn = %s (found %v, request %q)\nwant %s\nGetSpawn %s", when, g, found, got.Request, w, f)
		}
	}
	bare := func(sp spawn.Spawn) spawn.Spawn {
		sp.Request = nil
		return sp
	}
	want("issued", bare(sp))
	for _, c := range []struct{ entity, id string }{{other.ID, sp.ID}, {e.ID, ids.New(ids.Spawn, base)}} {
		if got, found, err := on.PendingSpawn(ctx, c.entity, c.id); err != nil || found {
			t.Fatalf("PendingSpawn(%s, %s) = %+v, %v, %v: that spawn is not pending on that entity", c.entity, c.id, got, found, err)
		}
	}
	moved := sp
	moved.ExpiresAt, moved.Request, moved.EntityVersion = base.Add(3*time.Hour), []byte(`{"request_id":"x","moved":true}`), 3
	e3 := issued
	e3.Version = 3
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e3, PrevVersion: 2}},
		Spawns: []store.SpawnPut{{Spawn: moved, PrevExpiresAt: sp.ExpiresAt, Step: spawn.StepHeartbeat}}, Events: []ledger.Event{ev(ledger.EvSpawnHeartbeat, e.ID)}}))
	want("heartbeated", bare(moved))
	done := moved
	done.State, done.Outcome = spawn.Resolved, spawn.CallbackApplied
	e4 := e3
	e4.Version, e4.PendingSpawn = 4, ""
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e4, PrevVersion: 3}},
		Spawns: []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}}, Events: []ledger.Event{ev(ledger.EvSpawnResolved, e.ID)}}))
	if got, found, err := on.PendingSpawn(ctx, e.ID, sp.ID); err != nil || found {
		t.Fatalf("PendingSpawn after the resolution = %+v, %v, %v", got, found, err)
	}
}

func spawnKeepsItsRequester(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := claim(ledger.Unverified)
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}))
	sp := newSpawn(e.ID, base, base.Add(time.Hour))
	sp.RequestedBy = "tok:01HX05A9K8VP0000000000000A"
	issued := e
	issued.Version, issued.PendingSpawn, issued.LastSpawn = 2, sp.ID, sp.ID
	g := spawn.Spawn{ID: ids.New(ids.Spawn, base.Add(time.Second)), Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness,
		Question: "q", N: 2, IssuedAt: base, ExpiresAt: base.Add(time.Hour), RequestedBy: "harness:agent-7", Request: []byte(`{"request_id":"g"}`)}
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: issued, PrevVersion: 1}},
		Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}, {Spawn: g, Create: true, Step: spawn.StepIssue}}, Events: []ledger.Event{ev(ledger.EvSpawnRequested, e.ID)}}))
	want := map[string]string{sp.ID: sp.RequestedBy, g.ID: g.RequestedBy}
	check := func(when string) {
		t.Helper()
		for id, by := range want {
			got, err := s.GetSpawn(ctx, id)
			must(t, err)
			if got.RequestedBy != by {
				t.Fatalf("%s: GetSpawn(%s).RequestedBy = %q, want %q", when, id, got.RequestedBy, by)
			}
		}
		list, err := s.ListSpawns(ctx, store.SpawnFilter{})
		must(t, err)
		for _, got := range list {
			if got.RequestedBy != want[got.ID] {
				t.Fatalf("%s: ListSpawns: %s requested by %q, want %q", when, got.ID, got.RequestedBy, want[got.ID])
			}
		}
	}
	check("pending")
	due, err := s.ExpiringSpawns(ctx, base, base.Add(2*time.Hour), 10)
	must(t, err)
	for _, got := range due {
		if full, err := s.GetSpawn(ctx, got.ID); err != nil || full.RequestedBy != want[got.ID] {
			t.Fatalf("a due spawn %s read back requested by %q (%v)", got.ID, full.RequestedBy, err)
		}
	}
	// A heartbeat of the guess rewrites it.
	moved := g
	moved.ExpiresAt = base.Add(2 * time.Hour)
	must(t, s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: moved, PrevExpiresAt: g.ExpiresAt, Step: spawn.StepHeartbeat}}, Events: []ledger.Event{ev(ledger.EvSpawnHeartbeat, "")}}))
	check("heartbeated")
	done := sp
	done.State, done.Outcome = spawn.Resolved, spawn.CallbackApplied
	e2 := issued
	e2.Version, e2.PendingSpawn = 3, ""
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 2}},
		Spawns: []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}}, Events: []ledger.Event{ev(ledger.EvSpawnResolved, e.ID)}}))
	check("resolved")
}
