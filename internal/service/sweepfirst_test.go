package service_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
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
