package service_test

import (
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// An agent cannot choose its own power: above the person's ceiling (by
// default workspace-write) a session needs a person; the ceiling the
// person sets moves the line both ways.
func TestAHarnessCannotOpenASessionAboveTheCeiling(t *testing.T) {
	e := newApprovalEnv(t)
	asHarness := service.WithPrincipal(ctx, auth.Harness("harness:agent"))
	open := func(ceiling approvals.Tier, who string, tier approvals.Tier) error {
		e.svc.Approvals.SessionCeiling = ceiling
		c := asHarness
		switch who {
		case "admin":
			c = service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleAdmin, TokenID: "tok:admin"})
		case "owner":
			c = service.WithPrincipal(ctx, auth.Owner("me"))
		}
		_, err := e.svc.Escalations.OpenSession(c, service.OpenSessionInput{Tier: string(tier)})
		return err
	}
	for _, c := range []struct {
		ceiling approvals.Tier
		who     string
		tier    approvals.Tier
		refused bool
	}{
		{"", "harness", approvals.DangerFullAccess, true},
		{"", "harness", approvals.WorkspaceWrite, false},
		{"", "admin", approvals.DangerFullAccess, false},
		{"", "owner", approvals.DangerFullAccess, false},
		{approvals.ReadOnly, "harness", approvals.WorkspaceWrite, true},
		{approvals.DangerFullAccess, "harness", approvals.DangerFullAccess, false},
	} {
		err := open(c.ceiling, c.who, c.tier)
		if got := errs.Is(err, service.SessionAboveCeiling); got != c.refused || (!c.refused && err != nil) {
			t.Errorf("ceiling %q, %s opens %s: %v", c.ceiling, c.who, c.tier, err)
		}
	}
	e.svc.Approvals.SessionCeiling = ""
	list, err := e.svc.Escalations.ListSessions(ctx)
	if err != nil || list.Count != 4 {
		t.Fatalf("%d sessions after 4 opens were allowed and 2 refused (%v)", list.Count, err)
	}
}

// Only the agent that asked (or its spawn's callback token, or a person)
// cancels, heartbeats or resolves its spawn.
func TestAHarnessCannotCancelHeartbeatOrResolveAnotherHarnesssSpawn(t *testing.T) {
	e := newEnv(t)
	alice := service.WithPrincipal(ctx, auth.Harness("harness:alice"))
	mallory := service.WithPrincipal(ctx, auth.Harness("harness:mallory"))
	id := e.verified("water boils at 100 C at sea level")
	got, _, err := e.svc.Spawns.Request(alice, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatal(err)
	}
	rid := got.Spawn.ID
	if got.Spawn.RequestedBy != "harness:alice" {
		t.Fatalf("requested by %q", got.Spawn.RequestedBy)
	}
	g, _, err := e.svc.Spawns.Request(alice, service.SpawnInput{Kind: spawn.Guess, Question: "which tier?", N: 1})
	if err != nil {
		t.Fatal(err)
	}
	in := callbackInput(ledger.Verify, id, rid)
	for what, try := range map[string]func() error{
		"cancel":    func() error { _, _, err := e.svc.Spawns.Cancel(mallory, rid, "mine now", nil); return err },
		"heartbeat": func() error { _, _, err := e.svc.Spawns.Heartbeat(mallory, rid, 0, nil); return err },
		"resolve":   func() error { _, _, err := e.svc.Spawns.Resolve(mallory, in); return err },
		"answer": func() error {
			_, _, err := e.svc.Spawns.Answer(mallory, service.GuessAnswer{RequestID: g.Spawn.ID, Candidates: []string{"all of them"}})
			return err
		},
	} {
		if err := try(); !errs.Is(err, service.NotRequester) {
			t.Errorf("another harness's %s: %v, want not-requester", what, err)
		}
	}
	if sp, _ := e.store.GetSpawn(ctx, rid); sp.State != spawn.Pending || !sp.ExpiresAt.Equal(got.Spawn.ExpiresAt) {
		t.Fatalf("the refused calls changed the spawn: %+v", sp)
	}
	// Its own callback token may heartbeat it, a person may cancel the guess, the requester resolves.
	asCallback := service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleCallback, RequestID: rid})
	if _, _, err := e.svc.Spawns.Heartbeat(asCallback, rid, 0, nil); err != nil {
		t.Fatalf("its callback token's heartbeat: %v", err)
	}
	if _, _, err := e.svc.Spawns.Cancel(service.WithPrincipal(ctx, auth.Owner("me")), g.Spawn.ID, "not needed", nil); err != nil {
		t.Fatalf("a person's cancel: %v", err)
	}
	if v, _, err := e.svc.Spawns.Resolve(alice, in); err != nil || v.Status != ledger.Verified {
		t.Fatalf("the requester's callback: %v %v", v.Status, err)
	}
}

