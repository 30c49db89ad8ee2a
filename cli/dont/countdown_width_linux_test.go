package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"golang.org/x/sys/unix"
)

// On an 80-column terminal every redraw of the countdown fits the line:
// each is drawn in place (a carriage return, never a new line) and takes
// at most 79 columns, so the terminal never wraps it into a new line per
// second, and the time left is always among what is shown.
func TestTheCountdownFitsAnEightyColumnTerminal(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "writes build/", "--no-wait").str("approval_id")
	slave, screen := openTerminal(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	c := p.cmd("approvals", "wait", apr)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, slave
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { c.Process.Kill() })
	at := screen.expect(t, 0, " left")
	screen.expect(t, at, " left") // a second redraw, a tick later
	p.ok("approvals", "cancel", apr, "--reason", "the build no longer needs it")
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("approvals wait did not end")
	}
	screen.mu.Lock()
	shown := screen.buf.String()
	screen.mu.Unlock()
	if strings.Contains(shown, "\n") {
		t.Fatalf("the countdown started a new line: %q", shown)
	}
	draws := strings.Split(shown, "\r\x1b[K")
	n := 0
	for _, d := range draws {
		if d == "" {
			continue
		}
		n++
		if w := render.Width(d); w > 79 || !strings.Contains(d, " left") {
			t.Fatalf("a redraw of %d columns on an 80-column terminal, or without the time left: %q", w, d)
		}
	}
	if n < 2 {
		t.Fatalf("%d redraws, want at least 2: %q", n, shown)
	}
}
