package dynamo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestHookConformance(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T) storetest.HookStores {
		s := newStore(t)
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}
	})
}

// fakeTime is a clock that a hook cache's wait moves forward.
type fakeTime struct{ ns atomic.Int64 }

func newFakeTime() *fakeTime {
	f := &fakeTime{}
	f.ns.Store(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return f
}
func (f *fakeTime) now() time.Time { return time.Unix(0, f.ns.Load()).UTC() }
func (f *fakeTime) sleep(_ context.Context, d time.Duration) error {
	f.ns.Add(int64(d))
	return nil
}

// With a hook cache the store's hooks behave exactly as without one.
func TestHookConformanceWithAHookCache(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T) storetest.HookStores {
		s := newStore(t)
		clock := newFakeTime()
		s.SetHookCache(10*time.Second, clock.now, clock.sleep)
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}
	})
}

// commitSpawnRequested commits a claim with a spawn_requested event.
func commitSpawnRequested(t *testing.T, s *dynamo.Store, at time.Time) string {
	t.Helper()
	e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: at, UpdatedAt: at, Version: 1}
	req := ids.New(ids.Spawn, at)
	ev := ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: req, At: at}
	if err := s.Commit(context.Background(), store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	return req
}

// Two warm instances of one project, each with its own hook cache: the
// commits of one read the project's hooks once per cache age, not once
// each, and a hook added on the other is heard by every event committed
// once its add returned, with no marker read.
func TestAHookAddedOnOneInstanceIsHeardOnAnotherOnceItsAddReturns(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	project := "hookcache-" + randomName()
	clock := newFakeTime()
	counter := capacity.NewCounter(newClient(nil, nil))
	adder := dynamo.New(newClient(nil, nil), table, project)
	committer := dynamo.New(newClient(nil, counter), table, project)
	const ttl = 10 * time.Second
	var waited time.Duration
	adder.SetHookCache(ttl, clock.now, func(ctx context.Context, d time.Duration) error { waited += d; return clock.sleep(ctx, d) })
	committer.SetHookCache(ttl, clock.now, clock.sleep)
	queries := func() int64 { return counter.Usage()["Query"].Requests }

	for range 5 {
		commitSpawnRequested(t, committer, clock.now())
	}
	if q := queries(); q != 1 {
		t.Fatalf("5 commits within the cache's age read the hooks %d times, want once", q)
	}
	h := hooks.Hook{ID: ids.New(ids.Hook, clock.now()), URL: "https://hooks.example.com/in", Events: []hooks.EventType{hooks.SpawnRequested},
		Format: hooks.FormatJSON, CreatedAt: clock.now(), Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if err := adder.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	if waited != ttl {
		t.Fatalf("the add returned after waiting %v, want the cache's age %v", waited, ttl)
	}
	req := commitSpawnRequested(t, committer, clock.now())
	if q := queries(); q != 2 {
		t.Fatalf("hooks read %d times, want twice (the cache expired once)", q)
	}
	due, err := committer.ClaimDue(ctx, clock.now().Add(time.Second), service.DeliveryLease, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].Delivery.HookID != h.ID || !contains(string(due[0].Message.Data), req) {
		t.Fatalf("after the add returned, the other instance's commit queued %+v", due)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
