package tools_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

var ctx = context.Background()

type fixture struct {
	t     *testing.T
	path  string
	store *sqlite.Store
	now   *atomic.Int64
	svc   *service.Service
}

func newFixture(t *testing.T) *fixture {
	path := filepath.Join(t.TempDir(), "dont.db")
	st, err := sqlite.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, path: path, store: st, now: &atomic.Int64{}}
	f.now.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	f.svc = f.service(st)
	return f
}

func (f *fixture) service(st *sqlite.Store) *service.Service {
	return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "test", Clock: func() time.Time { return time.Unix(0, f.now.Load()).UTC() }})
}

// another is a second connection to the same file, as another server process.
func (f *fixture) another() *service.Service {
	st, err := sqlite.Open(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { st.Close() })
	return f.service(st)
}

func (f *fixture) call(name string, args map[string]any) tools.Output {
	f.t.Helper()
	res, err := tools.Call(ctx, f.svc, name, args)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	return res
}

// shown is the digest of held call id as a person sees it
// (confirmations show): a confirm sends it back.
func (f *fixture) shown(id string) string {
	f.t.Helper()
	return f.call("confirmations.show", map[string]any{"id": id}).Data.(service.ConfirmationView).ShownDigest
}

func (f *fixture) events() int {
	evs, err := f.store.AllEvents(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(evs)
}

func (f *fixture) verified() string {
	id := f.call("conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).Data.(service.EntityView).ID
	f.call("dismiss", map[string]any{"id": id, "evidence": []any{"https://example.org/bp"}})
	return id
}

func (f *fixture) status(id string) ledger.Status {
	e, err := f.store.GetEntity(ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return e.Status
}

func heldID(t *testing.T, res tools.Output) string {
	t.Helper()
	h, ok := res.Data.(service.HeldView)
	if !ok || h.Status != confirm.StatusPending || h.State != confirm.StatePending {
		t.Fatalf("not held: %+v", res)
	}
	return h.ID
}

func TestAHeldCallChangesNothingUntilConfirmedThenRunsExactlyOnce(t *testing.T) {
	f := newFixture(t)
	id := f.verified()
	before := f.events()
	res, err := tools.CallGated(ctx, f.svc, "lock", map[string]any{"id": id, "reason": "settled"}, confirm.Arrival{})
	if err != nil {
		t.Fatal(err)
	}
	conf := heldID(t, res)
	digest := f.shown(conf)
	if f.events() != before || f.status(id) != ledger.Verified {
		t.Fatalf("holding the call changed the ledger: %d events (was %d), status %s", f.events(), before, f.status(id))
	}
	// Sixteen approvers on separate connections confirm at once.
	const n = 16
	var ran, dups atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(svc *service.Service) {
			defer wg.Done()
			r, err := tools.Call(service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleApprover, TokenID: "tok:approver"}), svc, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": digest})
			switch {
			case err != nil:
				t.Error(err)
			case len(r.Warnings) == 1 && r.Warnings[0].Code == "confirmation-duplicate":
				dups.Add(1)
			case r.Kind == string(ledger.KindClaim):
				ran.Add(1)
			default:
				t.Errorf("unexpected result %+v", r)
			}
		}(f.another())
	}
	wg.Wait()
	if ran.Load() != 1 || dups.Load() != n-1 {
		t.Fatalf("ran %d times (%d duplicates), want exactly once", ran.Load(), dups.Load())
	}
	locked := 0
	evs, _ := f.store.AllEvents(ctx)
	for _, ev := range evs {
		if ev.Kind == ledger.EvLocked {
			locked++
		}
	}
	if locked != 1 || f.status(id) != ledger.Locked {
		t.Fatalf("%d locked events, status %s", locked, f.status(id))
	}
	shown := f.call("confirmations.show", map[string]any{"id": conf}).Data.(service.ConfirmationView)
	if shown.State != confirm.StateExecuted || shown.Outcome == nil || !shown.Outcome.OK || shown.DecidedBy != "tok:approver" {
		t.Fatalf("record %+v", shown)
	}
	if _, err := tools.Call(ctx, f.svc, "confirmations.refuse", map[string]any{"id": conf}); !errs.Is(err, confirm.Closed) {
		t.Fatalf("refusing an executed call: %v", err)
	}
}

// A person confirms the held call they were shown; a confirm that names
// the digest of another held call (or none) runs nothing, and the held
// call stays pending for the person to see again.
func TestAConfirmOfAnotherHeldCallsDigestRunsNothing(t *testing.T) {
	f := newFixture(t)
	id := f.verified()
	shownCall := heldID(t, mustGated(t, f, "ignore", map[string]any{"id": id, "reason": "out of scope here"}))
	otherCall := heldID(t, mustGated(t, f, "lock", map[string]any{"id": id, "reason": "settled"}))
	before := f.events()
	approver := service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleApprover, TokenID: "tok:approver"})
	if _, err := tools.Call(approver, f.svc, "confirmations.confirm", map[string]any{"id": otherCall, "shown_digest": f.shown(shownCall)}); !errs.Is(err, service.QuestionChanged) {
		t.Fatalf("a confirm with another held call's digest: %v", err)
	}
	if _, err := tools.Call(approver, f.svc, "confirmations.confirm", map[string]any{"id": otherCall}); !errs.Is(err, errs.Usage) {
		t.Fatalf("a confirm without a digest: %v", err)
	}
	if _, err := tools.Call(approver, f.svc, "confirmations.refuse", map[string]any{"id": otherCall, "shown_digest": f.shown(shownCall)}); !errs.Is(err, service.QuestionChanged) {
		t.Fatalf("a refusal with another held call's digest: %v", err)
	}
	if v := f.call("confirmations.show", map[string]any{"id": otherCall}).Data.(service.ConfirmationView); v.State != confirm.StatePending || f.events() != before {
		t.Fatalf("a confirm of another digest changed something: %s, %d events (was %d)", v.State, f.events(), before)
	}
	if r, err := tools.Call(approver, f.svc, "confirmations.confirm", map[string]any{"id": otherCall, "shown_digest": f.shown(otherCall)}); err != nil || r.Kind != string(ledger.KindClaim) {
		t.Fatalf("the confirm of what was shown: %+v %v", r, err)
	}
}

