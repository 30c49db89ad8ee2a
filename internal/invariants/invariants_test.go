package invariants_test

import (
	"context"
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

var ctx = context.Background()

type fixture struct {
	t     *testing.T
	store *sqlite.Store
	now   atomic.Int64
	svc   *service.Service
}

func newFixture(t *testing.T) *fixture {
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, store: st}
	f.now.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	f.svc = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, SpawnTimeout: time.Hour, Author: "test", Clock: func() time.Time { return time.Unix(0, f.now.Load()).UTC() }})
	return f
}

func (f *fixture) advance(d time.Duration) { f.now.Add(int64(d)) }

func (f *fixture) claim() string {
	res, err := f.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level"})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.ID
}

func (f *fixture) assume(id string) string {
	res, _, err := f.svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness})
	if err != nil {
		f.t.Fatal(err)
	}
	return requestID(f.t, res)
}

func requestID(t *testing.T, res service.Spawned) string {
	var r spawn.Request
	if err := json.Unmarshal(res.Request, &r); err != nil || r.RequestID == "" {
		t.Fatalf("not a spawn request: %v", err)
	}
	return r.RequestID
}

func (f *fixture) dismiss(id, requestID string) {
	if _, _, err := f.svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id,
		Evidence: []string{"https://example.org/boiling"}, RequestID: requestID}); err != nil {
		f.t.Fatal(err)
	}
}

// healthy builds a store with every kind of history: a callback win, a
// timeout restore, a guess answered, a plain doubt.
func (f *fixture) healthy() (claimA, claimB, won, timedOut string) {
	claimA, claimB = f.claim(), f.claim()
	won = f.assume(claimA)
	f.dismiss(claimA, won)
	timedOut = f.assume(claimB)
	f.advance(2 * time.Hour)
	if _, err := f.svc.Sweep(ctx, 100); err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.svc.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: claimB, Reason: "the boiling point depends on pressure"}); err != nil {
		f.t.Fatal(err)
	}
	g, _, err := f.svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Guess, Question: "what is the boiling point of water?", N: 3, Mode: spawn.ModeHarness})
	if err != nil {
		f.t.Fatal(err)
	}
	gid := requestID(f.t, g)
	if _, _, err := f.svc.Spawns.Answer(ctx, service.GuessAnswer{RequestID: gid, Candidates: []string{"100 C", "100 c", "99.97 C"}}); err != nil {
		f.t.Fatal(err)
	}
	return claimA, claimB, won, timedOut
}

func (f *fixture) verify() invariants.Report {
	rep, err := invariants.Verify(ctx, f.svc)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func wantRule(t *testing.T, rep invariants.Report, rule, id string) {
	t.Helper()
	for _, v := range rep.Violations {
		if v.Rule == rule && v.ID == id {
			if v.Message == "" || v.Remediate == "" {
				t.Fatalf("violation without message or remediation: %+v", v)
			}
			return
		}
	}
	t.Fatalf("want a %s violation on %s, got: %s", rule, id, rep.Error())
}

func TestAHealthyStoreHasNoViolations(t *testing.T) {
	f := newFixture(t)
	f.healthy()
	rep := f.verify()
	if !rep.OK() {
		t.Fatal(rep.Error())
	}
	if rep.Entities != 3 || rep.Spawns != 3 || rep.Events < 10 {
		t.Fatalf("checked too little: %+v", rep)
	}
}

func TestADuplicatedTerminalEventIsCaught(t *testing.T) {
	f := newFixture(t)
	claimA, _, won, _ := f.healthy()
	// A second resolver's event lands for a request that already has one.
	now := f.svc.Clock()
	dup := ledger.Event{ID: ids.New(ids.Event, now), Kind: ledger.EvSpawnTimeout, EntityID: claimA, RequestID: won, At: now, Outcome: string(spawn.TimeoutRestored)}
	if err := f.store.Commit(ctx, store.Tx{Events: []ledger.Event{dup}}); err != nil {
		t.Fatal(err)
	}
	wantRule(t, f.verify(), invariants.RuleOneTerminal, won)
}

func TestAStatusThatDisagreesWithTheFoldIsCaught(t *testing.T) {
	f := newFixture(t)
	claimA, _, _, _ := f.healthy()
	e, err := f.store.GetEntity(ctx, claimA)
	if err != nil {
		t.Fatal(err)
	}
	e2 := e
	e2.Status, e2.Version = ledger.Locked, e.Version+1 // a write without its event
	if err := f.store.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}}}); err != nil {
		t.Fatal(err)
	}
	rep := f.verify()
	wantRule(t, rep, invariants.RuleStatusIsFold, claimA)
	if !strings.Contains(rep.Error(), "stored status locked") || !strings.Contains(rep.Error(), "fold to verified") {
		t.Fatalf("message does not say what disagrees: %s", rep.Error())
	}
}

