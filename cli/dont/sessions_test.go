package main

import (
	"strings"
	"testing"
)

// A lost ses: id can be found again: `dont sessions list` lists every
// session with its tier, name and open questions, to a harness too.
func TestSessionsListFindsALostSessionID(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	first := p.session("read-only")
	second := p.ok("sessions", "open", "--tier", "workspace-write").str("session_id")
	p.frames("--session", first) // the owner watches: questions are asked
	p.ok("escalate", "--session", first, "--call", "c1", "--to", "workspace-write", "--reason", "writes build/", "--no-wait", "--", "make")
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "sessions", "list")
	if r.exit != 0 || r.env["envelope_kind"] != "sessions" || r.data()["count"] != float64(2) {
		t.Fatalf("sessions list under a harness: exit %d %s", r.exit, r.stdout)
	}
	list := r.data()["sessions"].([]any)
	if s := list[0].(map[string]any); s["session_id"] != first || s["open_questions"] != float64(1) || s["name"] != "cli test" {
		t.Fatalf("first session: %v", s)
	}
	if s := list[1].(map[string]any); s["session_id"] != second || s["open_questions"] != float64(0) || s["tier"] != "workspace-write" {
		t.Fatalf("second session: %v", s)
	}
	out, _, exit := onTerminal(t, p.cmd("sessions", "list", "--plain"))
	lines := strings.Split(out, "\n")
	if exit != 0 || len(lines) < 4 || !strings.HasPrefix(lines[0], "SESSION ") || !strings.HasPrefix(lines[1], first+"  read-only        1     yes") ||
		!strings.HasPrefix(lines[2], second+"  workspace-write  0     no") || lines[3] != "2 sessions" {
		t.Fatalf("sessions list at a terminal: exit %d\n%s", exit, out)
	}
	p.ok("approvals", "cancel", p.ok("approvals", "list").data()["approvals"].([]any)[0].(map[string]any)["approval_id"].(string))
}
