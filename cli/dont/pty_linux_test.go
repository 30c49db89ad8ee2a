package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/dont-cli/dont/internal/personal"
	"golang.org/x/term"
)

// onTerminal runs c with stdout on a fresh pseudo-terminal (raw mode, so the
// bytes are the program's own) and stderr in a buffer; it returns both.
func onTerminal(t *testing.T, c *exec.Cmd) (stdout, stderr string, exit int) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	var errb bytes.Buffer
	c.Stdout, c.Stderr = slave, &errb
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the slave side is closed everywhere
		read <- b
	}()
	runErr := c.Run()
	slave.Close()
	out := <-read
	if ee, ok := runErr.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if runErr != nil {
		t.Fatal(runErr)
	}
	return string(out), errb.String(), exit
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// openPTY opens a pseudo-terminal pair with the slave in raw mode, so the
// bytes read from the master are the program's own. Callers close both.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, slave = openCookedPTY(t)
	if _, err := term.MakeRaw(int(slave.Fd())); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// openCookedPTY opens a pseudo-terminal pair in the line discipline a
// person types into: lines end at Enter, Ctrl-D at a line's start is EOF.
func openCookedPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatal(err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// withControllingTerminal makes a pseudo-terminal c's controlling terminal
// (as a login shell's is) without touching its stdin, stdout or stderr, and
// returns the master: what is written to it is typed at that terminal.
func withControllingTerminal(t *testing.T, c *exec.Cmd) (master *os.File) {
	t.Helper()
	master, slave := openCookedPTY(t)
	t.Cleanup(func() { master.Close(); slave.Close() })
	c.ExtraFiles = append(c.ExtraFiles, slave)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2 + len(c.ExtraFiles)}
	// Drain what the program writes to the terminal so it never blocks.
	go io.Copy(io.Discard, master)
	return master
}

// typedAtTerminal runs c with answer typed at its controlling terminal.
func typedAtTerminal(t *testing.T, c *exec.Cmd, answer string) {
	t.Helper()
	master := withControllingTerminal(t, c)
	if _, err := master.Write([]byte(answer)); err != nil {
		t.Fatal(err)
	}
}

// The person of the tests: the name and approver passphrase they set with
// dont passphrase set at their terminal.
const (
	testPerson     = "Ada Lovelace"
	testPassphrase = "correct horse battery staple"
)

// personHome is the person's home of the test's project: beside the
// workspace, never in it (the binary reads it from DONT_TEST_PERSON_HOME,
// faulthooks.go).
func (p *testProject) personHome() string { return p.dir + ".person" }

// passphraseRecord is where the project's approver passphrase record is.
func (p *testProject) passphraseRecord() string {
	return filepath.Join(personal.Dirs{Home: p.personHome()}.ProjectDir(resolvedRoot(p.dir)), passphraseFile)
}

// typed runs the binary with typed typed at its controlling terminal and
// nothing on stdin.
func (p *testProject) typed(typed string, env []string, args ...string) result {
	p.t.Helper()
	c := p.cmd(args...)
	typedAtTerminal(p.t, c, typed)
	return p.runCmd(p.t, c, env, nil)
}

// setPassphrase sets the project's approver passphrase as the person
// does, once: dont passphrase set at their terminal. The record it
// writes holds no trace of the project (a name, a salt and a hash), so
// after the first project the record is copied (passphraseRecordOnce)
// rather than hashed again at a terminal; a project whose own
// environment sets the person's home or the hash's cost runs the command.
func (p *testProject) setPassphrase() {
	p.t.Helper()
	p.passphraseMu.Lock() // goroutines of one test may ask at once
	defer p.passphraseMu.Unlock()
	if _, err := os.Stat(p.passphraseRecord()); err == nil {
		return
	}
	if !p.ownPersonOrCost() {
		if err := personal.WriteFile(p.passphraseRecord(), passphraseRecordOnce(p.t)); err != nil {
			p.t.Fatal(err)
		}
		return
	}
	p.runPassphraseSet()
}

