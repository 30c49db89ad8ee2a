package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/passphrase"
)

// The approver passphrase (docs/security.md, "What only a person may
// do"): an agent runs as the person, may drop DONT_HARNESS and open a
// pseudo-terminal of its own to type "y" at; what it does not hold is the
// passphrase.

const wrongPassphrase = "i am the person, honestly"

func TestAnAgentThatDropsTheHarnessSignalAndTypesYIntoItsOwnPtyCannotApproveItsOwnEscalation(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	apr := escalated(t, p)
	pending := func(what string) {
		t.Helper()
		if r := p.ok("approvals", "show", apr); r.str("state") != "pending" || r.str("answered_by") != "" {
			t.Fatalf("%s answered the question: %s", what, r.stdout)
		}
	}
	// No passphrase set yet: nothing only a person may do is done.
	r := p.typed("y\n", nil, "approvals", "approve", apr)
	if r.exit != 2 || r.data()["code"] != string(passphraseNotSet) || !strings.Contains(r.stdout, "dont passphrase set") {
		t.Fatalf("approve with no passphrase set: exit %d %s", r.exit, r.stdout)
	}
	pending("a y with no passphrase set")
	// The person sets one; the agent types y and a guess into its own pty.
	p.setPassphrase()
	for _, args := range [][]string{{"approvals", "approve", apr}, {"approvals", "refuse", apr}} {
		r := p.typed("y\n"+wrongPassphrase+"\n", []string{"DONT_AUTHOR=" + testPerson}, args...)
		if r.exit != 1 || r.data()["code"] != string(personNotProven) {
			t.Fatalf("%v with a wrong passphrase: exit %d %s", args, r.exit, r.stdout)
		}
		pending("a y with a wrong passphrase")
		// A y and nothing else: the passphrase is not read from stdin.
		c := p.cmd(args...)
		typedAtTerminal(t, c, "y\n\x04")
		if r := p.runCmd(t, c, nil, strings.NewReader(testPassphrase+"\n")); r.exit == 0 {
			t.Fatalf("%v with the passphrase on stdin: exit 0 %s", args, r.stdout)
		}
		pending("a passphrase on stdin")
	}
}