// A question is withdrawn only by the agent that asked it or a person.
func TestAHarnessCannotCancelAnotherHarnesssQuestion(t *testing.T) {
	e := newApprovalEnv(t)
	alice := service.WithPrincipal(ctx, auth.Harness("harness:alice"))
	mallory := service.WithPrincipal(ctx, auth.Harness("harness:mallory"))
	ses, err := e.svc.Escalations.OpenSession(alice, service.OpenSessionInput{Tier: "read-only"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Escalations.Frames(ctx, service.FramesInput{SessionID: ses.ID, Subscriber: "me"}); err != nil {
		t.Fatal(err)
	}
	q, _, err := e.svc.Escalations.Escalate(alice, service.EscalateInput{SessionID: ses.ID, CallID: "c1", To: "workspace-write", Reason: "r", NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Escalations.Cancel(mallory, q.ID, "withdrawn for you", ""); !errs.Is(err, service.NotRequester) {
		t.Fatalf("another harness's cancel: %v, want not-requester", err)
	}
	if v, _ := e.svc.Escalations.Show(ctx, q.ID); v.State != approvals.Pending {
		t.Fatalf("the refused cancel ended the question: %s", v.State)
	}
	if d, _, err := e.svc.Escalations.Cancel(alice, q.ID, "not needed", ""); err != nil || d.View.Verdict != approvals.Cancelled {
		t.Fatalf("the requester's cancel: %+v %v", d.View, err)
	}
}

// Doubt is enforced on the agent that asked: while its verifier's spawn
// is pending, no agent moves the claim except through that spawn's
// callback; a person may, and the spawn then ends as cancelled.
func TestAHarnessCannotVerifyItsOwnClaimWhileItsVerifierIsPending(t *testing.T) {
	e := newEnv(t)
	alice := service.WithPrincipal(ctx, auth.Harness("harness:alice"))
	id := e.verified("water boils at 100 C at sea level")
	got, _, err := e.svc.Spawns.Request(alice, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatal(err)
	}
	rid := got.Spawn.ID
	for _, a := range []ledger.Action{ledger.Verify, ledger.Doubt, ledger.Ignore, ledger.Lock} {
		in := callbackInput(a, id, "")
		if a == ledger.Ignore || a == ledger.Lock {
			in.Reason = "out of scope for this run"
		}
		_, _, err := e.svc.Ledger.Transition(alice, in)
		if !errs.Is(err, errs.SpawnPending) || !strings.Contains(errs.As(err).Message, rid) {
			t.Errorf("%s beside the pending verifier: %v, want spawn-pending naming %s", a, err, rid)
		}
	}
	if st := e.status(id); st != ledger.Unverified {
		t.Fatalf("the claim moved: %s", st)
	}
	// A person's verdict stands and ends the spawn; its late callback changes nothing.
	v, _, err := e.svc.Ledger.Transition(service.WithPrincipal(ctx, auth.Owner("me")), callbackInput(ledger.Doubt, id, ""))
	if err != nil || v.Status != ledger.Doubted || v.PendingSpawn != "" {
		t.Fatalf("a person's doubt: %+v %v", v.Entity, err)
	}
	if sp, _ := e.store.GetSpawn(ctx, rid); sp.State != spawn.Resolved || sp.Outcome != spawn.Cancelled {
		t.Fatalf("the superseded spawn: %s %s", sp.State, sp.Outcome)
	}
	if evs := e.events(id, ledger.EvSpawnCancelled); len(evs) != 1 || evs[0].RequestID != rid {
		t.Fatalf("spawn_cancelled events: %+v", evs)
	}
	late, warns, err := e.svc.Spawns.Resolve(alice, callbackInput(ledger.Verify, id, rid))
	if err != nil || len(warns) != 1 || warns[0].Code != "spawn-duplicate" || late.Status != ledger.Doubted {
		t.Fatalf("the late callback: %v %v %v", late.Status, warns, err)
	}
}
