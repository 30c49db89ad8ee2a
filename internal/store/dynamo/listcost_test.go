package dynamo_test

import (
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// seedLedger bulk-writes n unverified claims and n resolved guess spawns
// into the store's project: a ledger that no list below asks for.
func seedLedger(t *testing.T, s *dynamo.Store, n int) {
	t.Helper()
	client := newClient(nil, nil)
	var reqs []types.WriteRequest
	flush := func() {
		for len(reqs) > 0 {
			out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[table]
		}
	}
	for i := range n {
		e := newClaim()
		e.Statement = fmt.Sprintf("filler claim %d, which no list here asks for", i)
		sp := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Guess, State: spawn.Resolved, Outcome: spawn.CallbackApplied,
			Mode: spawn.ModeHarness, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), Request: []byte(`{"request_id":"x"}`)}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamo.EntityItem(s, e, spawn.Spawn{})}},
			types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamo.SpawnItem(s, sp)}})
		if len(reqs) == 24 {
			flush()
		}
	}
	flush()
}

// timeOut resolves the spawn pending on its entity as timed out.
func timeOut(t *testing.T, s *dynamo.Store, spawnID string) {
	t.Helper()
	sp, err := s.GetSpawn(ctx, spawnID)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.GetEntity(ctx, sp.EntityID)
	if err != nil {
		t.Fatal(err)
	}
	done := sp
	done.State, done.Outcome = spawn.Resolved, spawn.TimeoutRestored
	e2 := e
	e2.Version, e2.PendingSpawn = e.Version+1, ""
	ev := ledger.Event{ID: ids.New(ids.Event, t0), EntityID: e.ID, Kind: ledger.EvSpawnTimeout, At: t0}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}},
		Spawns: []store.SpawnPut{{Spawn: done, PrevExpiresAt: sp.ExpiresAt, Step: spawn.StepCallback}}, Events: []ledger.Event{ev}}); err != nil {
		t.Fatal(err)
	}
}

// The lists a person runs on a long ledger — `list --status`, `spawns
// --pending`, `spawns --timed-out` — and a term's CURIE check at define
// read the index entries of what they return and the items those name:
// with 2,000 entities and 2,000 spawns stored, of which 3 match each,
// each reads a few units, as it would with none stored.
func TestListsReadUnitsScaleWithTheResultNotTheLedger(t *testing.T) {
	needServer(t)
	const n = 2000
	counter := newCounter()
	s := dynamo.New(newClient(nil, counter), table, "test-"+randomName())
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Author: "test", Clock: func() time.Time { return now }})
	seedLedger(t, s, n)
	var doubted []string
	for range 3 {
		e := newClaim()
		e.Status = ledger.Doubted
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		doubted = append(doubted, e.ID)
	}
	pending := issuePending(t, s, 3)
	timedOut := issuePending(t, s, 3)
	for _, id := range timedOut {
		timeOut(t, s, id)
	}
	for i := range 3 {
		if _, err := svc.Ledger.Define(ctx, fmt.Sprintf("ex:term%d", i), "a term", nil); err != nil {
			t.Fatal(err)
		}
	}

	const bound = 16.0 // read units; the same lists over the whole partition read well over 100
	measure := func(what string, want []string, list func() ([]string, error)) {
		t.Helper()
		var got []string
		converges(t, func() bool { // the index is eventually consistent
			var err error
			if got, err = list(); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		}, func() string { return fmt.Sprintf("%s = %v, want %v", what, got, want) })
		counter.Reset()
		got, err := list()
		use := counter.Total()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s = %v %v, want %v", what, got, err, want)
		}
		t.Logf("%s: %d of %d stored: %.1f read units, %d items read, %d requests", what, len(got), n, use.ReadUnits, use.ItemsRead, use.Requests)
		if use.ReadUnits > bound || use.ItemsRead > 20 {
			t.Errorf("%s read %.1f units and %d items for %d results among %d: the read follows the ledger, not the result",
				what, use.ReadUnits, use.ItemsRead, len(got), n)
		}
	}
	measure("list --status doubted", doubted, func() ([]string, error) {
		l, err := svc.Ledger.List(ctx, string(ledger.Doubted))
		var ids []string
		for _, e := range l.Entities {
			ids = append(ids, e.ID)
		}
		return ids, err
	})
	spawnsOf := func(view string) func() ([]string, error) {
		return func() ([]string, error) {
			l, err := svc.Spawns.List(ctx, view)
			var ids []string
			for _, sp := range l.Spawns {
				ids = append(ids, sp.ID)
			}
			return ids, err
		}
	}
	measure("spawns --pending", pending, spawnsOf(service.ViewPending))
	measure("spawns --timed-out", timedOut, spawnsOf(service.ViewTimedOut))
	counter.Reset()
	if _, err := svc.Ledger.Define(ctx, "ex:term0", "again", nil); err == nil {
		t.Fatal("a second define of ex:term0 was accepted")
	}
	if use := counter.Total(); use.ReadUnits > bound || use.ItemsRead > 20 {
		t.Errorf("the CURIE check at define read %.1f units, %d items among %d entities", use.ReadUnits, use.ItemsRead, n)
	} else {
		t.Logf("define's CURIE check (refused): %.1f read units, %d items read", use.ReadUnits, use.ItemsRead)
	}
	if err := counter.Err(); err != nil {
		t.Fatal(err)
	}
}

// A spawn leaves its claim unverified while pending (spawn.UnderReview):
// `list --status` shows it unverified then and verified again after, yet
// a re-verification's lifecycle writes no entity_status entry — the
// entry stays under the status the claim had, and an unverified list
// reads the pending index too.
func TestAClaimUnderReviewIsListedUnverifiedAndItsLifecycleWritesNoStatusEntry(t *testing.T) {
	needServer(t)
	counter := newCounter()
	s := dynamo.New(newClient(nil, counter), table, "test-"+randomName())
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Author: "test", Clock: func() time.Time { return now }})
	e := newClaim()
	e.Status = ledger.Verified
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
		t.Fatal(err)
	}
	listed := func(status ledger.Status) bool {
		l, err := svc.Ledger.List(ctx, string(status))
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Entities) == 1 && l.Entities[0].ID == e.ID && l.Entities[0].Status == status
	}
	unlisted := func(status ledger.Status) bool {
		l, err := svc.Ledger.List(ctx, string(status))
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Entities) == 0
	}
	converges(t, func() bool { return listed(ledger.Verified) && unlisted(ledger.Unverified) }, func() string { return "not listed verified" })
	counter.Reset()
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: e.ID, Mode: spawn.ModeHarness})
	if err != nil {
		t.Fatal(err)
	}
	issued := counter.Total().IndexWriteUnits
	converges(t, func() bool { return listed(ledger.Unverified) && unlisted(ledger.Verified) }, func() string { return "under review: not listed unverified" })
	var req spawn.Request
	if err := json.Unmarshal(r.Request, &req); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	if out, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: e.ID,
		Evidence: []string{"https://example.org/boiling"}, RequestID: req.RequestID}); err != nil || out.Resolution == nil {
		t.Fatalf("callback: %v", err)
	}
	resolved := counter.Total().IndexWriteUnits
	converges(t, func() bool { return listed(ledger.Verified) && unlisted(ledger.Unverified) }, func() string { return "verified again: not listed verified" })
	// One pending_expiry entry put and deleted; no entity_status entry.
	if issued != 1 || resolved != 1 {
		t.Errorf("index write units: %.0f at issue, %.0f at the callback, want 1 and 1 (the pending index only)", issued, resolved)
	}
}
