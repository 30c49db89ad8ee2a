package dynamo_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// newHook is a hook on spawn.requested.
func newHook(at time.Time) hooks.Hook {
	return hooks.Hook{ID: ids.New(ids.Hook, at), URL: "https://hooks.example.com/in", Events: []hooks.EventType{hooks.SpawnRequested},
		Format: hooks.FormatJSON, CreatedAt: at, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
}

// queuedFor says whether a commit queued a delivery of request id req's
// event to hook.
func queuedFor(t *testing.T, s *dynamo.Store, at time.Time, hook, req string) bool {
	t.Helper()
	due, err := s.ClaimDue(context.Background(), at.Add(time.Second), service.DeliveryLease, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d.Delivery.HookID == hook && contains(string(d.Message.Data), req) {
			return true
		}
	}
	return false
}

// A function's rebuilt store reads its settings with one Query of the
// meta partition, where the hooks are kept too: that Query fills the hook
// cache, and the store's first commit announces to the hooks it read
// without reading them again (docs/aws-cost.md, "A quiet project, all
// in").
func TestARebuiltStoresSettingsReadFillsItsHookCache(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	clock := newFakeTime()
	owner := newStore(t)
	h := newHook(clock.now())
	if err := owner.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	counter := newCounter()
	rebuilt := dynamo.New(newClient(nil, counter), table, owner.Project())
	// As a function: the settings read first (TableService), the cache set
	// after (the wall clock, as deployed).
	if _, err := rebuilt.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt.SetHookCache(10*time.Second, nil, nil)
	req := commitSpawnRequested(t, rebuilt, clock.now())
	if q := counter.Usage()["Query"]; q.Requests != 1 || q.ReadUnits != 1 {
		t.Fatalf("the settings read and a commit made %d queries, %v read units; want the settings' one", q.Requests, q.ReadUnits)
	}
	if !queuedFor(t, owner, clock.now(), h.ID, req) {
		t.Fatal("the commit did not announce to the hook the settings' Query read")
	}
}

// The cache the settings' Query fills keeps the hook cache's guarantee:
// a hook added on another instance after that Query is heard by every
// event committed once its add returned.
func TestAHookAddedAfterARebuiltStoresSettingsReadIsHeardOnceTheAddReturns(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	clock := newFakeTime()
	adder := newStore(t)
	adder.SetHookCache(10*time.Second, clock.now, clock.sleep)
	if err := adder.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rebuilt := dynamo.New(newClient(nil, nil), table, adder.Project())
	rebuilt.SetHookCache(10*time.Second, clock.now, clock.sleep)
	if _, err := rebuilt.Settings(ctx); err != nil { // reads no hook
		t.Fatal(err)
	}
	h := newHook(clock.now())
	if err := adder.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	req := commitSpawnRequested(t, rebuilt, clock.now())
	if !queuedFor(t, adder, clock.now(), h.ID, req) {
		t.Fatal("an event committed after the hook's add returned was not announced to it")
	}
}

// A store with no hook cache (the CLI's and `dont serve`'s default:
// a hook add does not wait) reads the hooks on each commit, whatever its
// settings' Query read: a hook added right after is heard at once.
func TestAStoreWithoutAHookCacheHearsAHookAddedAfterItsSettingsRead(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	clock := newFakeTime()
	adder := newStore(t)
	if err := adder.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rebuilt := dynamo.New(newClient(nil, nil), table, adder.Project())
	if _, err := rebuilt.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	h := newHook(clock.now())
	if err := adder.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	req := commitSpawnRequested(t, rebuilt, clock.now())
	if !queuedFor(t, adder, clock.now(), h.ID, req) {
		t.Fatal("a hook added after the settings' read was not heard by a store without a cache")
	}
}

// Hooks added before they joined the meta partition were kept under
// P#<p>#HOOK: Reindex moves each one, once, and commits then hear it.
func TestReindexMovesAHookKeptUnderTheOldPartition(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	clock := newFakeTime()
	s := newStore(t)
	if err := s.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	h := newHook(clock.now())
	doc, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(nil, nil).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "P#" + s.Project() + "#HOOK"},
		dynamo.SortKey:      &types.AttributeValueMemberS{Value: h.ID},
		"doc":               &types.AttributeValueMemberS{Value: string(doc)},
		"sec":               &types.AttributeValueMemberS{Value: h.Secret},
	}}); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListHooks(ctx); err != nil || len(list) != 0 {
		t.Fatalf("before the reindex: %+v, %v", list, err)
	}
	rep, err := s.Reindex(ctx, dynamo.ReindexOptions{})
	if err != nil || rep.Hooks != 1 {
		t.Fatalf("reindex: %+v, %v", rep, err)
	}
	got, err := s.GetHook(ctx, h.ID)
	if err != nil || got.Secret != h.Secret || got.URL != h.URL {
		t.Fatalf("the moved hook: %+v, %v", got, err)
	}
	req := commitSpawnRequested(t, s, clock.now())
	if !queuedFor(t, s, clock.now(), h.ID, req) {
		t.Fatal("a commit after the reindex did not announce to the moved hook")
	}
	if rep, err := s.Reindex(ctx, dynamo.ReindexOptions{}); err != nil || rep.Hooks != 0 {
		t.Fatalf("a second reindex: %+v, %v", rep, err)
	}
}
