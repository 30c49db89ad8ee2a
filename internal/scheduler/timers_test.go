package scheduler_test

import (
	"context"
	"errors"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"pgregory.net/rapid"
)

// fakeExpirer records calls; due says when each request is really due,
// fail makes the first n calls of a request fail.
type fakeExpirer struct {
	mu    sync.Mutex
	due   map[string]time.Time
	fail  map[string]int
	calls map[string][]time.Time
	done  chan string
}

func newFake() *fakeExpirer {
	return &fakeExpirer{due: map[string]time.Time{}, fail: map[string]int{}, calls: map[string][]time.Time{}, done: make(chan string, 100)}
}

func (f *fakeExpirer) ExpireSpawn(_ context.Context, id string) (service.TimeoutResult, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.calls[id] = append(f.calls[id], now)
	if f.fail[id] > 0 {
		f.fail[id]--
		return service.TimeoutResult{}, 0, errors.New("store busy")
	}
	if left := f.due[id].Sub(now); left > 0 {
		return service.TimeoutResult{RequestID: id}, left, nil
	}
	f.done <- id
	return service.TimeoutResult{RequestID: id, Outcome: spawn.TimeoutRestored}, 0, nil
}

func (f *fakeExpirer) callCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[id])
}

func run(t *testing.T, tm *scheduler.Timers, exp scheduler.Expirer) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { tm.Run(ctx, exp); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
}

func waitDone(t *testing.T, f *fakeExpirer, want ...string) map[string]time.Time {
	t.Helper()
	got := map[string]time.Time{}
	deadline := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case id := <-f.done:
			got[id] = time.Now()
		case <-deadline:
			t.Fatalf("expired %v, want %v", got, want)
		}
	}
	return got
}

func TestTimersExpireEachSpawnWhenDueInExpiryOrder(t *testing.T) {
	f := newFake()
	tm := &scheduler.Timers{}
	run(t, tm, f)
	start := time.Now()
	for _, c := range []struct {
		id string
		in time.Duration
	}{{"spawn:c", 150 * time.Millisecond}, {"spawn:a", 50 * time.Millisecond}, {"spawn:b", 100 * time.Millisecond}} {
		f.due["spawn:"+c.id[6:]] = start.Add(c.in)
		tm.ScheduleTimeout(context.Background(), c.id, start.Add(c.in))
	}
	got := waitDone(t, f, "spawn:a", "spawn:b", "spawn:c")
	if !(got["spawn:a"].Before(got["spawn:b"]) && got["spawn:b"].Before(got["spawn:c"])) {
		t.Fatalf("expired out of order: %v", got)
	}
	for id, at := range got {
		if at.Before(f.due[id]) {
			t.Errorf("%s expired %v before it was due", id, f.due[id].Sub(at))
		}
		if lag := at.Sub(f.due[id]); lag > time.Second {
			t.Errorf("%s expired %v late", id, lag)
		}
		if n := f.callCount(id); n != 1 {
			t.Errorf("%s: %d calls, want 1", id, n)
		}
	}
	if tm.Len() != 0 {
		t.Fatalf("%d timers left", tm.Len())
	}
}

func TestTimersRearmASpawnThatIsNotYetDueForTheRemainder(t *testing.T) {
	f := newFake()
	tm := &scheduler.Timers{}
	run(t, tm, f)
	now := time.Now()
	f.due["spawn:x"] = now.Add(120 * time.Millisecond) // the store's clock says later
	tm.ScheduleTimeout(context.Background(), "spawn:x", now.Add(20*time.Millisecond))
	got := waitDone(t, f, "spawn:x")
	if got["spawn:x"].Before(f.due["spawn:x"]) {
		t.Fatal("expired before the store said it was due")
	}
	if n := f.callCount("spawn:x"); n != 2 {
		t.Fatalf("%d calls, want 2 (early, then for the remainder)", n)
	}
}

