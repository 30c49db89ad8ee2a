package main

import (
	"strings"
	"testing"
)

// The person's two-person rule through `dont serve`: a danger-full-access
// question needs two different approver tokens; one approver approving
// twice (the same token, or the agent retrying a leaked approver token)
// counts once and grants nothing.
func TestOneApproverApprovingTwiceCannotGrantATwoPersonQuestion(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	alice, bob, harness := p.token("approver"), p.token("approver"), p.token("harness")
	srv := p.serve(t, "DONT_TWO_PERSON_FROM=danger-full-access")
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint}
	ses := p.session("read-only")
	p.frames("--session", ses)
	apr := p.runEnv(append(remote, "DONT_TOKEN="+harness), "escalate", "--session", ses, "--call", "c1", "--to", "danger-full-access",
		"--reason", "installs into /usr/local", "--no-wait", "--", "make", "install").str("approval_id")
	if !strings.HasPrefix(apr, "apr:") {
		t.Fatal("escalate --no-wait returned no approval id")
	}
	approve := func(token string) result {
		return p.answered(append(remote, "DONT_TOKEN="+token), "approvals", "approve", apr)
	}
	for i := 0; i < 2; i++ {
		r := approve(alice)
		if r.exit != 0 || r.str("state") != "pending" || r.str("granted_tier") != "" || !strings.Contains(r.stdout, "second") {
			t.Fatalf("alice's approval %d: exit %d %s %s", i+1, r.exit, r.stdout, r.stderr)
		}
	}
	if st := p.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("one approver ended the question: %s", st)
	}
	r := approve(bob)
	if r.exit != 0 || r.str("verdict") != "approved" {
		t.Fatalf("bob's approval: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
}
