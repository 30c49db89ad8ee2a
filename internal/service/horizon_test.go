package service_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// handOvers is a scheduler that records what it is handed, spawns and
// questions alike, in order; failing makes it refuse.
type handOvers struct {
	mu      sync.Mutex
	ids     []string
	at      map[string]time.Time
	failing bool
}

func (h *handOvers) ScheduleTimeout(_ context.Context, id string, at time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing {
		return errors.New("queue unavailable")
	}
	if h.at == nil {
		h.at = map[string]time.Time{}
	}
	h.ids = append(h.ids, id)
	h.at[id] = at
	return nil
}

func (h *handOvers) ScheduleApprovalTimeout(ctx context.Context, id string, deadline time.Time) error {
	return h.ScheduleTimeout(ctx, id, deadline)
}

func (h *handOvers) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.ids
	h.ids = nil
	return ids
}

// issue asks for a spawn on a fresh verified claim with its own timeout.
func (e *env) issue(timeout time.Duration) spawn.Request {
	e.t.Helper()
	old := e.svc.SpawnTimeout
	e.svc.SpawnTimeout = timeout
	defer func() { e.svc.SpawnTimeout = old }()
	return e.spawnReq(spawn.Assume, e.verified(fmt.Sprintf("claim due in %v", timeout)))
}

func TestEachTickHandsOverExactlyTheSpawnsThatEnteredTheHorizonSinceThePreviousOne(t *testing.T) {
	e := newEnv(t)
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	// The tick (at T0+k minutes) that must hand each spawn over; 0: none.
	// The window is (now+14m, now+15m]: 16m is the upper end of tick 1
	// and so not in tick 2, whose window starts just after it.
	cases := []struct {
		timeout time.Duration
		tick    int
	}{
		{90 * time.Second, 0}, // within the horizon when issued
		{15*time.Minute + 30*time.Second, 1},
		{16 * time.Minute, 1},
		{16*time.Minute + time.Second, 2},
		{17 * time.Minute, 2},
		{20 * time.Minute, 5},
		{24 * time.Hour, 0},                  // far beyond the ticks run here
		{20*time.Minute + 30*time.Second, 0}, // resolved by its callback at tick 2
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = e.issue(c.timeout).RequestID
	}
	h.take() // what Spawns.Request itself handed over: not the horizon's
	handed := map[string][]int{}
	for tick := 1; tick <= 30; tick++ {
		e.clock.Advance(time.Minute)
		if tick == 2 {
			e.transition(ledger.Doubt, e.spawnEntity(ids[len(ids)-1]), ids[len(ids)-1])
			h.take()
		}
		n, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 100)
		if err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		got := h.take()
		if n != len(got) {
			t.Fatalf("tick %d: reported %d, handed over %d", tick, n, len(got))
		}
		for _, id := range got {
			handed[id] = append(handed[id], tick)
		}
	}
	for i, c := range cases {
		want := []int{}
		if c.tick > 0 {
			want = []int{c.tick}
		}
		if got := handed[ids[i]]; !slices.Equal(got, want) {
			t.Errorf("timeout %v: handed over at ticks %v, want %v", c.timeout, got, want)
		}
	}
}

func (e *env) spawnEntity(requestID string) string {
	e.t.Helper()
	sp, err := e.store.GetSpawn(ctx, requestID)
	if err != nil {
		e.t.Fatal(err)
	}
	return sp.EntityID
}

func TestSpawnsAlreadyDueAreLeftToTheDueSweep(t *testing.T) {
	e := newEnv(t)
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	late := e.issue(2 * time.Minute)                // due a minute ago at the tick
	now := e.issue(3 * time.Minute)                 // due exactly at the tick
	soon := e.issue(3*time.Minute + 30*time.Second) // due 30 s after it
	h.take()
	e.clock.Advance(3 * time.Minute)
	// A window reaching 9 minutes into the past: only the future counts.
	n, err := e.svc.ScheduleComingDue(ctx, time.Minute, 10*time.Minute, 100)
	if got := h.take(); err != nil || n != 1 || !slices.Equal(got, []string{soon.RequestID}) {
		t.Fatalf("handed over %v (%d, %v), want only %s", got, n, err, soon.RequestID)
	}
	if !h.at[soon.RequestID].Equal(soon.ExpiresAt) {
		t.Fatalf("handed over for %v, want its expires_at %v", h.at[soon.RequestID], soon.ExpiresAt)
	}
	rep, err := e.svc.Sweep(ctx, 100)
	if err != nil || len(rep.TimedOut) != 2 {
		t.Fatalf("the due sweep: %+v %v, want %s and %s timed out", rep, err, late.RequestID, now.RequestID)
	}
}