func TestTimersRetryAFailedExpiry(t *testing.T) {
	f := newFake()
	tm := &scheduler.Timers{}
	run(t, tm, f)
	f.fail["spawn:r"] = 1
	tm.ScheduleTimeout(context.Background(), "spawn:r", time.Now())
	waitDone(t, f, "spawn:r")
	if n := f.callCount("spawn:r"); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

func TestTimersHoldOneTimerPerSpawnAndAreBounded(t *testing.T) {
	tm := &scheduler.Timers{Capacity: 2}
	later := time.Now().Add(time.Hour)
	for _, id := range []string{"spawn:1", "spawn:1", "spawn:2", "spawn:3"} {
		if err := tm.ScheduleTimeout(context.Background(), id, later); err != nil {
			t.Fatal(err)
		}
	}
	if tm.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tm.Len())
	}
}

// A resolved spawn's timer goes at once: it is not expired when its time
// comes, the spawns around it are, in order, and forgetting a spawn the
// timers never held does nothing.
func TestTimersForgetAResolvedSpawn(t *testing.T) {
	f := newFake()
	tm := &scheduler.Timers{}
	run(t, tm, f)
	start := time.Now()
	for id, in := range map[string]time.Duration{"spawn:a": 50 * time.Millisecond, "spawn:b": 100 * time.Millisecond, "spawn:c": 150 * time.Millisecond} {
		f.due[id] = start.Add(in)
		tm.ScheduleTimeout(context.Background(), id, start.Add(in))
	}
	tm.CancelTimeout("spawn:b")
	tm.CancelTimeout("spawn:never-held")
	if tm.Len() != 2 {
		t.Fatalf("Len = %d after forgetting one of three, want 2", tm.Len())
	}
	got := waitDone(t, f, "spawn:a", "spawn:c")
	if !got["spawn:a"].Before(got["spawn:c"]) {
		t.Fatalf("expired out of order: %v", got)
	}
	// spawn:b was due before spawn:c: had its timer stayed, it would have
	// been expired first.
	if n := f.callCount("spawn:b"); n != 0 {
		t.Fatalf("the forgotten spawn:b was expired %d times", n)
	}
}

// Any mix of schedules and cancels leaves the heap expiring exactly the
// spawns still held, each once, in expiry order.
func TestTimersExpireWhatIsLeftInOrderAfterAnyCancels(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		base := time.Unix(1_700_000_000, 0)
		tm := &scheduler.Timers{Now: func() time.Time { return base.Add(time.Hour) }}
		held := map[string]time.Time{}
		ids := rapid.SampledFrom([]string{"spawn:1", "spawn:2", "spawn:3", "spawn:4", "spawn:5", "spawn:6", "spawn:7", "spawn:8"})
		for range rapid.IntRange(0, 40).Draw(rt, "ops") {
			id := ids.Draw(rt, "id")
			if rapid.Bool().Draw(rt, "cancel") {
				tm.CancelTimeout(id)
				delete(held, id)
				continue
			}
			due := base.Add(time.Duration(rapid.IntRange(0, 30).Draw(rt, "due")) * time.Minute)
			tm.ScheduleTimeout(context.Background(), id, due)
			if _, ok := held[id]; !ok {
				held[id] = due // a spawn already held keeps its timer
			}
		}
		if tm.Len() != len(held) {
			rt.Fatalf("Len = %d, want %d", tm.Len(), len(held))
		}
		f := newFake()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := make(chan struct{})
		go func() { tm.Run(ctx, f); close(stopped) }()
		var order []string
		for range held {
			select {
			case id := <-f.done:
				order = append(order, id)
			case <-time.After(5 * time.Second):
				rt.Fatalf("expired %v of %v", order, held)
			}
		}
		cancel()
		<-stopped
		for i, id := range order {
			if _, ok := held[id]; !ok || f.callCount(id) != 1 {
				rt.Fatalf("expired %s (%d calls), held %v", id, f.callCount(id), held)
			}
			if i > 0 && held[id].Before(held[order[i-1]]) {
				rt.Fatalf("expired out of order: %v, due %v", order, held)
			}
		}
	})
}

