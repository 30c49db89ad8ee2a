package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// waitOnTerminal starts dont with stderr on a pseudo-terminal and stdout
// in a buffer, and returns the screen and a function that waits for the
// process and gives its stdout and exit code.
func (p *testProject) waitOnTerminal(t *testing.T, args ...string) (*terminal, func() (string, int)) {
	t.Helper()
	slave, screen := openTerminal(t)
	c := p.cmd(args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, slave
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { c.Process.Kill() })
	return screen, func() (string, int) {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("dont %v did not end", args)
		}
		return out.String(), c.ProcessState.ExitCode()
	}
}

var countdownLine = regexp.MustCompile(`\r\x1b\[K[^\r]*: (\d+ min )?\d+ s left \(`)

// A person waiting at a terminal sees the time left, redrawn in place on
// stderr, and the line is erased when the verdict comes; stdout (a pipe)
// gets the one envelope and nothing else.
func TestApprovalsWaitCountsDownOnATerminal(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "writes build/", "--no-wait").str("approval_id")
	screen, wait := p.waitOnTerminal(t, "approvals", "wait", apr)
	at := screen.expect(t, 0, "waiting for "+apr+": ")
	screen.expect(t, at, " left (until ")
	p.ok("approvals", "cancel", apr, "--reason", "the build no longer needs it")
	out, exit := wait()
	if exit != 1 || !strings.HasPrefix(out, "{") || strings.Count(out, "\n") != 1 {
		t.Fatalf("approvals wait: exit %d, stdout %q", exit, out)
	}
	shown := screen.drained(t)
	if !countdownLine.MatchString(shown) || !strings.HasSuffix(shown, "\r\x1b[K") {
		t.Fatalf("no countdown erased at the end on the terminal: %q", shown)
	}
}

// The countdown of a blocking escalate runs while the question waits for
// a person, after the line that says where it went.
func TestEscalateCountsDownWhileAPersonDecides(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	screen, wait := p.waitOnTerminal(t, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "writes build/", "--", "make", "install")
	at := screen.expect(t, 0, "asked apr:")
	at = screen.expect(t, at, "waiting for a person to answer apr:")
	screen.expect(t, at, " left") // its tail does not fit 80 columns; the line above says Ctrl-C cancels
	apr := p.ok("approvals", "list", "--pending").data()["approvals"].([]any)[0].(map[string]any)["approval_id"].(string)
	p.ok("approvals", "cancel", apr)
	if out, exit := wait(); exit != 1 || strings.Count(out, "\n") != 1 {
		t.Fatalf("escalate: exit %d, stdout %q", exit, out)
	}
}

// With --json, or with stderr not a terminal, a wait prints nothing but
// its envelope: each waits out a 2-second question to its deadline.
func TestAWaitShowsNoCountdownWithJSONOrWithoutATerminal(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t, "DONT_APPROVAL_TIMEOUT=2s")
	ses := p.session("read-only")
	ask := func(call string) string {
		p.frames("--session", ses)
		return p.ok("escalate", "--session", ses, "--call", call, "--to", "workspace-write", "--reason", "writes build/", "--no-wait").str("approval_id")
	}
	screen, wait := p.waitOnTerminal(t, "approvals", "wait", ask("c1"), "--json")
	out, exit := wait()
	shown := screen.drained(t)
	if exit != 1 || shown != "" || !strings.Contains(out, "approval-timed-out") || strings.Count(out, "\n") != 1 {
		t.Fatalf("approvals wait --json: exit %d, stderr %q, stdout %q", exit, shown, out)
	}
	c := p.cmd("approvals", "wait", ask("c2"))
	var errOut bytes.Buffer
	c.Stderr = &errOut
	out2, _ := c.Output()
	if errOut.String() != "" || !strings.Contains(string(out2), "approval-timed-out") {
		t.Fatalf("approvals wait with stderr not a terminal printed %q (stdout %q)", errOut.String(), out2)
	}
}
