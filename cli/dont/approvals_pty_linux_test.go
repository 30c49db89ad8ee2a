package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// terminal is the master side of a pseudo-terminal whose output is read as
// it arrives.
type terminal struct {
	mu     sync.Mutex
	buf    strings.Builder
	new    chan struct{}
	closed chan struct{} // closed when the master reads EOF or EIO: every writer is gone and all output is in buf
}

// openTerminal returns a raw-mode pseudo-terminal: the slave for a process's
// stdout, and the master's output.
func openTerminal(t *testing.T) (*os.File, *terminal) {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	tm := &terminal{new: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() {
		defer close(tm.closed)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			tm.mu.Lock()
			tm.buf.Write(b[:n])
			tm.mu.Unlock()
			select {
			case tm.new <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return slave, tm
}

// drained waits until every process writing to the terminal has closed it
// and the master has read all they wrote, and returns the whole output. A
// process that exited may still have output in the terminal's buffer: a
// read of buf right after its exit can miss the end.
func (tm *terminal) drained(t *testing.T) string {
	t.Helper()
	select {
	case <-tm.closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal was not closed by its writers")
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.buf.String()
}

// expect waits until the screen output after from contains want and
// returns the offset just past it.
func (tm *terminal) expect(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		tm.mu.Lock()
		s := tm.buf.String()
		tm.mu.Unlock()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-tm.new:
		case <-deadline:
			t.Fatalf("no %q on the terminal after offset %d:\n%q", want, from, s)
		}
	}
}

func TestWatchOnARealTerminalCountsDownAndNeverSendsAKeystrokeToADeadRequest(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.setPassphrase()
	slave, screen := openTerminal(t)
	w := p.cmd("approvals", "watch", "--session", ses)
	w.Stdout, w.Stderr = slave, slave     // the countdown prompt is drawn on stderr
	keys := withControllingTerminal(t, w) // where a person's answers are typed
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	defer w.Process.Kill()
	at := screen.expect(t, 0, "watching "+ses)

	apr := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=3s"}, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write",
		"--reason", "writes the cache", "--no-wait", "--", "make", "cache").str("approval_id")
	at = screen.expect(t, at, "$ make cache")
	// The prompt is redrawn in place (\r, erase line) as the countdown runs.
	at = screen.expect(t, at, "\r\x1b[K"+apr+" [")
	at = screen.expect(t, at, "left] approve workspace-write for call c1? [y/n] ")
	at = screen.expect(t, at, apr+": ")
	at = screen.expect(t, at, "cleared")
	fmt.Fprint(keys, "y\n")
	screen.expect(t, at, "no open request; the input was not sent")
	if r := p.ok("approvals", "show", apr); r.str("verdict") != "timed-out" || r.str("answered_by") != "" {
		t.Fatalf("a dead request was answered: %s", r.stdout)
	}
	fmt.Fprint(keys, "\x04") // Ctrl-D
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end on EOF")
	}
}

// The watch's countdown is drawn on stderr, like every long wait's: with
// stdout sent to a file, the terminal still counts down and the file gets
// only what happened.
func TestWatchDrawsItsCountdownOnStderr(t *testing.T) {
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.setPassphrase()
	slave, screen := openTerminal(t)
	w := p.cmd("approvals", "watch", "--session", ses)
	var stdout syncBuffer
	w.Stdout, w.Stderr = &stdout, slave
	keys := withControllingTerminal(t, w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	defer w.Process.Kill()
	// The watch is a live subscriber once it says so (on stdout here).
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "watching "+ses); {
		if time.Now().After(deadline) {
			t.Fatalf("the watch never started: stdout %q", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	apr := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=30s"}, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write",
		"--reason", "writes the cache", "--no-wait", "--", "make", "cache").str("approval_id")
	at := screen.expect(t, 0, "\r\x1b[K"+apr+" [")
	screen.expect(t, at, "left] approve workspace-write for call c1? [y/n] ")
	fmt.Fprint(keys, "\x04") // Ctrl-D
	w.Wait()
	out := stdout.String()
	if !strings.Contains(out, "$ make cache") || strings.Contains(out, "left]") || strings.Contains(out, "\x1b[K") {
		t.Fatalf("stdout: %q; want the request, without the countdown prompt", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the command's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