func TestDontAuthorDoesNotDecideWhoAnswered(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.setPassphrase()
	apr := escalated(t, p)
	r := p.typed("y\n"+testPassphrase+"\n", []string{"DONT_AUTHOR=mallory", "USER=mallory"}, "approvals", "approve", apr)
	if r.exit != 0 || r.str("verdict") != "approved" {
		t.Fatalf("the person's approve: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if by := p.ok("approvals", "show", apr).str("answered_by"); by != "person:"+testPerson {
		t.Fatalf("answered_by %q; want the record's name, person:%s", by, testPerson)
	}
}

func TestAnAgentCannotMintATokenAtTheEmbeddedCLIWithoutThePassphrase(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	count := func() float64 { return p.ok("tokens", "list").data()["count"].(float64) }
	mints := [][]string{
		{"tokens", "create", "--role", "admin", "--yes"},
		{"tokens", "manage", "--op", "create", "--role", "approver", "--yes"},
	}
	for _, args := range mints {
		// No passphrase set, typed at a pty of its own.
		if r := p.typed(wrongPassphrase+"\n", nil, args...); r.exit != 2 || r.data()["code"] != string(passphraseNotSet) {
			t.Fatalf("%v with no passphrase set: exit %d %s", args, r.exit, r.stdout)
		}
	}
	p.setPassphrase()
	for _, args := range mints {
		// No terminal at all: --yes is the agent's, not a person's.
		if r := p.runIn(t, nil, strings.NewReader(testPassphrase+"\n"), args...); r.exit != 2 || r.data()["code"] != string(confirm.PersonRequired) {
			t.Fatalf("%v without a terminal: exit %d %s", args, r.exit, r.stdout)
		}
		if r := p.typed(wrongPassphrase+"\n", nil, args...); r.exit != 1 || r.data()["code"] != string(personNotProven) {
			t.Fatalf("%v with a wrong passphrase: exit %d %s", args, r.exit, r.stdout)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("%v tokens were minted", n)
	}
	// Listing them needs no passphrase; the person mints one with it.
	if r := p.run("tokens", "manage", "--op", "list"); r.exit != 0 {
		t.Fatalf("tokens manage --op list: exit %d %s", r.exit, r.stdout)
	}
	p.mintTokenAtTerminal("harness", "agent")
	if n := count(); n != 1 {
		t.Fatalf("%v tokens after the person minted one", n)
	}
}

func TestAnAgentCannotRevokeATokenAtTheEmbeddedCLIWithoutThePassphrase(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.setPassphrase()
	p.mintToken("approver", "the person's")
	id := p.ok("tokens", "list").data()["tokens"].([]any)[0].(map[string]any)["id"].(string)
	revokes := [][]string{{"tokens", "revoke", id, "--yes"}, {"tokens", "manage", "--op", "revoke", "--id", id, "--yes"}}
	for _, args := range revokes {
		if r := p.runIn(t, nil, nil, args...); r.exit != 2 || r.data()["code"] != string(confirm.PersonRequired) {
			t.Fatalf("%v without a terminal: exit %d %s", args, r.exit, r.stdout)
		}
		if r := p.typed(wrongPassphrase+"\n", nil, args...); r.exit != 1 || r.data()["code"] != string(personNotProven) {
			t.Fatalf("%v with a wrong passphrase: exit %d %s", args, r.exit, r.stdout)
		}
	}
	// revoke-all is interactive-only: its [y/N] on stdin, then the passphrase.
	c := p.cmd("tokens", "revoke-all")
	typedAtTerminal(t, c, wrongPassphrase+"\n")
	if r := p.runCmd(t, c, nil, strings.NewReader("y\n")); r.exit != 1 || r.data()["code"] != string(personNotProven) {
		t.Fatalf("revoke-all with a wrong passphrase: exit %d %s", r.exit, r.stdout)
	}
	tok := p.ok("tokens", "list").data()["tokens"].([]any)[0].(map[string]any)
	if tok["revoked_at"] != nil {
		t.Fatalf("the token was revoked: %v", tok)
	}
	if r := p.typed(testPassphrase+"\n", nil, "tokens", "revoke", id, "--yes"); r.exit != 0 || r.str("revoked_at") == "" {
		t.Fatalf("the person's revoke: exit %d %s", r.exit, r.stdout)
	}
}

func TestConfirmingAHeldCallNeedsThePassphrase(t *testing.T) {
	t.Parallel()
	g := newGateEnv(t, "embedded", true)
	s := g.p.mcp()
	conf, _ := s.call("lock", map[string]any{"id": g.claim, "reason": "settled"}).data()["confirmation_id"].(string)
	if conf == "" {
		t.Fatal("the lock over MCP was not held")
	}
	g.p.setPassphrase()
	r := g.p.typed("y\n"+wrongPassphrase+"\n", nil, "confirmations", "confirm", conf)
	if r.exit != 1 || r.data()["code"] != string(personNotProven) {
		t.Fatalf("confirm with a wrong passphrase: exit %d %s", r.exit, r.stdout)
	}
	if st := g.p.ok("confirmations", "show", conf).str("state"); st != string(confirm.StatePending) {
		t.Fatalf("the held call is %s", st)
	}
	if r := g.p.typed("y\n"+testPassphrase+"\n", []string{"DONT_AUTHOR=mallory"}, "confirmations", "confirm", conf); r.exit != 0 || r.str("status") != "locked" {
		t.Fatalf("the person's confirm: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if by := g.p.ok("confirmations", "show", conf).str("decided_by"); by != "person:"+testPerson {
		t.Fatalf("decided_by %q", by)
	}
}

func TestThePassphraseRecordIsASlowHashOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	p := newProject(t, "DONT_FAULT_PASSPHRASE_COST=") // the cost as shipped, not the tests' least
	p.setPassphrase()
	path := p.passphraseRecord()
	if strings.HasPrefix(path, p.dir+string(filepath.Separator)) {
		t.Fatalf("the record %s is in the workspace", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), testPassphrase) {
		t.Fatalf("the record holds the passphrase: %s", raw)
	}
	var rec passphrase.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Algorithm != "argon2id" || rec.Params.MemoryKiB < 64*1024 || rec.Params.Time < 3 || len(rec.Salt) < 16 || rec.Name != testPerson {
		t.Fatalf("the record: %s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the record's mode is %o", fi.Mode().Perm())
	}
	// Nothing in the workspace (the store included) holds it either.
	filepath.WalkDir(p.dir, func(f string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), testPassphrase) || strings.Contains(string(b), "argon2id") {
				t.Errorf("%s holds the passphrase or its record", f)
			}
		}
		return nil
	})
	// Changing it needs the current one.
	r := p.typed(wrongPassphrase+"\nmallory\nmallory's own phrase\nmallory's own phrase\n", nil, "passphrase", "set")
	if r.exit != 1 || r.data()["code"] != string(personNotProven) {
		t.Fatalf("a change with a wrong current passphrase: exit %d %s", r.exit, r.stdout)
	}
	if after, _ := os.ReadFile(path); string(after) != string(raw) {
		t.Fatal("the record changed")
	}
}

