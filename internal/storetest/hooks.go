package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// HookStores are the ports of one store that the outbox spans: the hooks
// themselves and every port whose writes announce an event.
type HookStores struct {
	Hooks         store.HookStore
	Store         store.Store
	Approvals     store.ApprovalStore
	Confirmations store.ConfirmationStore
}

// RunHooks is the conformance suite of store.HookStore and of the
// outbox written in the transaction of each event (docs/hooks.md);
// newStore must return an empty store each call.
func RunHooks(t *testing.T, newStore func(t *testing.T) HookStores) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s HookStores)
	}{
		{"a hook is created once and reads back with its secret", hookCreateOnce},
		{"a committed spawn event is queued for each hook that hears it", hookSpawnEventQueued},
		{"a commit whose condition fails queues nothing", hookConditionFailedQueuesNothing},
		{"a question, its ending and a held call are queued", hookApprovalAndHeldQueued},
		{"a question's reminder is queued once, for the hooks that hear it, however many race", hookReminderQueuedOnce},
		{"a claimed delivery is hidden for the lease, then due again", hookClaimLease},
		{"attempts are logged newest first and a delivered message is done", hookAttemptsLogged},
		{"removing a hook fails its pending deliveries and queues no more", hookRemove},
		{"concurrent workers claim each delivery once", hookConcurrentClaims},
		{"deliveries and the delivery log come in pages, newest first, each once", hookDeliveryPages},
		{"a deliveries cursor of another hook or project, or made by hand, is refused", hookDeliveryCursors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func newHook(t *testing.T, s store.HookStore, events ...hooks.EventType) hooks.Hook {
	t.Helper()
	h := hooks.Hook{ID: ids.New(ids.Hook, base), URL: "https://hooks.example.com/in", Events: events, Format: hooks.FormatJSON,
		CreatedAt: base, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	must(t, s.PutHook(context.Background(), h))
	return h
}

// spawnRequested commits a claim with a spawn_requested event (the shape
// Spawns.Request commits) and returns the request id.
func spawnRequested(t *testing.T, s store.Store) string {
	t.Helper()
	e := ledger.Entity{ID: ids.New(ids.Claim, base), Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: base, UpdatedAt: base, Version: 1}
	req := ids.New(ids.Spawn, base)
	ev := ledger.Event{ID: ids.New(ids.Event, base), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: req, At: base}
	must(t, s.Commit(context.Background(), store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}))
	return req
}

func claimAll(t *testing.T, s store.HookStore, at time.Time) []store.DueDelivery {
	t.Helper()
	due, err := s.ClaimDue(context.Background(), at, service.DeliveryLease, 100)
	must(t, err)
	return due
}

func hookCreateOnce(t *testing.T, s HookStores) {
	ctx := context.Background()
	if _, err := s.Hooks.GetHook(ctx, "hook:01HX05A9K8VP0000000000000A"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	h := newHook(t, s.Hooks, hooks.SpawnResolved, hooks.ApprovalAsked)
	got, err := s.Hooks.GetHook(ctx, h.ID)
	must(t, err)
	if got.URL != h.URL || got.Secret != h.Secret || len(got.Events) != 2 || got.RemovedAt != nil {
		t.Fatalf("read back %+v", got)
	}
	wantCondition(t, s.Hooks.PutHook(ctx, h), h.ID)
	list, err := s.Hooks.ListHooks(ctx)
	must(t, err)
	if len(list) != 1 || list[0].Secret != h.Secret {
		t.Fatalf("list %+v", list)
	}
}

func hookSpawnEventQueued(t *testing.T, s HookStores) {
	hears := newHook(t, s.Hooks, hooks.SpawnRequested)
	newHook(t, s.Hooks, hooks.SpawnTimeout)
	req := spawnRequested(t, s.Store)
	due := claimAll(t, s.Hooks, base.Add(time.Second))
	if len(due) != 1 || due[0].Delivery.HookID != hears.ID || due[0].Message.Type != hooks.SpawnRequested {
		t.Fatalf("due %+v", due)
	}
	if string(due[0].Message.Data) == "" || due[0].Message.ID == "" || due[0].Delivery.MessageID != due[0].Message.ID {
		t.Fatalf("message %+v", due[0].Message)
	}
	var found bool
	for _, b := range []string{req} {
		found = found || containsStr(string(due[0].Message.Data), b)
	}
	if !found {
		t.Fatalf("the message does not name %s: %s", req, due[0].Message.Data)
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func hookConditionFailedQueuesNothing(t *testing.T, s HookStores) {
	newHook(t, s.Hooks, hooks.SpawnRequested)
	ctx := context.Background()
	e := ledger.Entity{ID: ids.New(ids.Claim, base), Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: base, UpdatedAt: base, Version: 2}
	ev := ledger.Event{ID: ids.New(ids.Event, base), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: ids.New(ids.Spawn, base), At: base}
	// The entity does not exist at version 1: the condition fails.
	err := s.Store.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e, PrevVersion: 1}}, Events: []ledger.Event{ev}})
	wantCondition(t, err, e.ID)
	if due := claimAll(t, s.Hooks, base.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("a rolled-back commit queued %+v", due)
	}
}

func hookApprovalAndHeldQueued(t *testing.T, s HookStores) {
	ctx := context.Background()
	newHook(t, s.Hooks, hooks.ApprovalAsked, hooks.ApprovalEnded, hooks.ConfirmationHeld)
	ses := approvals.Session{ID: ids.New(ids.Session, base), Tier: approvals.ReadOnly, OpenedAt: base}
	must(t, s.Approvals.CreateSession(ctx, ses))
	a := approvals.Approval{ID: ids.New(ids.Approval, base), SessionID: ses.ID, CallID: "c1", From: ses.Tier, To: approvals.WorkspaceWrite,
		Preview: "make", Reason: "build", Asked: true, State: approvals.Pending, CreatedAt: base, Deadline: base.Add(time.Minute)}
	f := approvals.RequestFrame(a)
	must(t, s.Approvals.CreateApproval(ctx, a, &f))
	// A request refused before it was asked announces nothing.
	unasked := approvals.Approval{ID: ids.New(ids.Approval, base), SessionID: ses.ID, CallID: "c2", To: approvals.WorkspaceWrite, State: approvals.Pending, CreatedAt: base, Deadline: base}
	unasked, _ = approvals.Resolve(unasked, approvals.Decision{Verdict: approvals.Refused, Cause: approvals.CauseNoSubscriber}, base)
	must(t, s.Approvals.CreateApproval(ctx, unasked, nil))
	r, _ := approvals.Resolve(a, approvals.Decision{Verdict: approvals.Refused, Cause: approvals.CauseAnswer}, base.Add(time.Second))
	must(t, s.Approvals.ResolveApproval(ctx, r))
	// A second resolution loses and announces nothing.
	wantCondition(t, s.Approvals.ResolveApproval(ctx, r), a.ID)
	must(t, s.Confirmations.PutConfirmation(ctx, confirm.Pending{ID: ids.New(ids.Confirmation, base), Tool: "lock", State: confirm.StatePending, RequestedAt: base, ExpiresAt: base.Add(time.Hour)}))
	due := claimAll(t, s.Hooks, base.Add(time.Hour))
	got := map[hooks.EventType]int{}
	for _, d := range due {
		got[d.Message.Type]++
	}
	if len(due) != 3 || got[hooks.ApprovalAsked] != 1 || got[hooks.ApprovalEnded] != 1 || got[hooks.ConfirmationHeld] != 1 {
		t.Fatalf("queued %v", got)
	}
}

func hookClaimLease(t *testing.T, s HookStores) {
	newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	if due := claimAll(t, s.Hooks, base.Add(-time.Second)); len(due) != 0 {
		t.Fatal("claimed before it was due")
	}
	now := base.Add(time.Second)
	first := claimAll(t, s.Hooks, now)
	if len(first) != 1 {
		t.Fatalf("claimed %d", len(first))
	}
	if again := claimAll(t, s.Hooks, now.Add(service.DeliveryLease/2)); len(again) != 0 {
		t.Fatal("claimed twice within the lease")
	}
	// The worker died: after the lease the same message is due again, same id.
	later := claimAll(t, s.Hooks, now.Add(service.DeliveryLease+time.Second))
	if len(later) != 1 || later[0].Message.ID != first[0].Message.ID {
		t.Fatalf("after the lease %+v", later)
	}
}

func hookAttemptsLogged(t *testing.T, s HookStores) {
	ctx := context.Background()
	h := newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	if _, ok, err := s.Hooks.LastAttempt(ctx, h.ID); err != nil || ok {
		t.Fatalf("a last attempt before any: %v %v", ok, err)
	}
	now := base.Add(time.Second)
	d := claimAll(t, s.Hooks, now)[0].Delivery
	a1 := hooks.Attempt{MessageID: d.MessageID, HookID: h.ID, N: 1, At: now, Status: 500, LatencyMS: 3, Outcome: hooks.Retry}
	d = hooks.Next(d, a1, 0, 0)
	must(t, s.Hooks.RecordAttempt(ctx, a1, d))
	if due := claimAll(t, s.Hooks, d.NextAt.Add(-time.Millisecond)); len(due) != 0 {
		t.Fatal("due before its backoff")
	}
	d = claimAll(t, s.Hooks, d.NextAt)[0].Delivery
	a2 := hooks.Attempt{MessageID: d.MessageID, HookID: h.ID, N: 2, At: d.NextAt, Status: 200, LatencyMS: 2, Outcome: hooks.Delivered}
	d = hooks.Next(d, a2, 0, 0)
	must(t, s.Hooks.RecordAttempt(ctx, a2, d))
	if due := claimAll(t, s.Hooks, base.Add(48*time.Hour)); len(due) != 0 {
		t.Fatal("a delivered message is due again")
	}
	pg, err := s.Hooks.Deliveries(ctx, h.ID, store.DeliveryFilter{Deliveries: 10, Attempts: 10})
	must(t, err)
	ds, as := pg.Deliveries, pg.Attempts
	if len(ds) != 1 || ds[0].State != hooks.StateDelivered || ds[0].Attempts != 2 || len(as) != 2 || as[0].N != 2 || as[1].Status != 500 {
		t.Fatalf("deliveries %+v attempts %+v", ds, as)
	}
	last, ok, err := s.Hooks.LastAttempt(ctx, h.ID)
	must(t, err)
	if !ok || last.Outcome != hooks.Delivered {
		t.Fatalf("last %+v", last)
	}
}

func hookRemove(t *testing.T, s HookStores) {
	ctx := context.Background()
	h := newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	must(t, s.Hooks.RemoveHook(ctx, h.ID, base.Add(time.Second)))
	if err := s.Hooks.RemoveHook(ctx, h.ID, base.Add(2*time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second remove: %v", err)
	}
	spawnRequested(t, s.Store)
	if due := claimAll(t, s.Hooks, base.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("a removed hook still gets %+v", due)
	}
	pg, err := s.Hooks.Deliveries(ctx, h.ID, store.DeliveryFilter{Deliveries: 10})
	must(t, err)
	if ds := pg.Deliveries; len(ds) != 1 || ds[0].State != hooks.StateFailed || len(pg.Attempts) != 0 {
		t.Fatalf("deliveries %+v", pg)
	}
	got, err := s.Hooks.GetHook(ctx, h.ID)
	must(t, err)
	if got.RemovedAt == nil {
		t.Fatal("not marked removed")
	}
}

func hookConcurrentClaims(t *testing.T, s HookStores) {
	newHook(t, s.Hooks, hooks.SpawnRequested)
	for range 10 {
		spawnRequested(t, s.Store)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			due, err := s.Hooks.ClaimDue(context.Background(), base.Add(time.Second), service.DeliveryLease, 3)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, d := range due {
				seen[d.Message.ID]++
			}
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	// Workers that lost a claim take the rest on their next pass.
	for range 10 {
		due, err := s.Hooks.ClaimDue(context.Background(), base.Add(time.Second), service.DeliveryLease, 3)
		must(t, err)
		for _, d := range due {
			seen[d.Message.ID]++
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s claimed %d times", id, n)
		}
	}
	if len(seen) != 10 {
		t.Errorf("claimed %d of 10", len(seen))
	}
}

func hookReminderQueuedOnce(t *testing.T, s HookStores) {
	ctx := context.Background()
	second := newHook(t, s.Hooks, hooks.ApprovalReminder)
	newHook(t, s.Hooks, hooks.ApprovalAsked)
	ses := approvals.Session{ID: ids.New(ids.Session, base), Tier: approvals.ReadOnly, OpenedAt: base}
	must(t, s.Approvals.CreateSession(ctx, ses))
	a := approvals.Approval{ID: ids.New(ids.Approval, base), SessionID: ses.ID, CallID: "c1", From: ses.Tier, To: approvals.WorkspaceWrite,
		Preview: "make", Reason: "build", Asked: true, State: approvals.Pending, CreatedAt: base, Deadline: base.Add(10 * time.Minute)}
	a.RemindAt = approvals.ReminderAt(a.CreatedAt, a.Deadline, 0.5)
	f := approvals.RequestFrame(a)
	must(t, s.Approvals.CreateApproval(ctx, a, &f))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := s.Approvals.SendReminder(ctx, a, *a.RemindAt); err != nil && !store.FailedOn(err, a.ID) {
				t.Errorf("reminder: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	reminders := 0
	for _, d := range claimAll(t, s.Hooks, base.Add(time.Hour)) {
		if d.Message.Type == hooks.ApprovalReminder {
			reminders++
			if d.Delivery.HookID != second.ID {
				t.Errorf("a hook that does not hear approval.reminder got one: %s", d.Delivery.HookID)
			}
		}
	}
	if reminders != 1 {
		t.Fatalf("%d reminders queued, want exactly 1", reminders)
	}
}
