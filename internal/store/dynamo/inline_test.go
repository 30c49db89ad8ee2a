package dynamo_test

import (
	"github.com/dont-cli/dont/internal/store"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// A spawn's resolution is one conditional put of its entity's item, not a
// transaction; its events and the resolved spawn ride on the item until
// the entity's next commit writes their history item. The history is
// whole at every step: after the resolution, after a crash between the
// next issue's history item and its put, after that issue, and after a
// transaction that moves the next tail.
func TestAResolutionsHistoryIsWholeFromItsPutOnAndAcrossACrash(t *testing.T) {
	needServer(t)
	counter := newCounter()
	s := dynamo.New(newClient(nil, counter), table, "test-"+randomName())
	e, a := pendingSpawn(t, s)
	wantEvents := func(when string, kinds ...ledger.EventKind) {
		t.Helper()
		evs, err := s.Events(ctx, e.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var got []ledger.EventKind
		for _, ev := range evs {
			got = append(got, ev.Kind)
		}
		if len(got) != len(kinds) {
			t.Fatalf("%s: events %v, want %v", when, got, kinds)
		}
		for i := range kinds {
			if got[i] != kinds[i] {
				t.Fatalf("%s: events %v, want %v", when, got, kinds)
			}
		}
	}
	wantResolved := func(when string, sp spawn.Spawn, outcome spawn.Outcome) {
		t.Helper()
		got, err := s.GetSpawn(ctx, sp.ID)
		if err != nil || got.State != spawn.Resolved || got.Outcome != outcome || string(got.Request) != string(sp.Request) {
			t.Fatalf("%s: spawn %+v, %v", when, got, err)
		}
		list, err := s.ListSpawns(ctx, store.SpawnFilter{EntityID: e.ID, State: spawn.Resolved})
		found := false
		for _, l := range list {
			found = found || l.ID == sp.ID
		}
		if err != nil || !found {
			t.Fatalf("%s: the resolved spawns of the entity %+v, %v", when, list, err)
		}
	}

	counter.Reset()
	if err := s.Commit(ctx, resolution(e, a)); err != nil {
		t.Fatal(err)
	}
	if u := counter.Usage(); u["TransactWriteItems"].Requests != 0 || u["PutItem"].Requests != 1 {
		t.Fatalf("the resolution wrote %+v, want one PutItem and no transaction", u)
	}
	wantEvents("after the resolution", ledger.EvSpawnRequested, ledger.EvDismissed, ledger.EvSpawnResolved)
	wantResolved("after the resolution", a, spawn.CallbackApplied)

	// A crash after the next issue put the tail's history item, before
	// the put that replaces the tail.
	if err := dynamo.WriteTailsHistoryItem(ctx, s, e.ID); err != nil {
		t.Fatal(err)
	}
	wantEvents("after a crash between the tail's history item and the issue", ledger.EvSpawnRequested, ledger.EvDismissed, ledger.EvSpawnResolved)
	wantResolved("after a crash between the tail's history item and the issue", a, spawn.CallbackApplied)

	// The issue again: it writes the tail's history item (there already)
	// and replaces the tail.
	verified := e
	verified.Status, verified.Version, verified.PendingSpawn = ledger.Verified, e.Version+1, ""
	b := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		PreStatus: ledger.Verified, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), EntityVersion: verified.Version + 1, Request: []byte(`{"request_id":"b"}`)}
	underReview := verified
	underReview.Status, underReview.Version, underReview.PendingSpawn, underReview.LastSpawn = ledger.Unverified, verified.Version+1, b.ID, b.ID
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: underReview, PrevVersion: verified.Version}},
		Spawns: []store.SpawnPut{{Spawn: b, Create: true, Step: spawn.StepIssue}},
		Events: []ledger.Event{{ID: ids.New(ids.Event, t0), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: b.ID, At: t0}}}); err != nil {
		t.Fatal(err)
	}
	wantEvents("after the next issue", ledger.EvSpawnRequested, ledger.EvDismissed, ledger.EvSpawnResolved, ledger.EvSpawnRequested)
	wantResolved("after the next issue", a, spawn.CallbackApplied)

	// A transaction resolves the next spawn: the tail moves into history
	// with its events.
	if err := s.Commit(ctx, transactional(resolution(underReview, b))); err != nil {
		t.Fatal(err)
	}
	wantEvents("after a transaction", ledger.EvSpawnRequested, ledger.EvDismissed, ledger.EvSpawnResolved,
		ledger.EvSpawnRequested, ledger.EvDismissed, ledger.EvSpawnResolved)
	wantResolved("after a transaction", a, spawn.CallbackApplied)
	wantResolved("after a transaction", b, spawn.CallbackApplied)
}
