package main

import (
	"strings"
	"testing"
	"time"
)

// askWithin asks, as an agent (a harness signal), for a question that
// stays open deadline; it returns the result and when it asked.
func (p *testProject) askWithin(env []string, ses, call, deadline string) (result, time.Time) {
	p.frames("--session", ses)
	asked := time.Now()
	return p.runEnv(append([]string{"DONT_HARNESS=1"}, env...), "escalate", "--session", ses, "--call", call, "--to", "workspace-write",
		"--reason", "r", "--no-wait", "--deadline", deadline), asked
}

func lastsFor(t *testing.T, r result, asked time.Time, want time.Duration) {
	t.Helper()
	d, err := time.Parse(time.RFC3339Nano, r.str("deadline"))
	if r.exit != 0 || err != nil || d.Sub(asked) < want || d.Sub(asked) > want+10*time.Second {
		t.Fatalf("want a question open %v: exit %d %s", want, r.exit, r.stdout)
	}
}

func refusedOutOfRange(t *testing.T, r result, rangeText string) {
	t.Helper()
	if r.exit != 2 || r.str("code") != "deadline-out-of-range" || !strings.Contains(r.str("message"), rangeText) || len(r.remediation()) == 0 {
		t.Fatalf("want deadline-out-of-range naming %q (exit 2): exit %d %s", rangeText, r.exit, r.stdout)
	}
}

// The longest deadline an agent may ask for is the person's: an agent that
// writes the workspace config does not widen it; the person's own config
// does.
func TestAnAgentThatWritesTheWorkspaceConfigCannotWidenTheDeadlineRange(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.agentWritesConfig(t, "approval_timeout_max = \"720h\"\napproval_timeout_min = \"1s\"\n")
	ses := p.session("read-only")
	r, _ := p.askWithin(nil, ses, "c1", "1h")
	refusedOutOfRange(t, r, "30s to 2m")
	if r, _ := p.askWithin(nil, ses, "c1", "1s"); r.str("code") != "deadline-out-of-range" {
		t.Fatalf("the workspace's minimum counted: %s", r.stdout)
	}
	if n := len(p.ok("approvals", "list", "--session", ses).data()["approvals"].([]any)); n != 0 {
		t.Fatalf("refused deadlines left %d records", n)
	}
	p.writePersonConfig(t, "approval_timeout_max = \"1h\"\n")
	r, asked := p.askWithin(nil, ses, "c2", "1h")
	lastsFor(t, r, asked, time.Hour)
}

// A harness-signalled process (the embedded CLI, or dont mcp, whose
// environment is the agent's) cannot widen the range through the
// environment; without a harness signal the variable is the person's.
func TestAHarnessSignalledProcessCannotWidenTheDeadlineRange(t *testing.T) {
	t.Parallel()
	wide := []string{"DONT_APPROVAL_TIMEOUT_MAX=720h", "DONT_APPROVAL_TIMEOUT_MIN=1s"}
	t.Run("embedded CLI", func(t *testing.T) {
		p := newApprovalProject(t)
		ses := p.session("read-only")
		r, _ := p.askWithin(wide, ses, "c1", "1h")
		refusedOutOfRange(t, r, "30s to 2m")
		// Without a harness signal the variables are the person's.
		p.frames("--session", ses)
		asked := time.Now()
		r = p.runEnv(wide, "escalate", "--session", ses, "--call", "c2", "--to", "workspace-write", "--reason", "r", "--no-wait", "--deadline", "1h")
		lastsFor(t, r, asked, time.Hour)
	})
	t.Run("MCP", func(t *testing.T) {
		p := newApprovalProject(t)
		ses := p.session("read-only")
		p.frames("--session", ses)
		p.env = append(p.env, wide...)
		r := p.mcp().call("escalate", map[string]any{"session": ses, "call": "c1", "to": "workspace-write", "reason": "r", "no_wait": true, "deadline": "1h"})
		if !r.isError || r.data()["code"] != "deadline-out-of-range" || !strings.Contains(string(r.text), "30s to 2m") {
			t.Fatalf("escalate over MCP with a deadline of 1h: %s", r.text)
		}
		r = p.mcp().call("escalate", map[string]any{"session": ses, "call": "c1", "to": "workspace-write", "reason": "r", "no_wait": true, "deadline": "45s"})
		if r.isError || r.data()["deadline"] == nil {
			t.Fatalf("escalate over MCP with a deadline of 45s: %s", r.text)
		}
	})
}