func TestQuestionsComingDueAreHandedOverOnceLikeSpawns(t *testing.T) {
	e := newApprovalEnv(t)
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	e.svc.Approvals.Timeout = time.Hour
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	h.take()
	var ticks []int
	for tick := 1; tick <= 60; tick++ {
		e.clock.Advance(time.Minute)
		if _, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 100); err != nil {
			t.Fatal(err)
		}
		if got := h.take(); len(got) > 0 {
			if !slices.Equal(got, []string{a.ID}) {
				t.Fatalf("tick %d handed over %v", tick, got)
			}
			ticks = append(ticks, tick)
		}
	}
	if !slices.Equal(ticks, []int{45}) || !h.at[a.ID].Equal(a.Deadline) {
		t.Fatalf("handed over at ticks %v for %v, want once at tick 45 for the deadline %v", ticks, h.at[a.ID], a.Deadline)
	}
	e.svc.Escalations.Cancel(ctx, a.ID, "done", "")
}

func TestWithoutASchedulerOrApprovalsThereIsNothingToHandOver(t *testing.T) {
	e := newEnv(t)
	e.issue(16 * time.Minute)
	e.clock.Advance(time.Minute)
	if n, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 100); n != 0 || err != nil {
		t.Fatalf("no scheduler: %d %v", n, err)
	}
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h // approvals stay unwired: spawns only, no approvals-unavailable
	if n, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 100); n != 1 || err != nil {
		t.Fatalf("no approvals: %d %v", n, err)
	}
}

func TestASchedulerFailureEndsTheTickWithScheduleFailed(t *testing.T) {
	e := newEnv(t)
	e.issue(16 * time.Minute)
	e.issue(16 * time.Minute)
	e.clock.Advance(time.Minute)
	h := &handOvers{failing: true}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	n, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 100)
	if n != 0 || !errs.Is(err, service.ScheduleFailed) {
		t.Fatalf("%d %v, want 0 and %s", n, err, service.ScheduleFailed)
	}
	if e := present.Explain(err); len(e.Remediation) == 0 || e.Remediation[0].Command == "" {
		t.Fatalf("%s without remediation", service.ScheduleFailed)
	}
}

// A busy project: more spawns come due within the horizon than one tick
// reads; the window is still reached, because the store reads its range
// and not everything due before its end.
func TestATickReachesItsWindowWhateverIsDueBeforeIt(t *testing.T) {
	e := newEnv(t)
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	for range 5 {
		e.issue(5 * time.Minute) // inside the horizon, before the window
	}
	inWindow := e.issue(15*time.Minute - 30*time.Second).RequestID
	h.take()
	n, err := e.svc.ScheduleComingDue(ctx, 15*time.Minute, time.Minute, 2)
	if got := h.take(); err != nil || n != 1 || !slices.Equal(got, []string{inWindow}) {
		t.Fatalf("handed over %v (%d, %v), want only %s", got, n, err, inWindow)
	}
}

// ComingDue reads a window page by page: a full read ends the page before
// its last item's time, so consecutive pages from Through cover the
// window without a gap; what is due by now is never in it.
func TestComingDuePagesThroughItsWindowWithoutAGap(t *testing.T) {
	e := newEnv(t)
	h := &handOvers{}
	e.svc.Scheduler, e.svc.ApprovalScheduler = h, h
	var want []string
	e.issue(time.Minute) // due by the time the window is read
	for i := range 5 {
		want = append(want, e.issue(20*time.Minute+time.Duration(i)*time.Minute).RequestID)
	}
	e.issue(time.Hour) // beyond the window
	e.clock.Advance(2 * time.Minute)
	now := e.clock.Now()
	var got []string
	after, until := now.Add(-time.Hour), now.Add(30*time.Minute)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("no end of pages")
		}
		page, err := e.svc.ComingDue(ctx, after, until, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Due {
			if !slices.Contains(got, d.ID) {
				got = append(got, d.ID)
			}
		}
		if !page.More {
			if !page.Through.Equal(until) {
				t.Fatalf("the last page ends at %v, want the window's end %v", page.Through, until)
			}
			break
		}
		after = page.Through
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want the five in the window, in order: %v", got, want)
	}
}