// runPassphraseSet is dont passphrase set typed at the project's terminal.
func (p *testProject) runPassphraseSet() {
	p.t.Helper()
	r := p.typed(testPerson+"\n"+testPassphrase+"\n"+testPassphrase+"\n", nil, "passphrase", "set")
	if r.exit != 0 || r.str("name") != testPerson || r.str("record") != p.passphraseRecord() {
		p.t.Fatalf("dont passphrase set: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
}

// ownPersonOrCost: the project's environment sets the person's home or
// the passphrase hash's cost, so a copied record would not be its own.
func (p *testProject) ownPersonOrCost() bool {
	for _, kv := range p.env {
		if strings.HasPrefix(kv, "DONT_TEST_PERSON_HOME=") || strings.HasPrefix(kv, "DONT_FAULT_PASSPHRASE_COST=") {
			return true
		}
	}
	return false
}

var (
	passphraseRecordMu  sync.Mutex
	passphraseRecordRaw []byte
)

// passphraseRecordOnce is the record the first project's dont passphrase
// set wrote, read back.
func passphraseRecordOnce(t *testing.T) []byte {
	t.Helper()
	passphraseRecordMu.Lock()
	defer passphraseRecordMu.Unlock()
	if passphraseRecordRaw != nil {
		return passphraseRecordRaw
	}
	p := &testProject{t: t, dir: t.TempDir()}
	copyFreshProject(t, p.dir)
	p.runPassphraseSet()
	raw, err := os.ReadFile(p.passphraseRecord())
	if err != nil {
		t.Fatal(err)
	}
	passphraseRecordRaw = raw
	return raw
}

// mintTokenAtTerminal mints a token as the person does at the embedded
// CLI: the approver passphrase typed at the terminal after --yes.
func (p *testProject) mintTokenAtTerminal(role, name string) string {
	p.t.Helper()
	p.setPassphrase()
	r := p.typed(testPassphrase+"\n", nil, "tokens", "create", "--role", role, "--name", name, "--yes")
	if r.exit != 0 || r.str("token") == "" {
		p.t.Fatalf("tokens create --role %s: exit %d %s %s", role, r.exit, r.stdout, r.stderr)
	}
	return r.str("token")
}

// TestHarnessFlagAtATerminal: --harness picks harness mode even when stdout
// is a terminal, and --direct with --harness is a usage error.
func TestHarnessFlagAtATerminal(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	out, _, exit := onTerminal(t, p.cmd("assume", id, "--harness", "--json"))
	if exit != 0 || !strings.Contains(out, `"envelope_kind":"spawn_request"`) || !strings.Contains(out, `"mode":"harness"`) {
		t.Fatalf("assume --harness at a terminal: exit %d %q", exit, out)
	}
	out, _, exit = onTerminal(t, p.cmd("assume", id, "--json"))
	if exit != 3 || !strings.Contains(out, "config-missing") || !strings.Contains(out, `"command":"dont assume `+id+` --harness"`) || strings.Contains(out, "# with") {
		t.Fatalf("assume at a terminal without a provider: exit %d %q", exit, out)
	}
	// The step is the very command typed, flags and all, with --harness.
	out, _, exit = onTerminal(t, p.cmd("guess", "what boils first?", "--n", "2", "--json"))
	if exit != 3 || !strings.Contains(out, `"command":"dont guess 'what boils first?' --n 2 --harness"`) {
		t.Fatalf("guess at a terminal without a provider: exit %d %q", exit, out)
	}
	r := p.run("assume", id, "--direct", "--harness")
	if r.exit != 2 || r.data()["code"] != "usage" || len(r.data()["remediation"].([]any)) == 0 {
		t.Fatalf("--direct --harness: exit %d %s", r.exit, r.stdout)
	}
	help, _ := p.cmd("assume", "--help").Output()
	if !strings.Contains(string(help), "--harness") || !strings.Contains(string(help), "Two modes") {
		t.Fatalf("assume --help does not explain the modes: %s", help)
	}
}

// TestVersion: `dont version` and `--version` print the version envelope to
// a machine and one line to a person.
func TestVersion(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"version"}, {"--version"}, {"version", "--json"}} {
		r := p.run(args...)
		if r.exit != 0 || r.env["envelope_kind"] != "version" || r.str("version") == "" {
			t.Fatalf("%v: exit %d %s", args, r.exit, r.stdout)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, exit := onTerminal(t, p.cmd(args...))
		if exit != 0 || !strings.HasPrefix(out, "dont ") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Fatalf("%v at a terminal: exit %d %q", args, exit, out)
		}
	}
}

// TestHelpAndPaths: an unknown help topic is a usage error, remediation
// names the CLI path of a grouped tool, and not-found names the id.
func TestHelpAndPaths(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.run("help", "nosuch")
	if r.exit != 2 || r.data()["code"] != "usage" || len(r.data()["remediation"].([]any)) == 0 {
		t.Fatalf("help nosuch: exit %d %s", r.exit, r.stdout)
	}
	r = p.run("sessions", "open", "--tier", "bogus")
	if r.exit != 2 || !strings.Contains(r.stdout, "dont sessions open --help") || strings.Contains(r.stdout, "dont sessions.open") {
		t.Fatalf("sessions open --tier bogus: exit %d %s", r.exit, r.stdout)
	}
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	missing := id[:len(id)-1] + map[bool]string{true: "1", false: "0"}[id[len(id)-1] == '0']
	r = p.run("show", missing)
	if r.data()["code"] != "not-found" || !strings.Contains(r.str("message"), missing) {
		t.Fatalf("show %s: exit %d %s", missing, r.exit, r.stdout)
	}
}
