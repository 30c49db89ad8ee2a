package service_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/service"
)

// The inbox is every open question of the project across sessions, with
// the recent endings (a timeout and a cancel with its reason among them)
// and the names of the sessions and tokens they mention.
func TestTheInboxShowsEverySessionsQuestionsEndingsAndNames(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Tokens = e.store
	harness, err := e.svc.Credentials.Create(ctx, auth.RoleHarness, "build-bot")
	if err != nil {
		t.Fatal(err)
	}
	approver, err := e.svc.Credentials.Create(ctx, auth.RoleApprover, "alice")
	if err != nil {
		t.Fatal(err)
	}
	asHarness := service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleHarness, TokenID: harness.ID})
	asApprover := service.WithPrincipal(ctx, auth.Principal{Role: auth.RoleApprover, TokenID: approver.ID})
	open := func(name string) string {
		v, err := e.svc.Escalations.OpenSession(asHarness, service.OpenSessionInput{Tier: "read-only", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	a, b := open("frontend"), open("backend")
	// One inbox read by an approver makes every session answerable.
	if _, err := e.svc.Escalations.Inbox(asApprover, service.InboxInput{Subscriber: "page"}); err != nil {
		t.Fatal(err)
	}
	ask := func(ses, call string) string {
		v, _, err := e.svc.Escalations.Escalate(asHarness, service.EscalateInput{SessionID: ses, CallID: call, To: "workspace-write", Reason: "r", NoWait: true})
		if err != nil {
			t.Fatalf("escalate in %s: %v", ses, err)
		}
		return v.ID
	}
	qa, qb, cancelled, timedOut := ask(a, "a1"), ask(b, "b1"), ask(b, "b2"), ask(a, "a2")
	if _, _, err := e.svc.Escalations.Cancel(asHarness, cancelled, "the build found a cache", ""); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(approvals.DefaultTimeout / 2)
	if _, err := e.svc.Escalations.Inbox(asApprover, service.InboxInput{Subscriber: "page"}); err != nil {
		t.Fatal(err)
	}
	qc := ask(b, "b3")
	e.clock.Advance(approvals.DefaultTimeout/2 + 1)
	if _, err := e.svc.SweepApprovals(ctx, 100); err != nil {
		t.Fatal(err)
	}
	_ = timedOut

	in, err := e.svc.Escalations.Inbox(asApprover, service.InboxInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Viewer.CanAnswer || in.Viewer.Name != "alice" || in.Viewer.Watching != service.InboxLease {
		t.Fatalf("viewer %+v", in.Viewer)
	}
	if len(in.Pending) != 1 || in.Pending[0].ID != qc {
		t.Fatalf("pending %v, want only %s (the others ended at the deadline or were cancelled)", approvalIDs(in.Pending), qc)
	}
	byID := map[string]service.ApprovalView{}
	for _, v := range in.Endings {
		byID[v.ID] = v
	}
	if v := byID[cancelled]; v.Verdict != approvals.Cancelled || v.Detail != "the build found a cache" {
		t.Fatalf("the cancel shows %+v", v.Approval)
	}
	for _, id := range []string{qa, qb, timedOut} {
		if v := byID[id]; v.Verdict != approvals.TimedOut || v.Cause != approvals.CauseDeadline {
			t.Fatalf("%s shows %+v, want timed-out by the deadline", id, v.Approval)
		}
	}
	if in.Names[a] != "frontend" || in.Names[b] != "backend" || in.Names[harness.ID] != "build-bot" || in.Names[approver.ID] != "alice" {
		t.Fatalf("names %v", in.Names)
	}
	if len(in.Sessions) != 2 || in.Sessions[1].Pending != 1 || in.Sessions[0].Pending != 0 {
		t.Fatalf("sessions %+v", in.Sessions)
	}

	// Narrowed to one session, only its questions and endings.
	only, err := e.svc.Escalations.Inbox(asApprover, service.InboxInput{SessionID: a})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(only.Pending, only.Endings...) {
		if v.SessionID != a {
			t.Fatalf("narrowed to %s, the inbox shows %s of %s", a, v.ID, v.SessionID)
		}
	}
	if only.Viewer.Watching != a || len(only.Sessions) != 2 {
		t.Fatalf("narrowed inbox: viewer %+v, %d sessions", only.Viewer, len(only.Sessions))
	}
}

// A harness reading the inbox cannot answer and makes nothing look
// watched: its session's escalation is still refused no-subscriber.
func TestAHarnessReadingTheInboxDoesNotMakeASessionAnswerable(t *testing.T) {
	e := newApprovalEnv(t)
	asHarness := service.WithPrincipal(ctx, auth.Harness("agent"))
	ses := e.open(approvals.ReadOnly)
	in, err := e.svc.Escalations.Inbox(asHarness, service.InboxInput{Subscriber: "page"})
	if err != nil {
		t.Fatal(err)
	}
	if in.Viewer.CanAnswer || in.Viewer.Watching != "" || in.Viewer.Role != auth.RoleHarness {
		t.Fatalf("a harness's viewer %+v", in.Viewer)
	}
	_, _, err = e.svc.Escalations.Escalate(asHarness, service.EscalateInput{SessionID: ses, CallID: "c1", To: "workspace-write", Reason: "r", NoWait: true})
	wantCode(t, err, service.NoSubscriber, 1)
}

func approvalIDs(vs []service.ApprovalView) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}
