package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newApprovalProject is a project whose final state must pass the
// frame-log guard, as CI would run it: what `dont approvals audit` runs,
// in this process (approvalAudit; 56 dont processes of a -short run).
func newApprovalProject(t *testing.T, env ...string) *testProject {
	p := newProject(t, append([]string{"DONT_APPROVAL_TIMEOUT=", "DONT_SUBSCRIBER_LEASE=", "DONT_SESSION="}, env...)...)
	t.Cleanup(func() {
		if p.corrupted {
			return
		}
		if rep, err := p.approvalAudit(); err != nil {
			t.Errorf("approvals audit of the final state: %v %+v", err, rep)
		}
	})
	return p
}

func (p *testProject) session(tier string) string {
	p.t.Helper()
	return p.ok("sessions", "open", "--tier", tier, "--name", "cli test").str("session_id")
}

// ndjson parses NDJSON envelopes.
func ndjson(t *testing.T, out string) []map[string]any {
	t.Helper()
	var envs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var env map[string]any
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("not an NDJSON envelope: %q", line)
		}
		envs = append(envs, env)
	}
	return envs
}

func (p *testProject) frames(args ...string) []map[string]any {
	p.t.Helper()
	c := p.cmd(append([]string{"approvals", "frames"}, args...)...)
	out, err := c.Output()
	if err != nil {
		p.t.Fatalf("approvals frames %v: %v %s", args, err, out)
	}
	var data []map[string]any
	for _, env := range ndjson(p.t, string(out)) {
		if env["envelope_kind"] != "frame" || env["ok"] != true {
			p.t.Fatalf("frame envelope: %v", env)
		}
		data = append(data, env["data"].(map[string]any))
	}
	return data
}

func TestEscalationAcrossProcessesNoWaitFramesApproveWait(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	if fs := p.frames("--session", ses); len(fs) != 0 { // a watcher's first read: live subscriber
		t.Fatalf("frames of a new session: %v", fs)
	}
	r := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "danger-full-access", "--reason", "installs into /usr/local", "--no-wait", "--", "make", "install", "PREFIX=/opt/a b")
	apr := r.str("approval_id")
	if r.env["envelope_kind"] != "approval" || r.str("state") != "pending" || r.str("preview") != "make install 'PREFIX=/opt/a b'" {
		t.Fatalf("escalate --no-wait: %s", r.stdout)
	}
	fs := p.frames("--session", ses, "--after", "0", "--wait", "5s")
	if len(fs) != 1 || fs[0]["request_id"] != apr || fs[0]["kind"] != "approval_requested" || fs[0]["cursor"] != 1.0 {
		t.Fatalf("frames: %v", fs)
	}
	p.okAnswered("approvals", "approve", apr) // another process answers (a person at its prompt)
	w := p.ok("approvals", "wait", apr)
	if w.env["envelope_kind"] != "escalation" || w.str("granted_tier") != "danger-full-access" || w.str("session_tier") != "read-only" {
		t.Fatalf("approvals wait: %s", w.stdout)
	}
	end := p.frames("--session", ses, "--after", "1")
	if len(end) != 1 || end[0]["kind"] != "approval_resolved" || end[0]["verdict"] != "approved" || end[0]["request_id"] != apr {
		t.Fatalf("ending frame: %v", end)
	}
	if tier := p.ok("sessions", "show", ses).str("tier"); tier != "read-only" {
		t.Fatalf("the grant changed the session's default tier to %s", tier)
	}
	// The same call cannot be widened twice.
	r = p.run("escalate", "--session", ses, "--call", "c1", "--to", "danger-full-access", "--reason", "again")
	if r.exit != 1 || r.data()["code"] != "hop-ratchet" {
		t.Fatalf("second widening: exit %d %s", r.exit, r.stdout)
	}
}

