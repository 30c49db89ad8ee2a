package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// dont serve's policy: the ticker ends due questions every sweep interval,
// so a call's sweep-first ends them at most once per that interval; an
// answer between two such sweeps still reads the deadline itself, and
// expired spawns are swept by every call.
func TestARateLimitedSweepFirstEndsDueQuestionsAtMostOncePerInterval(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	swept, answered := e.ask(ses, "c1", approvals.WorkspaceWrite), e.ask(ses, "c2", approvals.WorkspaceWrite)
	at := newClock()
	at.ns.Store(swept.Deadline.Add(-500 * time.Millisecond).UnixNano())
	svc := e.other(at)
	svc.SweepPolicy = service.SweepFirstPolicy{ApprovalsEvery: time.Second}
	svc.SpawnTimeout = 500 * time.Millisecond
	id, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(svc, "assume", map[string]any{"id": id.ID}); err != nil { // takes the interval's turn
		t.Fatal(err)
	}
	state := func(id string) approvals.State {
		t.Helper()
		a, err := e.store.GetApproval(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.State
	}
	at.Advance(time.Second - time.Millisecond) // both questions and the spawn are due; the interval is not over
	if _, err := call(svc, "list", nil); err != nil {
		t.Fatal(err)
	}
	if state(swept.ID) != approvals.Pending {
		t.Fatalf("a call within the interval ended a due question: %s", state(swept.ID))
	}
	if v, err := e.store.GetEntity(ctx, id.ID); err != nil || v.Status != ledger.Unverified || v.PendingSpawn != "" {
		t.Fatalf("the expired spawn was not timed out by the call's sweep-first: %+v %v", v, err)
	}
	res, err := decision(svc.Escalations.Approve(ctx, answered.ID, "late"))
	if err != nil || !hasWarning(res, "approval-expired") {
		t.Fatalf("an answer after the deadline, between two sweeps: %v %v", warningCodes(res), err)
	}
	at.Advance(time.Millisecond) // the interval is over: the next call sweeps questions
	if _, err := call(svc, "list", nil); err != nil {
		t.Fatal(err)
	}
	if state(swept.ID) == approvals.Pending {
		t.Fatal("the first call after the interval left a due question pending")
	}
	for _, a := range []approvals.Approval{swept, answered} {
		if rec := e.record(a.ID); rec.Verdict != approvals.TimedOut || len(endings(e.frames(ses), a.ID)) != 1 {
			t.Fatalf("%s: %s with %d ending frames", a.ID, rec.Verdict, len(endings(e.frames(ses), a.ID)))
		}
	}
}

// The sweep after a callback concerns other spawns only (the callback
// resolved its own request and answered before it ran), so dont serve runs
// it at most once per interval; a command that then touches one of those
// other spawns sweeps first and sees its timeout committed.
func TestARateLimitedSweepAfterACallbackLeavesOtherSpawnsToTheNextSweepFirst(t *testing.T) {
	e := newEnv(t)
	e.svc.SweepPolicy = service.SweepFirstPolicy{AfterEvery: time.Second}
	e.svc.SpawnTimeout = 500 * time.Millisecond
	var ids, rids []string
	for _, st := range []string{"water boils at 100 C", "ice melts at 0 C", "salt dissolves in water"} {
		id := e.conclude(st)
		ids, rids = append(ids, id), append(rids, e.spawnReq(spawn.Assume, id).RequestID)
	}
	if _, err := call(e.svc, "dismiss", callbackArgs(ledger.Verify, ids[2], rids[2])); err != nil { // takes the interval's turn
		t.Fatal(err)
	}
	e.clock.Advance(600 * time.Millisecond) // the other two are due; the interval is not over
	late, err := call(e.svc, "dismiss", callbackArgs(ledger.Verify, ids[0], rids[0]))
	if err != nil || !hasWarning(late, "spawn-expired") {
		t.Fatalf("a late callback: %v %v", warningCodes(late), err)
	}
	if v, err := e.store.GetEntity(ctx, ids[1]); err != nil || v.PendingSpawn != rids[1] {
		t.Fatalf("the callback's sweep ran within the interval: %+v %v", v, err)
	}
	shown, err := call(e.svc, "show", map[string]any{"id": ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	var v ledger.Entity
	if b, _ := envelope.MarshalData(shown.Data); json.Unmarshal(b, &v) != nil || v.PendingSpawn != "" || v.Status != ledger.Unverified {
		t.Fatalf("show of an expired spawn's claim did not see its timeout first: %+v", v)
	}
}

// counted is the SQLite store with every operation of the service's Store
// port counted (the probe too): what a call costs a store, whatever the
// store.
type counted struct {
	*sqlite.Store
	ops atomic.Int64
}

func (c *counted) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	c.ops.Add(1)
	return c.Store.GetEntity(ctx, id)
}
func (c *counted) ListEntities(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error) {
	c.ops.Add(1)
	return c.Store.ListEntities(ctx, f)
}
func (c *counted) Dependents(ctx context.Context, id string) ([]ledger.Entity, error) {
	c.ops.Add(1)
	return c.Store.Dependents(ctx, id)
}
func (c *counted) Events(ctx context.Context, id string) ([]ledger.Event, error) {
	c.ops.Add(1)
	return c.Store.Events(ctx, id)
}
func (c *counted) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	c.ops.Add(1)
	return c.Store.GetSpawn(ctx, id)
}
func (c *counted) ListSpawns(ctx context.Context, f store.SpawnFilter) ([]spawn.Spawn, error) {
	c.ops.Add(1)
	return c.Store.ListSpawns(ctx, f)
}
func (c *counted) ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error) {
	c.ops.Add(1)
	return c.Store.ExpiringSpawns(ctx, after, until, limit)
}
func (c *counted) Commit(ctx context.Context, tx store.Tx) error {
	c.ops.Add(1)
	return c.Store.Commit(ctx, tx)
}
func (c *counted) AnythingDue(ctx context.Context, now time.Time) (bool, error) {
	c.ops.Add(1)
	return c.Store.AnythingDue(ctx, now)
}

