package service_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
)

func TestSessionsListShowsEverySessionWithItsOpenQuestions(t *testing.T) {
	e := newApprovalEnv(t)
	empty, err := e.svc.Escalations.ListSessions(ctx)
	if err != nil || empty.Count != 0 || empty.Sessions == nil {
		t.Fatalf("no sessions yet: %+v %v", empty, err)
	}
	first := e.open(approvals.ReadOnly)
	e.clock.Advance(1)
	second := e.open(approvals.WorkspaceWrite)
	// A question past its deadline is no longer open.
	e.subscribe(second)
	e.ask(second, "c1", approvals.DangerFullAccess)
	e.clock.Advance(approvals.DefaultTimeout + 1)
	e.subscribe(first)
	e.ask(first, "c2", approvals.WorkspaceWrite)
	e.ask(first, "c3", approvals.WorkspaceWrite)
	list, err := e.svc.Escalations.ListSessions(ctx)
	if err != nil || list.Count != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list.Sessions[0].ID != first || list.Sessions[1].ID != second {
		t.Fatalf("not oldest first: %s, %s", list.Sessions[0].ID, list.Sessions[1].ID)
	}
	if s := list.Sessions[0]; s.Tier != approvals.ReadOnly || s.Name != "t" || s.OpenQuestions != 2 || s.OpenedBy == "" || !s.LiveSubscriber {
		t.Fatalf("first: %+v", s)
	}
	if s := list.Sessions[1]; s.Tier != approvals.WorkspaceWrite || s.OpenQuestions != 0 || s.LiveSubscriber || s.LastRead == nil {
		t.Fatalf("second: %+v", s)
	}
	// The questions end, so that the audit sees every ending announced.
	e.clock.Advance(approvals.DefaultTimeout + 1)
	if _, err := e.svc.Sweep(ctx, 100); err != nil {
		t.Fatal(err)
	}
}