// startEscalate runs a blocking `dont escalate` and returns once it
// reports its question (its stderr line "asked apr:…").
func (p *testProject) startEscalate(env []string, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
	p.t.Helper()
	c := p.cmd(append([]string{"escalate"}, args...)...)
	c.Env = append(c.Env, env...)
	var out bytes.Buffer
	c.Stdout = &out
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		p.t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "asked apr:") {
		c.Process.Kill()
		p.t.Fatalf("escalate did not ask: %q %v %s", line, err, out.String())
	}
	go io.Copy(io.Discard, stderr)
	return c, &out, strings.Fields(line)[1][:len("apr:")+26]
}

func waitExit(t *testing.T, c *exec.Cmd, out *bytes.Buffer) (int, map[string]any) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatal("the command did not end")
	}
	var env map[string]any
	if err := json.Unmarshal(out.Bytes(), &env); err != nil {
		t.Fatalf("stdout is not one envelope: %q", out.String())
	}
	return c.ProcessState.ExitCode(), env
}

func code(env map[string]any) any { d, _ := env["data"].(map[string]any); return d["code"] }

func TestEscalateBlocksWhileAnotherProcessRefusesAndExitsOne(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("workspace-write")
	p.frames("--session", ses)
	c, out, apr := p.startEscalate(nil, "--session", ses, "--call", "build-7", "--to", "danger-full-access", "--reason", "needs the docker socket", "--", "docker", "build", ".")
	p.okAnswered("approvals", "refuse", apr, "--reason", "not on this host")
	exit, env := waitExit(t, c, out)
	if exit != 1 || code(env) != "approval-refused" || env["data"].(map[string]any)["entity_id"] != apr {
		t.Fatalf("escalate after a refusal: exit %d %v", exit, env)
	}
	if strings.Contains(out.String(), "granted_tier") {
		t.Fatal("a refusal carried a tier")
	}
}

func TestCtrlCWhileEscalateWaitsCancelsTheRequest(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	c, out, apr := p.startEscalate(nil, "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "writes the cache")
	c.Process.Signal(syscall.SIGINT)
	exit, env := waitExit(t, c, out)
	if exit != 130 || code(env) != "approval-cancelled" {
		t.Fatalf("Ctrl-C: exit %d %v", exit, env)
	}
	if v := p.ok("approvals", "show", apr).str("verdict"); v != "cancelled" {
		t.Fatalf("verdict after Ctrl-C: %s", v)
	}
	fs := p.frames("--session", ses, "--after", "1")
	if len(fs) != 1 || fs[0]["verdict"] != "cancelled" || fs[0]["request_id"] != apr {
		t.Fatalf("the cancel was not announced: %v", fs)
	}
	// A late answer gets the recorded verdict and changes nothing.
	r := p.okAnswered("approvals", "approve", apr)
	if r.str("verdict") != "cancelled" || fmt.Sprint(warnings(r)) != "[approval-already-resolved]" {
		t.Fatalf("late approve: %s", r.stdout)
	}
}

func TestManyProcessesAnswerOneRequestAndTheFirstAnswerWins(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait").str("approval_id")
	results := make([]result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				results[i] = p.answered(nil, "approvals", "approve", apr)
			} else {
				results[i] = p.answered(nil, "approvals", "refuse", apr, "--reason", "no")
			}
		}(i)
	}
	wg.Wait()
	verdict := p.ok("approvals", "show", apr).str("verdict")
	applied := 0
	for i, r := range results {
		if r.exit != 0 {
			t.Fatalf("answer %d: exit %d %s", i, r.exit, r.stdout)
		}
		if r.data()["applied"] == true {
			applied++
		} else if fmt.Sprint(warnings(r)) != "[approval-already-resolved]" {
			t.Fatalf("a losing answer: %s", r.stdout)
		}
		if r.str("verdict") != verdict {
			t.Fatalf("answer %d was told %s, recorded %s", i, r.str("verdict"), verdict)
		}
	}
	if applied != 1 || len(p.frames("--session", ses, "--after", "1")) != 1 {
		t.Fatalf("%d answers applied", applied)
	}
}

