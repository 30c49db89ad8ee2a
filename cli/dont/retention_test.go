package main

import (
	"os"
	"strings"
	"testing"
)

// askAndEnd asks a question in a fresh session and lets doctor, its clock
// two hours ahead, time it out (the retention runs before the sweep, so
// this doctor keeps it): the session is then ended, announced and, to a
// clock two hours ahead, over an hour old.
func askAndEnd(t *testing.T, p *testProject) (session, question string) {
	t.Helper()
	session = p.session("read-only")
	p.frames("--session", session) // a reader, so that the question is asked
	question = p.ok("escalate", "--session", session, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait").str("approval_id")
	if r := p.runEnv([]string{laterClock}, "doctor", "--strict"); r.exit != 0 || r.data()["retention"] != nil {
		t.Fatalf("doctor with the question open: exit %d %s", r.exit, r.stdout)
	}
	if r := p.ok("approvals", "show", question); r.str("verdict") != "timed-out" {
		t.Fatalf("the question did not time out: %s", r.stdout)
	}
	return session, question
}

const laterClock = "DONT_FAULT_CLOCK_OFFSET=2h"

// An agent that could shorten the retention would erase the record of the
// questions it asked and of the person's answers: neither the workspace
// config it writes nor its own environment sets it. The person's config
// does, and what it removes leaves the frame log whole.
func TestAnAgentThatWritesTheWorkspaceConfigCannotShortenTheRetention(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.agentWritesConfig(t, "frame_retention = \"1s\"\ndelivery_retention = \"1s\"\n")
	_, question := askAndEnd(t, p)
	for _, env := range [][]string{{laterClock}, {laterClock, "DONT_HARNESS=1", "DONT_FRAME_RETENTION=1s", "DONT_DELIVERY_RETENTION=1s"}} {
		r := p.runEnv(env, "doctor", "--strict")
		if r.exit != 0 || r.data()["retention"] != nil {
			t.Fatalf("doctor %v applied a retention an agent set: exit %d %s", env, r.exit, r.stdout)
		}
		if w := warningText(r); !strings.Contains(w, "frame_retention") && !strings.Contains(w, "DONT_FRAME_RETENTION") {
			t.Fatalf("doctor %v did not say what it ignored: %s", env, w)
		}
		if s := p.run("approvals", "show", question); s.exit != 0 {
			t.Fatalf("doctor %v removed the question: exit %d %s", env, s.exit, s.stdout)
		}
	}

	p.writePersonConfig(t, "frame_retention = \"1h\"\n")
	r := p.runEnv([]string{laterClock}, "doctor", "--strict")
	got, _ := r.data()["retention"].(map[string]any)
	if r.exit != 0 || got["sessions"] != 1.0 || got["questions"] != 1.0 || got["frames"] != 2.0 {
		t.Fatalf("the person's retention: exit %d %s", r.exit, r.stdout)
	}
	if s := p.run("approvals", "show", question); s.exit == 0 {
		t.Fatalf("the question past the person's retention is still there: %s", s.stdout)
	}
}

// A bad retention in the person's config is config-invalid, with the
// setting's rule, before doctor writes anything.
func TestABadRetentionIsConfigInvalid(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	path := p.writePersonConfig(t, "delivery_retention = \"-1h\"\n")
	t.Cleanup(func() { os.Remove(path) }) // before the closing doctor
	r := p.run("doctor")
	if r.exit == 0 || !strings.Contains(r.stdout, "config-invalid") || !strings.Contains(r.stdout, "delivery_retention") ||
		!strings.Contains(r.stdout, "in your own config") {
		t.Fatalf("a bad delivery_retention: exit %d %s", r.exit, r.stdout)
	}
}
