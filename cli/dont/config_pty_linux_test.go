package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/personal"
)

func (p *testProject) pinPath(t *testing.T) string {
	return filepath.Join(personal.Dirs{Home: p.personHomeDir(t)}.ProjectDir(p.dir), "trusted-config.sha256")
}

func TestTrustingTheWorkspaceConfigNeedsThePersonAtTheTerminal(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.agentWritesConfig(t, "[agents.helper]\ncommand = [\"my-agent\"]\nenv = [\"HOME\"]\n")
	// No controlling terminal: a "y" on stdin answers nothing.
	r := p.runIn(t, nil, strings.NewReader("y\n"), "config", "trust")
	if r.exit != 2 || r.str("code") != "person-required" {
		t.Fatalf("trust without a terminal: exit %d %s", r.exit, r.stdout)
	}
	// A harness signal, even at a terminal.
	for _, sig := range []string{"DONT_HARNESS=1", "DONT_REQUEST_ID=spawn:01HX"} {
		c := p.cmd("config", "trust")
		typedAtTerminal(t, c, "y\n")
		if r := p.runCmd(t, c, []string{sig}, nil); r.exit != 2 || r.str("code") != "person-required" {
			t.Fatalf("trust under %s: exit %d %s", sig, r.exit, r.stdout)
		}
	}
	// A no at the terminal.
	c := p.cmd("config", "trust")
	typedAtTerminal(t, c, "n\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 1 || r.str("code") != "confirmation-declined" {
		t.Fatalf("trust answered no: exit %d %s", r.exit, r.stdout)
	}
	if _, err := os.Stat(p.pinPath(t)); err == nil {
		t.Fatal("a refused trust wrote the pin")
	}
	if got := configShowFrom(t, p.ok("config", "show"), "agents.helper"); got != "" {
		t.Fatalf("the untrusted profile comes from %q", got)
	}
	// The person says yes.
	c = p.cmd("config", "trust")
	typedAtTerminal(t, c, "y\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 0 || r.data()["trusted"] != true {
		t.Fatalf("trust: exit %d %s", r.exit, r.stdout)
	}
	if fi, err := os.Stat(p.pinPath(t)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the pin: %v %v", fi, err)
	}
	if got := configShowFrom(t, p.ok("config", "show"), "agents.helper"); got != "workspace config" {
		t.Fatalf("the trusted profile comes from %q", got)
	}
}

func TestATrustedWorkspaceConfigWhoseBytesChangeIsAskedAgain(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.agentWritesConfig(t, "[agents.helper]\ncommand = [\"my-agent\"]\n")
	c := p.cmd("config", "trust")
	typedAtTerminal(t, c, "y\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 0 {
		t.Fatalf("trust: exit %d %s", r.exit, r.stdout)
	}
	// The agent changes the trusted file (one byte more).
	path := filepath.Join(p.dir, ".dont", "config.toml")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), "my-agent", "my-agent2", 1)), 0o600)
	r := p.ok("config", "show")
	if r.data()["workspace_trusted"] != false || configShowFrom(t, r, "agents.helper") != "" || !strings.Contains(warningText(r), "config-untrusted") {
		t.Fatalf("a changed file is still trusted: %s", r.stdout)
	}
	// Asked again, and shown the new command, escaped, before the question.
	os.WriteFile(path, []byte("[agents.helper]\ncommand = [\"my-agent3\", \"\\u001b[2K\\u202e\"]\n"), 0o600)
	c = p.cmd("config", "trust")
	shown := terminalShows(t, c, "y\n")
	if r := p.runCmd(t, c, nil, nil); r.exit != 0 || configShowFrom(t, p.ok("config", "show"), "agents.helper") != "workspace config" {
		t.Fatalf("trust again: exit %d %s", r.exit, r.stdout)
	}
	if got := shown(); !strings.Contains(got, "my-agent3") || strings.ContainsAny(got, "\x1b\u202e") || !strings.Contains(got, "[y/N]") {
		t.Fatalf("the terminal showed %q", got)
	}
}

// terminalShows runs c with a controlling terminal of its own, answer
// typed at it; what c wrote there is read once it has exited (the reader
// ends when the last copy of the terminal closes).
func terminalShows(t *testing.T, c *exec.Cmd, answer string) func() string {
	t.Helper()
	master, slave := openCookedPTY(t)
	t.Cleanup(func() { master.Close(); slave.Close() })
	c.ExtraFiles = append(c.ExtraFiles, slave)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2 + len(c.ExtraFiles)}
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if _, err := master.Write([]byte(answer)); err != nil {
		t.Fatal(err)
	}
	return func() string {
		slave.Close() // the program's copy is gone with it: the reader ends
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}