func TestRefusalsBeforeAnyQuestionExitOne(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	for _, tc := range []struct {
		args []string
		code string
	}{
		{[]string{"--to", "workspace-write"}, "no-subscriber"},
		{[]string{"--to", "root"}, "unknown-tier"},
		{[]string{"--to", "read-only"}, "hop-not-allowed"},
	} {
		r := p.run(append([]string{"escalate", "--session", ses, "--call", "c1", "--reason", "r"}, tc.args...)...)
		if r.exit != 1 || r.data()["code"] != tc.code {
			t.Fatalf("%v: exit %d %s", tc.args, r.exit, r.stdout)
		}
		if rem := r.data()["remediation"].([]any); len(rem) == 0 || strings.Contains(fmt.Sprint(rem), "<session>") {
			t.Fatalf("%v: remediation %v", tc.args, rem)
		}
		if id, _ := r.data()["entity_id"].(string); p.ok("approvals", "show", id).data()["asked"] != false {
			t.Fatalf("%v: the refusal was not recorded as unasked", tc.args)
		}
	}
	if n := p.ok("approvals", "list", "--pending").data()["count"]; n != 0.0 {
		t.Fatalf("%v questions after refusals", n)
	}
	if r := p.run("sessions", "open", "--tier", "root"); r.exit != 2 {
		t.Fatalf("sessions open with an unknown tier: exit %d", r.exit)
	}
	if r := p.run("escalate", "--session", "ses:01HX05A9K8VP0000000000000A", "--call", "c", "--to", "workspace-write", "--reason", "r"); r.exit != 3 || r.data()["code"] != "session-not-found" {
		t.Fatalf("unknown session: exit %d %s", r.exit, r.stdout)
	}
}

func TestApprovalTimeoutFromEnvironment(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	c, out, apr := p.startEscalate([]string{"DONT_APPROVAL_TIMEOUT=300ms"}, "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r")
	exit, env := waitExit(t, c, out)
	if exit != 1 || code(env) != "approval-timed-out" {
		t.Fatalf("exit %d %v", exit, env)
	}
	if r := p.ok("approvals", "show", apr); r.str("verdict") != "timed-out" {
		t.Fatalf("verdict %s", r.str("verdict"))
	}
	bad := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=soon"}, "escalate", "--session", ses, "--call", "c2", "--to", "workspace-write", "--reason", "r")
	if bad.exit != 3 || bad.data()["code"] != "config-invalid" {
		t.Fatalf("bad DONT_APPROVAL_TIMEOUT: exit %d %s", bad.exit, bad.stdout)
	}
	if r := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=soon"}, "list"); r.exit != 0 {
		t.Fatalf("a bad DONT_APPROVAL_TIMEOUT broke an unrelated verb: %s", r.stdout)
	}
}

// lines reads a process's stdout line by line.
type lines struct {
	ch  chan string
	all strings.Builder
}

func readLines(r io.Reader) *lines {
	l := &lines{ch: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
		close(l.ch)
	}()
	return l
}

// expect returns the first line containing want (the timeout only guards
// against a hung test; events are ordered by the output itself).
func (l *lines) expect(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-l.ch:
			if !ok {
				t.Fatalf("output ended before %q:\n%s", want, l.all.String())
			}
			l.all.WriteString(line + "\n")
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("no %q in:\n%s", want, l.all.String())
		}
	}
}

