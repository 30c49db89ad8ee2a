package service_test

// Tests named after the scenarios of the spawn protocol, docs/design.md §5.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/store/sqlite/sqlitetest"
	"github.com/dont-cli/dont/internal/tools"
)

// clock is a settable clock shared by goroutines.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) service(st store.Store) *service.Service {
	return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Clock: c.Now, SpawnTimeout: time.Hour, Author: "test"})
}

type env struct {
	t     *testing.T
	path  string
	store *sqlite.Store
	clock *clock
	svc   *service.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dont.db")
	st := sqlitetest.Fresh(t, path)
	t.Cleanup(func() { st.Close() })
	c := newClock()
	e := &env{t: t, path: path, store: st, clock: c, svc: c.service(st)}
	t.Cleanup(func() { invariants.Require(t, e.svc) }) // every scenario ends with the invariant checker
	return e
}

// another opens a second, independent connection to the same file, as a
// second process would.
func (e *env) another() *service.Service {
	st, err := sqlite.Open(e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return e.clock.service(st)
}

var ctx = context.Background()

// call runs a tool the way every transport does, through tools.Call and
// so under the sweep-first policy: the scenarios' "every invocation sweeps
// first" is the tool surface's.
func call(svc *service.Service, tool string, args map[string]any) (tools.Output, error) {
	return tools.Call(ctx, svc, tool, args)
}

// spawnCall asks for a spawn through its tool (assume, overlook, guess).
func spawnCall(c context.Context, svc *service.Service, in service.SpawnInput) (tools.Output, error) {
	a := map[string]any{"mode": string(in.Mode)}
	if in.Kind == spawn.Guess {
		a["question"], a["n"] = in.Question, in.N
		if in.Temperature != nil {
			a["temperature"] = *in.Temperature
		}
	} else {
		a["id"] = in.EntityID
	}
	return tools.Call(c, svc, string(in.Kind), a)
}

func (e *env) conclude(statement string) string {
	e.t.Helper()
	res, err := call(e.svc, "conclude", map[string]any{"statement": statement})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Data.(service.EntityView).ID
}

func (e *env) transition(action ledger.Action, id, requestID string) tools.Output {
	e.t.Helper()
	res, err := call(e.svc, string(action), callbackArgs(action, id, requestID))
	if err != nil {
		e.t.Fatalf("%s %s: %v", action, id, err)
	}
	return res
}

// callbackArgs are callbackInput's arguments as a tool call takes them.
func callbackArgs(action ledger.Action, id, requestID string) map[string]any {
	in := callbackInput(action, id, requestID)
	a := map[string]any{"id": in.EntityID}
	if in.RequestID != "" {
		a["request_id"] = in.RequestID
	}
	if in.Evidence != nil {
		a["evidence"] = in.Evidence
	} else {
		a["reason"] = in.Reason
	}
	return a
}

func callbackInput(action ledger.Action, id, requestID string) service.TransitionInput {
	in := service.TransitionInput{Action: action, EntityID: id, RequestID: requestID}
	if action == ledger.Verify {
		in.Evidence = []string{"https://example.org/source"}
	} else {
		in.Reason = "the cited table gives 99.97 C at 1 atm, not 100 C"
	}
	return in
}

func (e *env) spawnReq(kind spawn.Kind, id string) spawn.Request {
	e.t.Helper()
	res, err := call(e.svc, string(kind), map[string]any{"id": id, "mode": string(spawn.ModeHarness)})
	if err != nil {
		e.t.Fatalf("%s %s: %v", kind, id, err)
	}
	if res.Kind != envelope.KindSpawnRequest {
		e.t.Fatalf("envelope_kind = %s, want spawn_request", res.Kind)
	}
	var req spawn.Request
	if err := json.Unmarshal(res.Data.(json.RawMessage), &req); err != nil {
		e.t.Fatal(err)
	}
	return req
}

func (e *env) status(id string) ledger.Status {
	e.t.Helper()
	ent, err := e.store.GetEntity(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return ent.Status
}

func (e *env) events(id string, kind ledger.EventKind) []ledger.Event {
	e.t.Helper()
	evs, err := e.store.Events(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []ledger.Event
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// verifiedDependent is a verified claim that depends on another verified
// claim, dep: doubting dep moves it (stale) beside any spawn of its own,
// the one move of an entity under review that is neither its callback nor
// a person's.
func (e *env) verifiedDependent() (id, dep string) {
	e.t.Helper()
	dep = e.verified("the barometer read 1 atm at the time")
	res, err := call(e.svc, "conclude", map[string]any{"statement": "water boiled at 100 C here", "depends_on": []string{dep}})
	if err != nil {
		e.t.Fatal(err)
	}
	id = res.Data.(service.EntityView).ID
	e.transition(ledger.Verify, id, "")
	return id, dep
}

func (e *env) verified(statement string) string {
	id := e.conclude(statement)
	e.transition(ledger.Verify, id, "")
	return id
}

func warningCodes(res tools.Output) []envelope.WarningCode {
	var out []envelope.WarningCode
	for _, w := range res.Warnings {
		out = append(out, w.Code)
	}
	return out
}

func hasWarning(res tools.Output, code envelope.WarningCode) bool {
	for _, w := range res.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func TestAssumeEmitsSpawnRequestInHarnessMode(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	if req.RequestKind != spawn.Assume || req.EntityID != id || !strings.HasPrefix(req.RequestID, "spawn:") {
		t.Fatalf("request = %+v", req)
	}
	if !req.Context.Clean || req.Callback.RequestID != req.RequestID || !req.ExpiresAt.Equal(req.IssuedAt.Add(time.Hour)) {
		t.Fatalf("request context/callback/expiry wrong: %+v", req)
	}
}

func TestOverlookEmitsAdversarialSpawnRequest(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Overlook, id)
	if !strings.Contains(req.Context.Prompt, "Assume the claim below is wrong and try to explain why") {
		t.Fatalf("overlook prompt is not adversarial:\n%s", req.Context.Prompt)
	}
	if assume := e.spawnReqAfterResolve(id); strings.Contains(assume, "is wrong") {
		t.Fatalf("assume prompt must not be adversarial:\n%s", assume)
	}
}

func (e *env) spawnReqAfterResolve(id string) string {
	pending, _ := e.store.GetEntity(ctx, id)
	e.transition(ledger.Verify, id, pending.PendingSpawn)
	return e.spawnReq(spawn.Assume, id).Context.Prompt
}

func TestGuessRequestsCandidateSet(t *testing.T) {
	e := newEnv(t)
	res, err := call(e.svc, "guess", map[string]any{"question": "What is the boiling point of water at 2000 m?", "n": 3, "mode": string(spawn.ModeHarness)})
	if err != nil {
		t.Fatal(err)
	}
	var req spawn.Request
	json.Unmarshal(res.Data.(json.RawMessage), &req)
	if res.Kind != envelope.KindSpawnRequest || req.RequestKind != spawn.Guess || req.N < 2 {
		t.Fatalf("guess gave %s %+v, want a spawn request for several candidates", res.Kind, req)
	}
	if got := strings.Join(req.Callback.Actions, ","); got != "answer" {
		t.Fatalf("guess callback actions = %s, want answer", got)
	}
	list, _ := e.store.ListEntities(ctx, store.EntityFilter{})
	if len(list) != 0 {
		t.Fatalf("guess wrote %d entities to the claim store directly", len(list))
	}
}

func TestGuessCarriesCandidateCountAndTemperature(t *testing.T) {
	e := newEnv(t)
	temp := 0.7
	res, err := call(e.svc, "guess", map[string]any{"question": "q?", "n": 3, "temperature": temp, "mode": string(spawn.ModeHarness)})
	if err != nil {
		t.Fatal(err)
	}
	raw := string(res.Data.(json.RawMessage))
	if !strings.Contains(raw, `"n":3`) || !strings.Contains(raw, `"temperature":0.7`) {
		t.Fatalf("spawn request lost n/temperature: %s", raw)
	}
	// The answer path resolves it and concludes the most agreed candidate.
	var req spawn.Request
	json.Unmarshal(res.Data.(json.RawMessage), &req)
	ans, err := call(e.svc, "answer", map[string]any{"request_id": req.RequestID, "candidate": []string{"about 93 C", "About  93 C", "95 C"}})
	if err != nil {
		t.Fatal(err)
	}
	data := ans.Data.(service.Answered)
	if c := data.Claim; c.Statement != "about 93 C" || c.Status != ledger.Unverified {
		t.Fatalf("answer concluded %+v", c)
	}
	if tally := data.Tally; tally[0].Count != 2 || tally[1].Count != 1 {
		t.Fatalf("tally = %+v", tally)
	}
}

func TestDirectModeBypassesSpawnEnvelope(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	for _, in := range []map[string]any{
		{"tool": "assume", "id": id, "mode": string(spawn.ModeDirect)},
		{"tool": "overlook", "id": id, "mode": string(spawn.ModeDirect)},
		{"tool": "guess", "question": "q?", "n": 3, "mode": string(spawn.ModeDirect)},
	} {
		tool := in["tool"].(string)
		delete(in, "tool")
		res, err := call(e.svc, tool, in)
		if res.Kind == envelope.KindSpawnRequest {
			t.Fatalf("%s in direct mode emitted a spawn_request", tool)
		}
		// No provider is configured here: direct mode must refuse, never fall back.
		if !errs.Is(err, errs.ConfigMissing) {
			t.Fatalf("%s direct without provider: %v, want config-missing", tool, err)
		}
	}
	if st := e.status(id); st != ledger.Verified {
		t.Fatalf("refused direct call changed status to %s", st)
	}
	if sps, _ := e.store.ListSpawns(ctx, store.SpawnFilter{}); len(sps) != 0 {
		t.Fatalf("refused direct call stored %d spawns", len(sps))
	}
}

func TestSubagentToolPermissionsAreRestricted(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	if got := strings.Join(req.Context.AllowedTools, ","); got != "show,dismiss,trust" {
		t.Fatalf("allowed_tools = %s", got)
	}
	if got := strings.Join(req.Callback.Actions, ","); got != "dismiss,trust" {
		t.Fatalf("callback actions = %s", got)
	}
	for _, f := range []string{"lock", "ignore", "conclude", "assume"} {
		if !strings.Contains(strings.Join(req.Context.ForbiddenTools, ","), f) {
			t.Fatalf("forbidden_tools lacks %s: %v", f, req.Context.ForbiddenTools)
		}
	}
	// Only dismiss and trust are terminal actions of a verification spawn.
	_, _, err := e.svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Lock, EntityID: id, RequestID: req.RequestID})
	if !errs.Is(err, errs.Usage) {
		t.Fatalf("lock with a request id: %v, want usage error", err)
	}
	if sp, _ := e.store.GetSpawn(ctx, req.RequestID); sp.State != spawn.Pending {
		t.Fatalf("a refused action resolved the spawn")
	}
}

func TestExpiredSpawnRecordsTimeoutEvent(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(time.Hour + time.Second)
	if _, err := call(e.svc, "list", nil); err != nil { // any invocation sweeps first
		t.Fatal(err)
	}
	evs := e.events(id, ledger.EvSpawnTimeout)
	if len(evs) != 1 {
		t.Fatalf("%d spawn_timeout events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.RequestID != req.RequestID || ev.EntityID != id || ev.Detail["expires_at"] == nil || ev.Detail["timed_out_at"] == nil || ev.Detail["issued_at"] == nil {
		t.Fatalf("spawn_timeout event lacks the timeout timestamps: %+v", ev)
	}
}

func TestTimeoutRestoresPreSpawnStatus(t *testing.T) {
	for _, pre := range []ledger.Status{ledger.Verified, ledger.Doubted, ledger.Unverified} {
		t.Run(string(pre), func(t *testing.T) {
			e := newEnv(t)
			id := e.conclude("water boils at 100 C at sea level")
			switch pre {
			case ledger.Verified:
				e.transition(ledger.Verify, id, "")
			case ledger.Doubted:
				e.transition(ledger.Doubt, id, "")
			}
			e.spawnReq(spawn.Assume, id)
			if st := e.status(id); st != ledger.Unverified {
				t.Fatalf("under review: %s, want unverified", st)
			}
			e.clock.Advance(2 * time.Hour)
			call(e.svc, "list", nil)
			if st := e.status(id); st != pre {
				t.Fatalf("after timeout: %s, want pre-spawn %s", st, pre)
			}
		})
	}
}

func TestTimeoutDoesNotAutoRespawn(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour)
	for i := 0; i < 3; i++ {
		call(e.svc, "list", nil)
		e.clock.Advance(2 * time.Hour)
	}
	sps, _ := e.store.ListSpawns(ctx, store.SpawnFilter{})
	if len(sps) != 1 {
		t.Fatalf("%d spawns after timeout, want the original only", len(sps))
	}
	if ent, _ := e.store.GetEntity(ctx, id); ent.PendingSpawn != "" {
		t.Fatalf("entity still has pending spawn %s", ent.PendingSpawn)
	}
	// A caller must re-run assume explicitly, and that works.
	e.spawnReq(spawn.Assume, id)
}

func TestTimeoutLeavesAMovedEntityAlone(t *testing.T) {
	e := newEnv(t)
	id, dep := e.verifiedDependent()
	req := e.spawnReq(spawn.Assume, id)
	e.transition(ledger.Doubt, dep, "") // its dependency is doubted meanwhile: it goes stale
	e.clock.Advance(2 * time.Hour)
	call(e.svc, "list", nil)
	if st := e.status(id); st != ledger.Stale {
		t.Fatalf("timeout overwrote a newer status: %s, want stale", st)
	}
	evs := e.events(id, ledger.EvSpawnTimeout)
	if len(evs) != 1 || evs[0].RequestID != req.RequestID || evs[0].To != "" {
		t.Fatalf("want one spawn_timeout with no status change, got %+v", evs)
	}
}

func TestAtMostOnePendingVerificationSpawnPerEntity(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	first := e.spawnReq(spawn.Assume, id)
	_, err := call(e.svc, "overlook", map[string]any{"id": id, "mode": string(spawn.ModeHarness)})
	if !errs.Is(err, errs.SpawnPending) {
		t.Fatalf("second spawn: %v, want spawn-pending", err)
	}
	found := false
	for _, r := range present.Explain(err).Remediation {
		found = found || strings.Contains(r.Command+r.Description, first.RequestID)
	}
	if !found {
		t.Fatalf("spawn-pending remediation does not name %s: %+v", first.RequestID, present.Explain(err).Remediation)
	}
}

func TestPendingViewExcludesExpiredRequests(t *testing.T) {
	e := newEnv(t)
	a, b, c := e.conclude("a holds"), e.conclude("b holds"), e.conclude("c holds")
	e.spawnReq(spawn.Assume, a)
	e.clock.Advance(30 * time.Minute)
	rb := e.spawnReq(spawn.Assume, b)
	e.clock.Advance(10 * time.Minute)
	rc := e.spawnReq(spawn.Overlook, c)
	e.clock.Advance(25 * time.Minute) // a's request is now expired
	res, err := call(e.svc, "spawns", map[string]any{"pending": true})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Data.(service.SpawnList).Spawns
	if len(got) != 2 || got[0].ID != rb.RequestID || got[1].ID != rc.RequestID {
		t.Fatalf("pending = %v, want [%s %s] oldest first", got, rb.RequestID, rc.RequestID)
	}
}

func TestTimedOutViewIsolatesUnresolvedExpiries(t *testing.T) {
	e := newEnv(t)
	kept, reassumed, answered := e.conclude("kept"), e.conclude("reassumed"), e.conclude("answered")
	rk := e.spawnReq(spawn.Assume, kept)
	e.spawnReq(spawn.Assume, reassumed)
	ra := e.spawnReq(spawn.Assume, answered)
	e.transition(ledger.Verify, answered, ra.RequestID)
	e.clock.Advance(2 * time.Hour)
	call(e.svc, "list", nil)
	e.spawnReq(spawn.Assume, reassumed) // re-assumed since timeout: no longer relevant
	res, err := call(e.svc, "spawns", map[string]any{"timed_out": true})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Data.(service.SpawnList).Spawns
	if len(got) != 1 || got[0].ID != rk.RequestID {
		t.Fatalf("timed-out = %+v, want only %s", got, rk.RequestID)
	}
	all, _ := call(e.svc, "spawns", map[string]any{"all": true})
	if n := all.Data.(service.SpawnList).Count; n != 4 {
		t.Fatalf("all = %v spawns, want 4", n)
	}
}

func TestUnknownRequestIdRefusesCallback(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	for _, rid := range []string{"spawn:01HX05A9K8VP0000000000000A", "spawn:not-a-ulid", "claim:01HX05A9K8VP0000000000000A"} {
		_, err := call(e.svc, "dismiss", callbackArgs(ledger.Verify, id, rid))
		if !errs.Is(err, errs.SpawnNotFound) || present.Exit(err) != 3 {
			t.Fatalf("%s: %v (exit %d), want spawn-not-found exit 3", rid, err, present.Exit(err))
		}
	}
	if st := e.status(id); st != ledger.Unverified {
		t.Fatalf("refused callback changed status to %s", st)
	}
}

func TestExpiredCallbackStillAppliesWhenUnresolved(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(time.Hour + time.Minute) // expired, and nothing has swept yet
	res := e.transition(ledger.Doubt, id, req.RequestID)
	if !hasWarning(res, "spawn-expired") {
		t.Fatalf("warnings = %v, want spawn-expired", warningCodes(res))
	}
	if st := e.status(id); st != ledger.Doubted {
		t.Fatalf("late callback not applied: %s", st)
	}
	if n := len(e.events(id, ledger.EvSpawnTimeout)); n != 0 {
		t.Fatalf("the sweep also resolved it: %d timeout events", n)
	}
	sp, _ := e.store.GetSpawn(ctx, req.RequestID)
	if sp.Outcome != spawn.CallbackApplied {
		t.Fatalf("outcome = %s", sp.Outcome)
	}
}

func TestDuplicateTerminalCallbackDoesNotReApplyTransition(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.transition(ledger.Verify, id, req.RequestID)
	res := e.transition(ledger.Doubt, id, req.RequestID)
	if !hasWarning(res, "spawn-duplicate") || res.Warnings[0].Outcome != string(spawn.CallbackApplied) {
		t.Fatalf("warnings = %+v, want spawn-duplicate naming callback-applied", res.Warnings)
	}
	if st := e.status(id); st != ledger.Verified {
		t.Fatalf("duplicate re-applied: %s", st)
	}
	if n := len(e.events(id, ledger.EvTrusted)); n != 0 {
		t.Fatalf("duplicate recorded %d trusted events", n)
	}
}

func TestCallbackWinsIfCommittedFirst(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour)
	e.transition(ledger.Doubt, id, req.RequestID) // commits first (late, unresolved)
	rep, err := e.svc.Sweep(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.TimedOut) != 0 {
		t.Fatalf("sweep resolved an already-resolved request: %+v", rep)
	}
	if st := e.status(id); st != ledger.Doubted {
		t.Fatalf("status %s, want the callback's doubted (no restore to verified)", st)
	}
}

func TestTimeoutWinsIfCommittedFirst(t *testing.T) {
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	e.clock.Advance(2 * time.Hour)
	if rep, err := e.svc.Sweep(ctx, 100); err != nil || len(rep.TimedOut) != 1 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	res := e.transition(ledger.Doubt, id, req.RequestID)
	if !hasWarning(res, "spawn-lost-to-timeout") || res.Warnings[0].Outcome != string(spawn.TimeoutRestored) {
		t.Fatalf("warnings = %+v, want spawn-lost-to-timeout", res.Warnings)
	}
	if st := e.status(id); st != ledger.Verified {
		t.Fatalf("late callback mutated status to %s after the timeout restored verified", st)
	}
}

// Sweeps and callbacks run at once, each on its own connection (as
// separate processes would).
func TestTimeoutAndCallbackRaceYieldsOneStatusMutation(t *testing.T) {
	for round := 0; round < 10; round++ {
		e := newEnv(t)
		id := e.verified("water boils at 100 C at sea level")
		req := e.spawnReq(spawn.Assume, id)
		e.clock.Advance(2 * time.Hour)
		const n = 8
		var applied, timedOut, callbackWarned atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			svc := e.another()
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					rep, err := svc.Sweep(ctx, 100)
					if err != nil {
						t.Error(err)
					}
					timedOut.Add(int32(len(rep.TimedOut)))
					return
				}
				res, err := call(svc, string(ledger.Doubt), callbackArgs(ledger.Doubt, id, req.RequestID))
				if err != nil {
					t.Error(err)
					return
				}
				if r := res.Data.(service.EntityView).Resolution; r != nil && r.Applied {
					applied.Add(1)
				} else if hasWarning(res, "spawn-duplicate") || hasWarning(res, "spawn-lost-to-timeout") {
					callbackWarned.Add(1)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if applied.Load()+timedOut.Load() != 1 {
			t.Fatalf("round %d: %d callbacks applied and %d timeouts committed, want exactly one resolver", round, applied.Load(), timedOut.Load())
		}
		if applied.Load()+callbackWarned.Load() != n/2 {
			t.Fatalf("round %d: of %d callbacks %d applied and %d warned; every loser must be warned", round, n/2, applied.Load(), callbackWarned.Load())
		}
		mutations := len(e.events(id, ledger.EvTrusted)) + countRestores(e.events(id, ledger.EvSpawnTimeout))
		if mutations != 1 {
			t.Fatalf("round %d: %d status mutations for one request", round, mutations)
		}
		want := ledger.Doubted
		if timedOut.Load() == 1 {
			want = ledger.Verified
		}
		if st := e.status(id); st != want {
			t.Fatalf("round %d: status %s, want %s", round, st, want)
		}
	}
}

func countRestores(evs []ledger.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.To != "" {
			n++
		}
	}
	return n
}

