package main

import (
	"testing"
)

// An agent over MCP reads the project's inbox (as the approvals page
// does) and escalates: its read is a harness's, so it cannot answer and
// the session is not answerable.
func TestAnAgentOverMCPReadingTheInboxDoesNotMakeItsSessionAnswerable(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	ses := s.call("sessions_open", map[string]any{"tier": "read-only"}).data()["session_id"].(string)
	in := s.call("approvals_inbox", map[string]any{"subscriber": "page"})
	if in.isError {
		t.Fatalf("approvals_inbox over MCP: %s", in.text)
	}
	if v, _ := in.data()["viewer"].(map[string]any); v["can_answer"] != false || v["watching"] != nil {
		t.Fatalf("MCP's inbox viewer: %v", v)
	}
	r := s.call("escalate", map[string]any{"session": ses, "call": "c1", "to": "danger-full-access", "reason": "r", "no_wait": true})
	if !r.isError || r.data()["code"] != "no-subscriber" {
		t.Fatalf("an MCP inbox reader made the session answerable: %s", r.text)
	}
}

// The same at the embedded CLI under a harness signal; the owner's own
// read (a person at the CLI) does make the session answerable.
func TestAHarnessSignalledCLIReadingTheInboxDoesNotMakeASessionAnswerable(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	harness := []string{"DONT_HARNESS=1"}
	if v, _ := p.runEnv(harness, "approvals", "inbox").data()["viewer"].(map[string]any); v["can_answer"] != false {
		t.Fatalf("a harness-signalled CLI's viewer: %v", v)
	}
	r := p.runEnv(harness, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if r.exit != 1 || r.data()["code"] != "no-subscriber" {
		t.Fatalf("after a harness's inbox read, escalate: exit %d %s", r.exit, r.stdout)
	}
	if v, _ := p.ok("approvals", "inbox").data()["viewer"].(map[string]any); v["can_answer"] != true || v["watching"] != "*" {
		t.Fatalf("the owner's viewer: %v", v)
	}
	apr := p.runEnv(harness, "escalate", "--session", ses, "--call", "c2", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if apr.exit != 0 {
		t.Fatalf("after the owner's inbox read, escalate: exit %d %s", apr.exit, apr.stdout)
	}
	p.ok("approvals", "cancel", apr.str("approval_id"), "--reason", "done")
}