func TestAPassphraseRecordOthersCanWriteOrALinkIsNotUsed(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.setPassphrase()
	apr := escalated(t, p)
	path := p.passphraseRecord()
	unsafe := func(what string) {
		t.Helper()
		r := p.typed("y\n"+testPassphrase+"\n", nil, "approvals", "approve", apr)
		if r.exit != 3 || r.data()["code"] != string(passphraseRecordUnsafe) {
			t.Fatalf("approve with %s: exit %d %s", what, r.exit, r.stdout)
		}
		if st := p.ok("approvals", "show", apr).str("state"); st != "pending" {
			t.Fatalf("%s answered the question: %s", what, st)
		}
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	unsafe("a group-writable record")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "record.json")
	if err := os.Rename(path, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	unsafe("a record that is a link")
}

func TestInitAtATerminalSetsThePassphraseAndNoPassphraseSkipsIt(t *testing.T) {
	t.Parallel()
	p := &testProject{t: t, dir: t.TempDir()}
	r := p.typed(testPerson+"\n"+testPassphrase+"\n"+testPassphrase+"\n", nil, "init")
	if r.exit != 0 || r.str("passphrase_record") != p.passphraseRecord() {
		t.Fatalf("init at a terminal: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(p.passphraseRecord()); err != nil {
		t.Fatal(err)
	}
	q := &testProject{t: t, dir: t.TempDir()}
	r = q.typed(testPerson+"\n", nil, "init", "--no-passphrase")
	if r.exit != 0 || r.str("passphrase_record") != "" || !strings.Contains(r.stdout, "dont passphrase set") {
		t.Fatalf("init --no-passphrase: exit %d %s", r.exit, r.stdout)
	}
	if _, err := os.Stat(q.passphraseRecord()); err == nil {
		t.Fatal("init --no-passphrase set a passphrase")
	}
}

// approvals watch: each answer is proven by the passphrase before it is
// sent, and an answer with a wrong one is not sent at all.
func TestAWatchSendsOnlyAnswersProvenByThePassphrase(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	r := p.typed("y\n", nil, "approvals", "watch", "--session", ses)
	if r.exit != 2 || r.data()["code"] != string(passphraseNotSet) {
		t.Fatalf("watch with no passphrase set: exit %d %s", r.exit, r.stdout)
	}
	p.setPassphrase()
	w := p.cmd("approvals", "watch", "--session", ses)
	w.Env = append(w.Env, "DONT_AUTHOR=mallory")
	keys := withControllingTerminal(t, w)
	stdout, _ := w.StdoutPipe()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	out := readLines(stdout)
	out.expect(t, "watching "+ses)
	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait", "--", "make").str("approval_id")
	out.expect(t, apr+" [")
	fmt.Fprint(keys, "y\n"+wrongPassphrase+"\n")
	out.expect(t, apr+": not answered: "+string(personNotProven))
	if st := p.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("a wrong passphrase answered: %s", st)
	}
	fmt.Fprint(keys, "y\n"+testPassphrase+"\n")
	out.expect(t, apr+": approved (your answer decided)")
	if by := p.ok("approvals", "show", apr).str("answered_by"); by != "person:"+testPerson {
		t.Fatalf("answered_by %q", by)
	}
	fmt.Fprint(keys, "\x04")
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end on EOF")
	}
}