func TestConcurrentDuplicateCallbacksResolveOnce(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	req := e.spawnReq(spawn.Assume, id)
	const n = 12
	var applied, duplicates atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		svc := e.another()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			action := ledger.Verify
			if i%2 == 1 {
				action = ledger.Doubt
			}
			res, err := call(svc, string(action), callbackArgs(action, id, req.RequestID))
			if err != nil {
				t.Error(err)
				return
			}
			if res.Data.(service.EntityView).Resolution.Applied {
				applied.Add(1)
			} else if hasWarning(res, "spawn-duplicate") {
				duplicates.Add(1)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if applied.Load() != 1 || duplicates.Load() != n-1 {
		t.Fatalf("applied=%d duplicates=%d, want 1 and %d", applied.Load(), duplicates.Load(), n-1)
	}
	if got := len(e.events(id, ledger.EvSpawnResolved)); got != 1 {
		t.Fatalf("%d spawn_resolved events", got)
	}
}

func TestDoubtCascadesStaleToDependents(t *testing.T) {
	e := newEnv(t)
	root := e.verified("the thermometer was calibrated")
	mid, err := call(e.svc, "conclude", map[string]any{"statement": "the reading is 100 C", "depends_on": []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	midID := mid.Data.(service.EntityView).ID
	e.transition(ledger.Verify, midID, "")
	leaf, _ := call(e.svc, "conclude", map[string]any{"statement": "so water boiled", "depends_on": []string{midID}})
	leafID := leaf.Data.(service.EntityView).ID
	e.transition(ledger.Doubt, root, "")
	if e.status(midID) != ledger.Stale || e.status(leafID) != ledger.Stale {
		t.Fatalf("after doubting the root: mid %s, leaf %s; want both stale", e.status(midID), e.status(leafID))
	}
	if evs := e.events(leafID, ledger.EvStaleCascaded); len(evs) != 1 || evs[0].From != ledger.Unverified {
		t.Fatalf("leaf stale_cascaded events: %+v", evs)
	}
	if _, err := e.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "x", DependsOn: []string{"claim:01HX05A9K8VP0000000000000A"}}); !errs.Is(err, errs.DependencyNotFound) {
		t.Fatalf("unknown dependency: %v", err)
	}
}