func TestAnOverduePendingSpawnIsCaughtWithoutASweep(t *testing.T) {
	f := newFixture(t)
	id := f.claim()
	req := f.assume(id)
	f.advance(2 * time.Hour)
	d, err := invariants.Read(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	wantRule(t, invariants.Check(d, f.svc.Clock()), invariants.RuleNoOverdue, req)
	// The same store is healthy once the sweep doctor runs first has run.
	if rep := f.verify(); !rep.OK() {
		t.Fatal(rep.Error())
	}
}

func TestAHalfAppliedResolutionIsCaught(t *testing.T) {
	f := newFixture(t)
	id := f.claim()
	req := f.assume(id)
	sp, err := f.store.GetSpawn(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	sp.State, sp.Outcome = spawn.Resolved, spawn.CallbackApplied // no event, entity untouched
	if err := f.store.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sp}}}); err != nil {
		t.Fatal(err)
	}
	rep := f.verify()
	wantRule(t, rep, invariants.RuleResolvedHasEvent, req)
	wantRule(t, rep, invariants.RulePendingLink, id)
}

func TestPureCheckOverHandMadeData(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	e := ledger.Entity{ID: "claim:A", Status: ledger.Doubted, PendingSpawn: "spawn:2"}
	d := invariants.Data{
		Entities: []ledger.Entity{e},
		Events: []ledger.Event{
			{Kind: ledger.EvConcluded, EntityID: e.ID, To: ledger.Unverified},
			{Kind: ledger.EvSpawnResolved, EntityID: e.ID, RequestID: "spawn:1", Outcome: string(spawn.CallbackApplied)},
			{Kind: ledger.EvSpawnTimeout, EntityID: e.ID, RequestID: "spawn:1", Outcome: string(spawn.TimeoutRestored)},
		},
		Spawns: []spawn.Spawn{
			{ID: "spawn:1", EntityID: e.ID, State: spawn.Resolved, Outcome: spawn.CallbackApplied, ExpiresAt: at},
			{ID: "spawn:2", EntityID: e.ID, State: spawn.Pending, ExpiresAt: at.Add(-time.Second)},
			{ID: "spawn:3", EntityID: e.ID, State: spawn.Pending, ExpiresAt: at.Add(time.Hour)},
		},
		Approvals: []approvals.Approval{
			{ID: "apr:1", SessionID: "ses:1", State: approvals.Pending, Asked: true, Deadline: at.Add(-time.Minute)},
			{ID: "apr:2", SessionID: "ses:1", State: approvals.Resolved, Asked: true, Verdict: approvals.Approved, Announced: true},
			{ID: "apr:3", SessionID: "ses:1", State: approvals.Resolved, Asked: true, Verdict: approvals.Refused},
		},
		Frames: []approvals.Frame{
			{SessionID: "ses:1", Cursor: 1, Kind: approvals.FrameRequested, RequestID: "apr:1"},
			{SessionID: "ses:1", Cursor: 2, Kind: approvals.FrameRequested, RequestID: "apr:2"},
			{SessionID: "ses:1", Cursor: 3, Kind: approvals.FrameRequested, RequestID: "apr:3"},
			{SessionID: "ses:1", Cursor: 4, Kind: approvals.FrameResolved, RequestID: "apr:2", Verdict: approvals.Approved},
			{SessionID: "ses:1", Cursor: 5, Kind: approvals.FrameResolved, RequestID: "apr:2", Verdict: approvals.Approved},
		},
	}
	rep := invariants.Check(d, at)
	wantRule(t, rep, invariants.RuleOneTerminal, "spawn:1")
	wantRule(t, rep, invariants.RuleStatusIsFold, e.ID)
	wantRule(t, rep, invariants.RuleNoOverdue, "spawn:2")
	wantRule(t, rep, invariants.RulePendingLink, e.ID)
	wantRule(t, rep, invariants.RulePendingLink, "spawn:3")
	wantRule(t, rep, invariants.RuleNoOverdue, "apr:1")
	wantRule(t, rep, invariants.RuleOneTerminal, "apr:2")      // two ending frames
	wantRule(t, rep, invariants.RuleResolvedHasEvent, "apr:3") // resolved, never announced
	wantRule(t, rep, invariants.RuleFrameLog, "apr:2")         // and the approvals' own audit agrees
}

// A store without AllEvents is read entity by entity (and request by
// request for entity-less events): the same healthy store stays healthy.
func TestReadingEventByEventFindsTheSameHistory(t *testing.T) {
	f := newFixture(t)
	f.healthy()
	if _, err := invariants.SweepAll(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	all, err := invariants.Read(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	one, err := invariants.Read(ctx, struct{ invariants.Source }{f.store})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Events) != len(all.Events) {
		t.Fatalf("entity by entity read %d events, AllEvents %d", len(one.Events), len(all.Events))
	}
	if rep := invariants.Check(one, f.svc.Clock()); !rep.OK() {
		t.Fatal(rep.Error())
	}
}