func TestWatchAnswersFromTheTerminalAndNeverSendsAKeystrokeToADeadRequest(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.setPassphrase()
	w := p.cmd("approvals", "watch", "--session", ses)
	keys := withControllingTerminal(t, w) // answers are typed at the terminal, never read from stdin
	stdout, _ := w.StdoutPipe()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	out := readLines(stdout)
	out.expect(t, "watching "+ses) // its first read made it a live subscriber

	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "danger-full-access", "--reason", "installs", "--no-wait", "--", "make", "install").str("approval_id")
	out.expect(t, apr+" [")
	fmt.Fprint(keys, "y\n"+testPassphrase+"\n") // a yes, proven by the approver passphrase
	out.expect(t, apr+": approved (your answer decided)")
	if r := p.ok("approvals", "wait", apr); r.str("granted_tier") != "danger-full-access" {
		t.Fatalf("wait: %s", r.stdout)
	}

	// A request whose deadline passes is cleared; the next keystroke is not sent.
	dead := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=2s"}, "escalate", "--session", ses, "--call", "c2", "--to", "workspace-write", "--reason", "r", "--no-wait").str("approval_id")
	out.expect(t, dead+" [")
	cleared := out.expect(t, dead+": ")
	if !strings.Contains(cleared, "cleared") {
		t.Fatalf("not cleared: %q", cleared)
	}
	fmt.Fprint(keys, "y\n")
	out.expect(t, "no open request; the input was not sent")
	if r := p.ok("approvals", "show", dead); r.str("verdict") != "timed-out" || r.str("answered_by") != "" {
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

// The watch client's rules, driven through its model.

// The same protocol through `dont serve` with bearer tokens: the harness
// asks, only an approver answers, and the frames long-poll over HTTP.
func TestEscalationOverTheAPIOnlyApproversAnswer(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	harness, approver := p.token("harness"), p.token("approver")
	srv := p.serve(t)
	asHarness := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	asApprover := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + approver}
	ses := p.runEnv(asHarness, "sessions", "open", "--tier", "read-only").str("session_id")
	if r := p.runEnv(asApprover, "approvals", "frames", "--session", ses); r.exit != 0 || r.stdout != "" {
		t.Fatalf("approver frames: exit %d %s", r.exit, r.stdout)
	}
	r := p.runEnv(asHarness, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait", "--", "make")
	apr := r.str("approval_id")
	if r.exit != 0 || apr == "" {
		t.Fatalf("remote escalate: exit %d %s", r.exit, r.stdout)
	}
	c := p.cmd("approvals", "frames", "--session", ses, "--wait", "5s")
	c.Env = append(c.Env, asApprover...)
	out, err := c.Output()
	if envs := ndjson(t, string(out)); err != nil || len(envs) != 1 || envs[0]["data"].(map[string]any)["request_id"] != apr {
		t.Fatalf("remote frames: %v %s", err, out)
	}
	if own := p.answered(asHarness, "approvals", "approve", apr); own.exit != 3 || own.data()["code"] != "forbidden" {
		t.Fatalf("the harness answered its own request: exit %d %s", own.exit, own.stdout)
	}
	if a := p.answered(asApprover, "approvals", "approve", apr); a.exit != 0 || a.data()["applied"] != true {
		t.Fatalf("approver: exit %d %s", a.exit, a.stdout)
	}
	if w := p.runEnv(asHarness, "approvals", "wait", apr); w.exit != 0 || w.str("granted_tier") != "workspace-write" {
		t.Fatalf("remote wait: exit %d %s", w.exit, w.stdout)
	}
}

// A bounded wait that ends before the verdict exits 1 (approval-still-open),
// never 0, so that `dont approvals wait … --max-wait 1s && make install`
// does not run the command; the question stays open for the next wait.
func TestABoundedApprovalsWaitOnAnOpenQuestionExitsOneNotZero(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	apr := p.ok("escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "writes", "--no-wait", "--", "make", "install").str("approval_id")
	r := p.run("approvals", "wait", apr, "--max-wait", "100ms")
	if r.exit != 1 || r.data()["code"] != "approval-still-open" {
		t.Fatalf("a bounded wait on an open question: exit %d %s", r.exit, r.stdout)
	}
	if st := p.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("the bounded wait left the question %s", st)
	}
	p.okAnswered("approvals", "approve", apr)
	if w := p.ok("approvals", "wait", apr, "--max-wait", "30s"); w.str("granted_tier") != "workspace-write" {
		t.Fatalf("a bounded wait after the approval: %s", w.stdout)
	}
}
