package sqlite_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// A Store answers reads of what it wrote itself from what it knows
// (known.go); another process's commit must make it read again: the
// entity, the spawn and the sweep's probe all see that commit.
func TestWritesOfAnotherProcessAreSeenByTheNextReadOfWhatThisStoreWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	a := newStore2(t, path)
	b := openStore(t, path)
	now := time.Now().UTC()
	e := ledger.Entity{ID: ids.New(ids.Claim, now), Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: now, UpdatedAt: now, Version: 1}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		IssuedAt: now, ExpiresAt: now.Add(time.Hour), Request: []byte(`{"r":1}`)}
	if err := a.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetEntity(ctx, e.ID); err != nil || got.Version != 1 {
		t.Fatalf("own write: %+v %v", got, err)
	}
	if due, err := a.AnythingDue(ctx, now); err != nil || due {
		t.Fatalf("nothing is due yet: %v %v", due, err)
	}
	// The other process moves the entity, resolves the spawn and issues
	// one that is already due.
	e2 := e
	e2.Status, e2.Version = ledger.Verified, 2
	sp2 := sp
	sp2.State, sp2.Outcome = spawn.Resolved, spawn.CallbackApplied
	late := spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness, Question: "q", N: 1,
		IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Second), Request: []byte("{}")}
	if err := b.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}},
		Spawns: []store.SpawnPut{{Spawn: sp2}, {Spawn: late, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetEntity(ctx, e.ID); err != nil || got.Version != 2 || got.Status != ledger.Verified {
		t.Fatalf("after another process's commit the entity reads %+v %v, want version 2, verified", got, err)
	}
	if got, err := a.GetSpawn(ctx, sp.ID); err != nil || got.State != spawn.Resolved {
		t.Fatalf("after another process's commit the spawn reads %+v %v, want resolved", got, err)
	}
	if due, err := a.AnythingDue(ctx, now); err != nil || !due {
		t.Fatalf("a spawn another process issued already expired: due %v %v, want true", due, err)
	}
}

// What a Store answers from what it knows is exactly what a read of the
// stored documents returns (a fresh Store reads them), including values
// whose JSON round trip changes them, and no caller's later change to a
// value it wrote or read reaches another read.
func TestWhatAStoreKnowsReadsAsItsStoredDocumentsDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	a := newStore2(t, path)
	now := time.Now() // with a monotonic reading, in the local zone
	conf, temp := 0.25, 0.7
	resolvedAt := now.Add(time.Minute).In(time.FixedZone("x", 3600))
	plain := ledger.Entity{ID: ids.New(ids.Claim, now), Kind: ledger.KindClaim, Statement: "plain", Refs: []string{"r1", "r2"}, Atoms: []string{},
		Confidence: &conf, Status: ledger.Unverified, CreatedAt: now.UTC(), UpdatedAt: now, Version: 1}
	odd := ledger.Entity{ID: ids.New(ids.Claim, now), Kind: ledger.KindClaim, Statement: "not UTF-8: \xff", Status: ledger.Unverified,
		CreatedAt: now.In(time.FixedZone("y", -7200)), UpdatedAt: now.UTC(), Version: 1}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness, Question: "q", N: 3,
		Temperature: &temp, IssuedAt: now.UTC(), ExpiresAt: now.Add(time.Hour).UTC(), Request: []byte(`{"request":1}`)}
	if err := a.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: plain}, {Entity: odd}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	plain.Refs[0] = "changed by the writer"
	// A resolution without a request keeps the stored one.
	res := sp
	res.State, res.Outcome, res.ResolvedAt, res.Request = spawn.Resolved, spawn.CallbackApplied, &resolvedAt, nil
	if err := a.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: res}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second read is the known one for all of them
		for _, id := range []string{plain.ID, odd.ID} {
			got, err := a.GetEntity(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got.Refs = append(got.Refs[:0:0], "changed by a reader")
		}
		if got, err := a.GetSpawn(ctx, sp.ID); err != nil {
			t.Fatal(err)
		} else if len(got.Request) > 0 {
			got.Request[0] = 'X'
		}
	}
	fresh := openStore(t, path)
	for _, id := range []string{plain.ID, odd.ID} {
		want, err := fresh.GetEntity(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.GetEntity(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s from what the store knows:\n%#v %v\nfrom its document:\n%#v", id, got, err, want)
		}
	}
	want, err := fresh.GetSpawn(ctx, sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetSpawn(ctx, sp.ID); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("spawn from what the store knows:\n%#v %v\nfrom its document:\n%#v", got, err, want)
	}
	if string(want.Request) != `{"request":1}` {
		t.Errorf("the resolved spawn's request is %q", want.Request)
	}
}

// A question this Store asks (a write other than a Commit) after a probe
// that found nothing due is seen by the next probe once its deadline has
// passed: such a write makes the Store forget what it knew.
func TestAQuestionAskedAfterAProbeIsSeenByTheNextProbe(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if due, err := s.AnythingDue(ctx, now); err != nil || due {
		t.Fatalf("an empty store: due %v %v", due, err)
	}
	ses := approvals.Session{ID: ids.New(ids.Session, now), OpenedAt: now}
	if err := s.CreateSession(ctx, ses); err != nil {
		t.Fatal(err)
	}
	a := approvals.Approval{ID: ids.New(ids.Approval, now), SessionID: ses.ID, CallID: "call-1", To: "t1", Asked: true,
		State: approvals.Pending, CreatedAt: now, Deadline: now.Add(time.Minute)}
	if err := s.CreateApproval(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	if due, err := s.AnythingDue(ctx, now.Add(time.Minute)); err != nil || !due {
		t.Fatalf("a question at its deadline: due %v %v, want true", due, err)
	}
}