// A backlog of due spawns is the sweeper's: each call's sweep-first times
// out at most service.InlineSweep of them, so its added work is bounded
// whatever the backlog, and every call still settles the spawn of what it
// acts on first — a show, a new spawn and a cancel each see the due
// spawn they touch timed out, not pending.
func TestABacklogOfDueSpawnsAddsBoundedWorkToACallThatStillSettlesWhatItTouches(t *testing.T) {
	e := newEnv(t)
	e.svc.SpawnTimeout = time.Minute
	backlog := 1000
	if testing.Short() {
		// Two commits per spawn, each synced: -short keeps a backlog far
		// past InlineSweep; .ci/run's race step runs the whole one.
		backlog = 200
	}
	var ids, rids []string
	for i := range backlog {
		v, err := e.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d of the backlog", i)})
		if err != nil {
			t.Fatal(err)
		}
		sp, _, err := e.svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: v.ID, Mode: spawn.ModeHarness})
		if err != nil {
			t.Fatal(err)
		}
		ids, rids = append(ids, v.ID), append(rids, sp.Spawn.ID)
	}
	e.clock.Advance(2 * time.Minute) // every one is due; the youngest are far from the oldest InlineSweep
	st := &counted{Store: e.store}
	svc := e.clock.service(st)
	due := func() int {
		t.Helper()
		d, err := e.store.ExpiringSpawns(ctx, time.Time{}, e.clock.Now(), 2*backlog)
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	// What a call costs on top of its own work: its bounded sweep-first
	// (one probe, one index read, InlineSweep timeouts of a few operations
	// each) and the settling of the one entity it shows.
	const bound = 2 + service.InlineSweep*4 + 8
	shown, err := call(svc, "show", map[string]any{"id": ids[backlog-1]})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.ops.Load(); n > bound {
		t.Fatalf("a show with %d due spawns cost %d store operations, want at most %d", backlog, n, bound)
	}
	if left := due(); left != backlog-service.InlineSweep-1 {
		t.Fatalf("%d due spawns left after one call, want %d (InlineSweep and the shown one)", left, backlog-service.InlineSweep-1)
	}
	var v ledger.Entity
	if b, _ := envelope.MarshalData(shown.Data); json.Unmarshal(b, &v) != nil || v.PendingSpawn != "" || v.Status != ledger.Unverified {
		t.Fatalf("show of a claim whose spawn is due, behind a backlog, did not see its timeout first: %+v", v)
	}
	st.ops.Store(0)
	if _, err := call(svc, "assume", map[string]any{"id": ids[backlog-2], "mode": string(spawn.ModeHarness)}); err != nil {
		t.Fatalf("a new spawn on a claim whose spawn is due, behind a backlog: %v", err)
	}
	if n := st.ops.Load(); n > bound+4 {
		t.Fatalf("a spawn request with a backlog cost %d store operations, want at most %d", n, bound+4)
	}
	if _, err := call(svc, "spawns.cancel", map[string]any{"request_id": rids[backlog-3]}); err != nil {
		t.Fatal(err)
	}
	if sp, err := e.store.GetSpawn(ctx, rids[backlog-3]); err != nil || sp.Outcome != spawn.TimeoutRestored {
		t.Fatalf("a cancel of a due spawn behind a backlog committed %q, want its timeout first (%v)", sp.Outcome, err)
	}
}