func TestARefusedOrExpiredHeldCallNeverRuns(t *testing.T) {
	f := newFixture(t)
	id := f.verified()
	refused := heldID(t, mustGated(t, f, "ignore", map[string]any{"id": id, "reason": "out of scope here"}))
	expired := heldID(t, mustGated(t, f, "lock", map[string]any{"id": id}))
	refusedDigest, expiredDigest := f.shown(refused), f.shown(expired)
	before := f.events()
	if r := f.call("confirmations.refuse", map[string]any{"id": refused, "reason": "keep it"}); r.Data.(service.ConfirmationView).State != confirm.StateRefused {
		t.Fatalf("%+v", r)
	}
	if _, err := tools.Call(ctx, f.svc, "confirmations.confirm", map[string]any{"id": refused, "shown_digest": refusedDigest}); !errs.Is(err, confirm.Closed) || present.Exit(err) != 1 {
		t.Fatalf("confirming a refused call: %v", err)
	}
	f.now.Add(int64(confirm.DefaultTTL + time.Second))
	if _, err := tools.Call(ctx, f.svc, "confirmations.confirm", map[string]any{"id": expired, "shown_digest": expiredDigest}); !errs.Is(err, confirm.Closed) {
		t.Fatalf("confirming an expired call: %v", err)
	}
	if f.events() != before || f.status(id) != ledger.Verified {
		t.Fatal("a refused or expired call ran")
	}
	list := f.call("confirmations.list", map[string]any{"all": true}).Data.(service.ConfirmationList)
	if list.Count != 2 {
		t.Fatalf("list %+v", list)
	}
	if pending := f.call("confirmations.list", nil).Data.(service.ConfirmationList); pending.Count != 0 {
		t.Fatalf("pending %+v", pending)
	}
}