// With the real service over SQLite: a spawn's callback takes its timer
// away in the same call, so a resolved spawn never waits in the heap.
func TestTimersForgetASpawnOnceItsCallbackResolvesIt(t *testing.T) {
	ctx := context.Background()
	_, tm, svc := timedService(t, time.Hour)
	res, spawned := assumed(t, svc)
	if tm.Len() != 1 {
		t.Fatalf("the spawn did not reach the scheduler (Len = %d)", tm.Len())
	}
	_, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: res.ID, RequestID: spawned.Spawn.ID,
		Evidence: []string{"https://example.org/source"}})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Len() != 0 {
		t.Fatalf("%d timers left after the callback resolved the spawn", tm.Len())
	}
}

// timedService is the real service over a new SQLite store, with the
// timers it schedules on running.
func timedService(t *testing.T, timeout time.Duration) (*sqlite.Store, *scheduler.Timers, *service.Service) {
	t.Helper()
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tm := &scheduler.Timers{}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, SpawnTimeout: timeout, Author: "test", Scheduler: tm})
	run(t, tm, svc)
	return st, tm, svc
}

// assumed is a new claim and the pending assume spawn on it.
func assumed(t *testing.T, svc *service.Service) (service.EntityView, service.Spawned) {
	t.Helper()
	ctx := context.Background()
	res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level"})
	if err != nil {
		t.Fatal(err)
	}
	spawned, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: res.ID})
	if err != nil {
		t.Fatal(err)
	}
	return res, spawned
}

// With the real service over SQLite: the timer alone, no sweep, commits
// the spawn_timeout and restores the pre-spawn status (verified).
func TestTimersTimeOutARealSpawnWithoutASweep(t *testing.T) {
	ctx := context.Background()
	st, tm, svc := timedService(t, 200*time.Millisecond)

	res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.ID
	if _, _, err := svc.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id, Evidence: []string{"https://example.org/source"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Len() != 1 {
		t.Fatalf("the spawn did not reach the scheduler (Len = %d)", tm.Len())
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := st.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == ledger.EvSpawnTimeout {
				expires, _ := time.Parse(time.RFC3339Nano, ev.Detail["expires_at"].(string))
				if ev.At.Before(expires) {
					t.Fatalf("timed out at %v, before expires_at %v", ev.At, expires)
				}
				e, _ := st.GetEntity(ctx, id)
				if e.Status != ledger.Verified || e.PendingSpawn != "" {
					t.Fatalf("entity after timeout: status %s pending %q", e.Status, e.PendingSpawn)
				}
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no spawn_timeout within 5s")
}

// dont serve's timers follow a heartbeat: the timer armed for the old
// expiry finds the spawn not yet due, re-arms for the new one, and the
// timeout is committed no earlier than the moved expiry.
func TestTimersFollowAHeartbeatThatMovedTheExpiry(t *testing.T) {
	ctx := context.Background()
	st, _, svc := timedService(t, 200*time.Millisecond)
	_, spawned := assumed(t, svc)
	hb, _, err := svc.Spawns.Heartbeat(ctx, spawned.Spawn.ID, 700*time.Millisecond, nil)
	if err != nil || !hb.Moved {
		t.Fatalf("heartbeat %+v %v", hb, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sp, err := st.GetSpawn(ctx, spawned.Spawn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sp.State == spawn.Resolved {
			if sp.Outcome != spawn.TimeoutRestored || sp.ResolvedAt.Before(hb.ExpiresAt) {
				t.Fatalf("resolved %s at %v, moved expiry %v", sp.Outcome, sp.ResolvedAt, hb.ExpiresAt)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no timeout within 5s of the moved expiry")
}