func mustGated(t *testing.T, f *fixture, name string, args map[string]any) tools.Output {
	t.Helper()
	res, err := tools.CallGated(ctx, f.svc, name, args, confirm.Arrival{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheServerGateRunsConfirmedExemptAndLegacySkipCalls(t *testing.T) {
	f := newFixture(t)
	run := func(name string, args map[string]any, a confirm.Arrival) tools.Output {
		t.Helper()
		res, err := tools.CallGated(ctx, f.svc, name, args, a)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
	if tools.Held(run("tokens.create", map[string]any{"role": "harness"}, confirm.Arrival{Contract: true, CLIConfirmed: true})) {
		t.Fatal("cli_confirmed under the contract was held")
	}
	if !tools.Held(run("tokens.create", map[string]any{"role": "harness"}, confirm.Arrival{CLIConfirmed: true})) {
		t.Fatal("cli_confirmed outside the contract ran")
	}
	if tools.Held(run("tokens.create", map[string]any{"role": "harness", "skip_confirmation": true}, confirm.Arrival{})) {
		t.Fatal("legacy skip_confirmation was held")
	}
	if _, err := tools.CallGated(ctx, f.svc, "tokens.revoke-all", map[string]any{"auto_skip_confirmation": true}, confirm.Arrival{}); !errs.Is(err, confirm.NeverHeld) {
		t.Fatalf("a skip parameter on an interactive-only action: %v, want it refused and never held", err)
	}
	if tools.Held(run("tokens.manage", map[string]any{}, confirm.Arrival{})) || tools.Held(run("tokens.manage", map[string]any{"op": "list"}, confirm.Arrival{})) {
		t.Fatal("an exempt read was held")
	}
	if !tools.Held(run("tokens.manage", map[string]any{"op": "create", "role": "admin"}, confirm.Arrival{})) {
		t.Fatal("tokens manage --op create ran unconfirmed")
	}
	if _, err := tools.CallGated(ctx, f.svc, "conclude", map[string]any{"statement": "x", "skip_confirmation": true}, confirm.Arrival{}); !errs.Is(err, errs.Usage) {
		t.Fatalf("a skip parameter on an ungated tool: %v, want unknown parameter", err)
	}
	if _, err := tools.CallGated(ctx, f.svc, "lock", map[string]any{"id": "claim:x", "skip_confirmation": "true"}, confirm.Arrival{}); !errs.Is(err, confirm.InvalidSkip) {
		t.Fatalf("a string skip parameter: %v", err)
	}
	// A bad call is refused now, not held.
	if _, err := tools.CallGated(ctx, f.svc, "tokens.create", map[string]any{"role": "root"}, confirm.Arrival{}); !errs.Is(err, errs.Usage) {
		t.Fatalf("an invalid held call: %v", err)
	}
}

func TestTheConfirmationTableIsWiredToTheRegistry(t *testing.T) {
	want := map[string]string{
		"lock": "whole", "ignore": "whole", "spawns.cancel": "whole", "tokens.create": "whole", "tokens.revoke": "whole",
		"tokens.revoke-all": "interactive", "tokens.manage": "exempt", "spawns.manage": "exempt",
		"conclude": "", "show": "", "list": "", "spawns": "", "confirmations.confirm": "", "confirmations.refuse": "",
	}
	for name, kind := range want {
		tool, ok := tools.Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		g := tool.Annotations.Gate
		got := ""
		switch {
		case g.InteractiveOnly && g.RequiresConfirmation:
			got = "interactive"
		case g.ConfirmationExempt != nil && g.RequiresConfirmation:
			got = "exempt"
		case g.RequiresConfirmation:
			got = "whole"
		}
		if got != kind {
			t.Errorf("%s is %q, want %q", name, got, kind)
		}
	}
	tm, _ := tools.Lookup("tokens.manage")
	if d := tm.Annotations.ConfirmationExempt.Default; d == nil || *d != "list" {
		t.Fatal("tokens manage must declare list as the default of --op")
	}
	sm, _ := tools.Lookup("spawns.manage")
	if sm.Annotations.ConfirmationExempt.Default != nil {
		t.Fatal("spawns manage must not declare a default")
	}
}

func TestTheSchemaViews(t *testing.T) {
	props := func(s tools.Schema, name string) map[string]any {
		for _, v := range s.Tools {
			if v.Name == name {
				return v.InputSchema["properties"].(map[string]any)
			}
		}
		t.Fatalf("%s missing", name)
		return nil
	}
	legacy, yesOnly := tools.SchemaFor(false, false), tools.SchemaFor(true, true)
	if _, ok := props(legacy, "lock")["skip_confirmation"]; !ok {
		t.Fatal("the legacy view hides skip_confirmation of a gated tool")
	}
	if _, ok := props(legacy, "lock")["auto_skip_confirmation"]; !ok {
		t.Fatal("the legacy view hides auto_skip_confirmation of a gated tool")
	}
	if _, ok := props(legacy, "conclude")["skip_confirmation"]; ok {
		t.Fatal("an ungated tool lists skip_confirmation")
	}
	if _, ok := props(yesOnly, "lock")["skip_confirmation"]; ok {
		t.Fatal("the new-contract view lists skip_confirmation")
	}
	if legacy.Features.InteractiveConfirm || !yesOnly.Features.InteractiveConfirm {
		t.Fatal("features")
	}
}
