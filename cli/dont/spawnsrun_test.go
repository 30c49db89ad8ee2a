package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/personal"
)

// runnerBackend is where `dont spawns run` reaches dont: the embedded
// store (the runner serves its agents on a loopback port) or a real
// `dont serve`, with a harness token.
type runnerBackend struct {
	name string
	// env is the environment of every command of the test (assume, the
	// runner): nothing for embedded, DONT_ENDPOINT and a harness token
	// for serve.
	env []string
}

// runnerBackends starts each backend over a fresh project whose spawns
// expire after timeout.
func runnerBackends(t *testing.T, timeout string) map[string]func(t *testing.T) (*testProject, runnerBackend) {
	return map[string]func(t *testing.T) (*testProject, runnerBackend){
		"embedded": func(t *testing.T) (*testProject, runnerBackend) {
			p := newProject(t, "DONT_SPAWN_TIMEOUT="+timeout)
			p.configureAgent(t)
			return p, runnerBackend{name: "embedded"}
		},
		"serve": func(t *testing.T) (*testProject, runnerBackend) {
			p := newProject(t)
			p.configureAgent(t)
			tok := p.token("harness")
			srv := p.serve(t, "DONT_SPAWN_TIMEOUT="+timeout)
			return p, runnerBackend{name: "serve", env: []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + tok}}
		},
	}
}

// byID is how the runner is given a spawn: embedded, by its id (the
// runner holds the store, and makes its callback token); against an
// endpoint, as issued on stdin, since a read by id never carries the
// token (it is shown once, at issue).
func (b runnerBackend) byID(rid string, issued []byte) ([]string, io.Reader) {
	if b.name == "embedded" {
		return []string{"--request-id", rid}, nil
	}
	return nil, bytes.NewReader(issued)
}

// configureAgent adds the scripted agent (testdata/agent.sh) as the
// profile "script", with the variables it needs allowed, in the person's
// own config (a profile in the workspace config counts only once the
// person trusted it: config_test.go).
func (p *testProject) configureAgent(t *testing.T) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	p.writePersonConfig(t, fmt.Sprintf("[agents.script]\ncommand = [\"bash\", %q]\nenv = [\"PATH\", \"HOME\", \"XDG_CACHE_HOME\", \"DONT_BIN\", \"AGENT_MODE\", \"AGENT_LOG\", \"AGENT_SLEEP\"]\n", script))
}

// assumeJSON concludes a claim and assumes it on the backend: the claim
// id and the spawn_request envelope as printed.
func (p *testProject) assumeJSON(t *testing.T, b runnerBackend) (string, string, []byte) {
	t.Helper()
	c := p.runIn(t, b.env, nil, "conclude", "water boils at 100 C at sea level")
	id := c.str("id")
	r := p.runIn(t, b.env, nil, "assume", id, "--json")
	if r.exit != 0 || r.env["envelope_kind"] != "spawn_request" {
		t.Fatalf("assume: %d %s %s", r.exit, r.stdout, r.stderr)
	}
	return id, r.str("request_id"), []byte(r.stdout)
}

// agentLog reads the scripted agent's log as key → values.
func agentLog(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, _ := os.ReadFile(path)
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// alive reports whether pid still runs a second from now: a process that
// is gone, or a zombie waiting for init to reap it, is not.
func alive(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil && syscall.Kill(pid, 0) != nil {
			return false
		}
		if err == nil {
			if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
				return false
			}
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runOf(t *testing.T, r result) map[string]any {
	t.Helper()
	if r.env["envelope_kind"] != "spawn_run" {
		t.Fatalf("envelope_kind %v, want spawn_run: %s %s", r.env["envelope_kind"], r.stdout, r.stderr)
	}
	runs, _ := r.data()["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1: %s", len(runs), r.stdout)
	}
	return runs[0].(map[string]any)
}

func historyKinds(t *testing.T, p *testProject, b runnerBackend, id string) []string {
	t.Helper()
	h := p.runIn(t, b.env, nil, "show", id, "--history")
	var kinds []string
	evs, _ := h.data()["history"].([]any)
	for _, e := range evs {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	return kinds
}

func TestSpawnsRunResolvesASpawnThroughItsSubagent(t *testing.T) {
	t.Parallel()
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			p, b := open(t)
			id, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=ok", "AGENT_LOG="+logf, "DONT_TEST_SECRET=hunter2")
			r := p.runIn(t, env, bytes.NewReader(req), "spawns", "run", "--agent", "script")
			run := runOf(t, r)
			if r.exit != 0 || run["outcome"] != "resolved" || run["request_id"] != rid || run["spawn_outcome"] != "callback-applied" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			if s := p.runIn(t, b.env, nil, "show", id).str("status"); s != "verified" {
				t.Fatalf("the claim is %s after its subagent dismissed the doubt", s)
			}
			got := agentLog(t, logf)
			if got["show"][0] != "0" || got["dismiss"][0] != "0" {
				t.Fatalf("the agent's calls: %v", got)
			}
			env2 := map[string]string{}
			for _, kv := range got["env"] {
				k, v, _ := strings.Cut(kv, "=")
				env2[k] = v
			}
			if env2["DONT_REQUEST_ID"] != rid || !strings.HasPrefix(env2["DONT_TOKEN"], "dontcb_"+rid) || !strings.HasPrefix(env2["DONT_ENDPOINT"], "http://127.0.0.1:") {
				t.Fatalf("the agent's DONT_ variables: %v", env2)
			}
			if _, leaked := env2["DONT_TEST_SECRET"]; leaked {
				t.Fatal("a variable the profile does not allow reached the agent")
			}
			for _, kv := range b.env {
				if strings.HasPrefix(kv, "DONT_TOKEN=") && env2["DONT_TOKEN"] == strings.TrimPrefix(kv, "DONT_TOKEN=") {
					t.Fatal("the runner's own token reached the agent")
				}
			}
		})
	}
}

func TestSpawnsRunKillsAHangingAgentAtTheSpawnsExpiryAndTheSpawnTimesOut(t *testing.T) {
	for name, open := range runnerBackends(t, "2s") {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the backends are independent; each waits out a spawn timeout
			p, b := open(t)
			id, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=hang", "AGENT_LOG="+logf)
			start := time.Now()
			args, stdin := b.byID(rid, req)
			r := p.runIn(t, env, stdin, append([]string{"spawns", "run", "--agent", "script", "--heartbeat", "0", "--grace", "200ms"}, args...)...)
			run := runOf(t, r)
			if r.exit != 1 || run["outcome"] != "timed-out" || run["killed"] != "expired" || run["spawn_outcome"] != "timeout-restored" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("the run took %v for a 2s spawn", took)
			}
			kinds := historyKinds(t, p, b, id)
			if !strings.Contains(strings.Join(kinds, " "), "spawn_timeout") {
				t.Fatalf("history %v has no spawn_timeout", kinds)
			}
			// The agent's own child was in its process group: it is gone too.
			child := agentLog(t, logf)["child"]
			if len(child) != 1 {
				t.Fatalf("the agent logged no child: %v", agentLog(t, logf))
			}
			pid, _ := strconv.Atoi(child[0])
			if pid <= 0 {
				t.Fatalf("child pid %q", child[0])
			}
			if alive(pid) {
				t.Fatalf("the hanging agent's child %d outlived the run", pid)
			}
		})
	}
}

func TestAnAgentThatTriesAForbiddenToolWithItsTokenIsRefusedAndRecorded(t *testing.T) {
	t.Parallel()
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			p, b := open(t)
			id, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=forbidden", "AGENT_LOG="+logf)
			args, stdin := b.byID(rid, req)
			c := p.cmd(append([]string{"spawns", "run", "--agent", "script"}, args...)...)
			var stderr bytes.Buffer
			r := p.runCmd(t, c, append(env, "DONT_TEST_STDERR="), stdin)
			stderr.WriteString(r.stderr)
			run := runOf(t, r)
			if r.exit != 0 || run["outcome"] != "resolved" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			got := agentLog(t, logf)
			for _, k := range []string{"lock", "tokens-create"} {
				if len(got[k]) != 1 || strings.HasPrefix(got[k][0], "0 ") || !strings.Contains(got[k][0], `"code":"forbidden"`) {
					t.Fatalf("%s with the callback token: %v", k, got[k])
				}
			}
			if s := p.runIn(t, b.env, nil, "show", id).str("status"); s != "verified" {
				t.Fatalf("status %s: the forbidden lock changed the claim", s)
			}
			if b.name == "embedded" && !strings.Contains(stderr.String(), `"status":403`) {
				t.Fatalf("the runner's loopback server did not record the refusal:\n%s", stderr.String())
			}
			toks := p.run("tokens", "list")
			if list, _ := toks.data()["tokens"].([]any); len(list) > 1 {
				t.Fatalf("the agent minted a token: %v", list)
			}
		})
	}
}

func TestHeartbeatsKeepASlowAgentAlivePastTheOriginalExpiry(t *testing.T) {
	for name, open := range runnerBackends(t, "2s") {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the backends are independent; each waits out a spawn timeout
			p, b := open(t)
			id, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=slow", "AGENT_SLEEP=4", "AGENT_LOG="+logf)
			issued := p.runIn(t, b.env, nil, "spawns", "manage", "--op", "show", "--request-id", rid).str("expires_at")
			r := p.runIn(t, env, bytes.NewReader(req), "spawns", "run", "--agent", "script", "--heartbeat", "300ms", "--extend", "2s", "--deadline", "20s")
			run := runOf(t, r)
			if r.exit != 0 || run["outcome"] != "resolved" || run["heartbeats"].(float64) < 2 {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			kinds := strings.Join(historyKinds(t, p, b, id), " ")
			if !strings.Contains(kinds, "spawn_heartbeat") || strings.Contains(kinds, "spawn_timeout") {
				t.Fatalf("history: %s", kinds)
			}
			first, _ := time.Parse(time.RFC3339Nano, issued)
			ended, _ := time.Parse(time.RFC3339Nano, run["ended_at"].(string))
			if !ended.After(first) {
				t.Fatalf("the run ended at %v, before the original expiry %v: nothing was kept alive", ended, first)
			}
		})
	}
}

func TestInterruptingTheRunnerKillsItsAgentsAndExits130(t *testing.T) {
	p := newProject(t)
	p.configureAgent(t)
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	logf := filepath.Join(t.TempDir(), "agent.log")
	c := p.cmd("spawns", "run", "--agent", "script", "--request-id", rid, "--grace", "200ms")
	c.Env = append(c.Env, "DONT_BIN="+binary, "AGENT_MODE=hang", "AGENT_LOG="+logf)
	var out bytes.Buffer
	c.Stdout = &out
	errPipe, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(agentLog(t, logf)["child"]) == 0 {
		if time.Now().After(deadline) {
			c.Process.Kill()
			c.Wait()
			t.Fatal("the agent never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"outcome":"interrupted"`) || !strings.Contains(out.String(), `"killed":"interrupt"`) {
		t.Fatalf("envelope %s", out.String())
	}
	pid, _ := strconv.Atoi(agentLog(t, logf)["child"][0])
	if pid > 0 && alive(pid) {
		t.Fatalf("the agent's child %d outlived the interrupt", pid)
	}
	// Its agent is gone: the spawn is cancelled, its claim free at once.
	if !strings.Contains(out.String(), `"cancelled":"the runner was interrupted"`) {
		t.Fatalf("envelope %s", out.String())
	}
	if s := p.ok("spawns", "--pending").data()["count"]; s != float64(0) {
		t.Fatalf("the interrupted spawn is left pending: %v", s)
	}
}

func TestAnAgentThatExitsWithoutResolvingHasItsSpawnCancelledAndExitsOne(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.configureAgent(t)
	for mode, want := range map[string][2]string{"exit": {"unresolved", "the agent exited without resolving its spawn"}, "fail": {"agent-failed", "the agent failed without resolving its spawn"}} {
		id, _, req := p.assumeJSON(t, runnerBackend{})
		r := p.runIn(t, []string{"DONT_BIN=" + binary, "AGENT_MODE=" + mode}, bytes.NewReader(req), "spawns", "run", "--agent", "script")
		run := runOf(t, r)
		if r.exit != 1 || run["outcome"] != want[0] || run["spawn_outcome"] != "cancelled" || run["cancelled"] != want[1] {
			t.Fatalf("%s: exit %d, run %v", mode, r.exit, run)
		}
		if s := p.ok("show", id).str("status"); s == "pending" {
			t.Fatalf("%s: the claim is still held by its spawn", mode)
		}
	}
}

func TestSpawnsRunRefusesBadInputWithRemediation(t *testing.T) {
	p := newProject(t)
	p.configureAgent(t)
	// A profile using what agent profiles do not evaluate (a variable).
	cfg := personal.Dirs{Home: p.personHomeDir(t)}.ConfigPath()
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "[agents.vars]\ncommand = [\"agent\", \"{{$id := .RequestID}}{{$id}}\"]\nprompt = \"stdin\"")
	f.Close()
	for name, c := range map[string]struct {
		stdin string
		args  []string
		exit  int
	}{
		"no request":          {"", []string{"--agent", "script"}, 2},
		"not a request":       {`{"envelope_kind":"claim","data":{}}`, []string{"--agent", "script"}, 2},
		"not json":            {"nope", []string{"--agent", "script"}, 2},
		"unknown agent":       {"", []string{"--agent", "nope", "--watch"}, 2},
		"watch and ids":       {"", []string{"--agent", "script", "--watch", "--request-id", "spawn:x"}, 2},
		"generic, no command": {"", []string{"--agent", "generic", "--watch"}, 3},
		"a template variable": {"", []string{"--agent", "vars", "--watch"}, 3},
		"negative deadline":   {"", []string{"--agent", "script", "--watch", "--deadline", "-1s"}, 2},
		"workdir the project": {"", []string{"--agent", "script", "--watch", "--workdir", "."}, 2},
		"workdir in it":       {"", []string{"--agent", "script", "--watch", "--workdir", ".dont"}, 2},
		"workdir not a dir":   {"", []string{"--agent", "script", "--watch", "--workdir", "nope"}, 2},
	} {
		r := p.runIn(t, nil, strings.NewReader(c.stdin), append([]string{"spawns", "run"}, c.args...)...)
		rem, _ := r.data()["remediation"].([]any)
		if r.exit != c.exit || r.env["ok"] != false || len(rem) == 0 {
			t.Errorf("%s: exit %d (want %d), %s", name, r.exit, c.exit, r.stdout)
		}
		if name == "a template variable" && (r.str("code") != "config-invalid" || !strings.Contains(r.str("message"), "variables are not supported")) {
			t.Errorf("%s: %s", name, r.stdout)
		}
	}
}

func TestACallbackTokenThroughTheCLICannotHeartbeatAnotherSpawn(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	tok := p.token("harness")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + tok}
	_, rid, req := p.assumeJSON(t, runnerBackend{env: remote})
	_, other, _ := p.assumeJSON(t, runnerBackend{env: remote})
	var issued struct {
		Data struct {
			Callback struct{ Token string } `json:"callback"`
		} `json:"data"`
	}
	if err := json.Unmarshal(req, &issued); err != nil || issued.Data.Callback.Token == "" {
		t.Fatalf("no callback token in %s", req)
	}
	cb := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + issued.Data.Callback.Token}
	r := p.runIn(t, cb, nil, "spawns", "heartbeat", other, "--extend", "720h")
	rem, _ := r.data()["remediation"].([]any)
	if r.exit == 0 || r.str("code") != "forbidden" || len(rem) == 0 {
		t.Fatalf("a callback token heartbeating another spawn: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runIn(t, cb, nil, "spawns", "heartbeat", rid, "--extend", "1m"); r.exit != 0 || r.str("state") != "pending" {
		t.Fatalf("its own heartbeat: exit %d %s", r.exit, r.stdout)
	}
}

func TestWatchRunsEveryNewPendingSpawnUntilInterrupted(t *testing.T) {
	p := newProject(t)
	p.configureAgent(t)
	c := p.cmd("spawns", "run", "--agent", "script", "--watch", "--poll", "100ms", "--max-parallel", "2")
	c.Env = append(c.Env, "DONT_BIN="+binary, "AGENT_MODE=ok")
	var out bytes.Buffer
	c.Stdout = &out
	errPipe, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
		}
	}()
	var claims []string
	for i := 0; i < 2; i++ {
		id, _, _ := p.assumeJSON(t, runnerBackend{})
		claims = append(claims, id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range claims {
		for p.ok("show", id).str("status") != "verified" {
			if time.Now().After(deadline) {
				t.Fatalf("%s was not verified by a watched run", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"resolved":2`) {
		t.Fatalf("envelope %s", out.String())
	}
}

func TestAHeartbeatIsCappedBySpawnMaxLeaseFromTheConfigFile(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	cfg := p.writePersonConfig(t, `spawn_max_lease = "26h"`)
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	r := p.ok("spawns", "heartbeat", rid, "--extend", "48h")
	if r.data()["capped"] != true || r.data()["moved"] != true || !strings.Contains(strings.Join(warnings(r), ","), "spawn-lease-capped") {
		t.Fatalf("heartbeat past a 26h lease: %s", r.stdout)
	}
	issued, _ := time.Parse(time.RFC3339Nano, p.ok("spawns", "manage", "--op", "show", "--request-id", rid).str("issued_at"))
	if exp, _ := time.Parse(time.RFC3339Nano, r.str("expires_at")); !exp.Equal(issued.Add(26 * time.Hour)) {
		t.Fatalf("expires_at %v, want issued_at + 26h (%v)", exp, issued.Add(26*time.Hour))
	}
	os.WriteFile(cfg, []byte(`spawn_max_lease = "soon"`), 0o600)
	bad := p.run("spawns", "heartbeat", rid)
	if bad.exit != 3 || bad.str("code") != "config-invalid" {
		t.Fatalf("a bad spawn_max_lease: exit %d %s", bad.exit, bad.stdout)
	}
	os.WriteFile(cfg, nil, 0o600)
}

func TestAWatchWithABadTokenFailsAtOnceWithTheServersRemediation(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.configureAgent(t)
	srv := p.serve(t)
	r := p.runIn(t, []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=dont_tok:nope_nope"}, nil, "spawns", "run", "--agent", "script", "--watch")
	rem, _ := r.data()["remediation"].([]any)
	if r.exit == 0 || r.env["ok"] != false || len(rem) == 0 {
		t.Fatalf("a watch with a bad token: exit %d %s", r.exit, r.stdout)
	}
}

func TestMaxParallelBoundsTheAgentsRunningAtOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.configureAgent(t)
	var stdin bytes.Buffer
	for i := 0; i < 3; i++ {
		_, _, req := p.assumeJSON(t, runnerBackend{})
		stdin.Write(req)
	}
	logf := filepath.Join(t.TempDir(), "agent.log")
	r := p.runIn(t, []string{"DONT_BIN=" + binary, "AGENT_MODE=slow", "AGENT_SLEEP=0.3", "AGENT_LOG=" + logf}, &stdin,
		"spawns", "run", "--agent", "script", "--max-parallel", "1")
	if r.exit != 0 || r.data()["resolved"] != float64(3) {
		t.Fatalf("exit %d %s", r.exit, r.stdout)
	}
	got := agentLog(t, logf)
	begins, ends := got["begin"], got["end"]
	if len(begins) != 3 || len(ends) != 3 {
		t.Fatalf("agent log %v", got)
	}
	// One at a time: each agent began after the one before it ended.
	for i := 1; i < 3; i++ {
		b, _ := strconv.ParseInt(begins[i], 10, 64)
		e, _ := strconv.ParseInt(ends[i-1], 10, 64)
		if b < e {
			t.Fatalf("agent %d began %dms before agent %d ended, with --max-parallel 1", i, (e-b)/1e6, i-1)
		}
	}
}

// runWatched runs the binary like runIn, but kills it after limit: a
// runner that would keep its agent past the deadline fails the test
// instead of hanging it. It returns how long the run took.
func (p *testProject) runWatched(t *testing.T, limit time.Duration, env []string, stdin io.Reader, args ...string) (result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := p.cmd(args...)
	w := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	w.Dir, w.Env, w.SysProcAttr = c.Dir, c.Env, c.SysProcAttr
	w.WaitDelay = time.Second // an agent left holding the output does not hold the test
	start := time.Now()
	r := p.runCmd(t, w, env, stdin)
	return r, time.Since(start)
}

// killLogged kills, when the test ends, every process the agent logged
// under keys: what a runner that failed to contain its agent left behind.
func killLogged(t *testing.T, logf string, keys ...string) {
	t.Cleanup(func() {
		got := agentLog(t, logf)
		for _, k := range keys {
			for _, v := range got[k] {
				if pid, _ := strconv.Atoi(v); pid > 1 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
}

func loggedPID(t *testing.T, logf, key string) int {
	t.Helper()
	v := agentLog(t, logf)[key]
	if len(v) != 1 {
		t.Fatalf("the agent logged %d %q pids: %v", len(v), key, agentLog(t, logf))
	}
	pid, _ := strconv.Atoi(v[0])
	if pid <= 1 {
		t.Fatalf("%s pid %q", key, v[0])
	}
	return pid
}

func TestAHungSilentAgentIsNotHeartbeatedAndIsKilledAtTheDeadlineAndItsSpawnCancelled(t *testing.T) {
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the backends are independent; each waits out a deadline
			p, b := open(t)
			id, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			killLogged(t, logf, "started", "child")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=silent", "AGENT_LOG="+logf)
			args, stdin := b.byID(rid, req)
			r, took := p.runWatched(t, 20*time.Second, env, stdin, append([]string{"spawns", "run", "--agent", "script",
				"--deadline", "2s", "--heartbeat", "200ms", "--grace", "200ms"}, args...)...)
			run := runOf(t, r)
			if r.exit != 1 || run["outcome"] != "timed-out" || run["killed"] != "deadline" || run["cancelled"] != "deadline reached" || run["spawn_outcome"] != "cancelled" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			if run["heartbeats"] != float64(0) || run["heartbeats_withheld"].(float64) < 1 {
				t.Fatalf("a silent agent's spawn was heartbeaten: %v", run)
			}
			if took > 15*time.Second {
				t.Fatalf("the run took %v for a 2s deadline", took)
			}
			// The claim is free at once, not at the spawn's expiry an hour
			// away, and its history says why.
			if n := p.runIn(t, b.env, nil, "spawns", "--pending").data()["count"]; n != float64(0) {
				t.Fatalf("%v spawns still pending after the deadline", n)
			}
			h := p.runIn(t, b.env, nil, "show", id, "--history")
			if !strings.Contains(h.stdout, `"spawn_cancelled"`) || !strings.Contains(h.stdout, "deadline reached") {
				t.Fatalf("history without the runner's cancel: %s", h.stdout)
			}
			for _, k := range []string{"started", "child"} {
				if pid := loggedPID(t, logf, k); alive(pid) {
					t.Fatalf("the hung agent's %s process %d outlived the deadline", k, pid)
				}
			}
		})
	}
}

func TestASubagentThatHeartbeatsItselfCannotOutliveTheDeadline(t *testing.T) {
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, b := open(t)
			_, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			killLogged(t, logf, "started")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=selfbeat", "AGENT_LOG="+logf)
			args, stdin := b.byID(rid, req)
			r, took := p.runWatched(t, 20*time.Second, env, stdin, append([]string{"spawns", "run", "--agent", "script",
				"--deadline", "2s", "--heartbeat", "200ms", "--grace", "200ms"}, args...)...)
			run := runOf(t, r)
			if r.exit != 1 || run["killed"] != "deadline" || run["cancelled"] != "deadline reached" || run["spawn_outcome"] != "cancelled" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			if took > 15*time.Second {
				t.Fatalf("the run took %v for a 2s deadline", took)
			}
			// It did move its own expiry (towards the lease, a week away).
			if beats := agentLog(t, logf)["selfbeat"]; len(beats) == 0 || beats[0] != "0" {
				t.Fatalf("the agent's own heartbeats: %v", beats)
			}
			if pid := loggedPID(t, logf, "started"); alive(pid) {
				t.Fatalf("the self-heartbeating agent %d outlived the deadline", pid)
			}
			if n := p.runIn(t, b.env, nil, "spawns", "--pending").data()["count"]; n != float64(0) {
				t.Fatalf("%v spawns still pending after the deadline", n)
			}
		})
	}
}

func TestAnAgentThatEscapesWithSetsidOrADoubleForkIsKilledAtTheEnd(t *testing.T) {
	t.Parallel()
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			p, b := open(t)
			_, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			killLogged(t, logf, "escaped", "daemon")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=escape", "AGENT_LOG="+logf)
			args, stdin := b.byID(rid, req)
			r, _ := p.runWatched(t, 30*time.Second, env, stdin, append([]string{"spawns", "run", "--agent", "script"}, args...)...)
			run := runOf(t, r)
			if r.exit != 0 || run["outcome"] != "resolved" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			for _, k := range []string{"escaped", "daemon"} {
				if pid := loggedPID(t, logf, k); alive(pid) {
					t.Fatalf("the agent's %s process %d outlived the run", k, pid)
				}
			}
		})
	}
}

func TestTheAgentsWorkdirAndEnvironmentDoNotLeadToTheOwnersStore(t *testing.T) {
	t.Parallel()
	for name, open := range runnerBackends(t, "1h") {
		t.Run(name, func(t *testing.T) {
			p, b := open(t)
			// A profile that names DONT_PROJECT_DIR among the variables the
			// agent may see: the runner never passes it.
			// It is the person's (their config), not the agent's.
			script, _ := filepath.Abs(filepath.Join("testdata", "agent.sh"))
			p.writePersonConfig(t, fmt.Sprintf("[agents.leaky]\ncommand = [\"bash\", %q]\nenv = [\"PATH\", \"DONT_BIN\", \"AGENT_MODE\", \"AGENT_LOG\", \"DONT_PROJECT_DIR\"]\n", script))
			before := p.run("tokens", "list").data()["count"]
			_, rid, req := p.assumeJSON(t, b)
			logf := filepath.Join(t.TempDir(), "agent.log")
			env := append(b.env, "DONT_BIN="+binary, "AGENT_MODE=nostore", "AGENT_LOG="+logf, "DONT_PROJECT_DIR="+p.dir)
			args, stdin := b.byID(rid, req)
			r, _ := p.runWatched(t, 30*time.Second, env, stdin, append([]string{"spawns", "run", "--agent", "leaky"}, args...)...)
			run := runOf(t, r)
			if r.exit != 0 || run["outcome"] != "resolved" {
				t.Fatalf("exit %d, run %v\n%s", r.exit, run, r.stderr)
			}
			got := agentLog(t, logf)
			// No store is found from there; a token is not even asked for
			// without a person at a terminal (the approver passphrase).
			if k := "bare-show"; len(got[k]) != 1 || !strings.HasSuffix(got[k][0], `"code":"not-initialised"`) {
				t.Fatalf("%s from the agent's working directory, its variables dropped: %v (working directory %v)", k, got[k], got["pwd"])
			}
			if k := "bare-tokens-create"; len(got[k]) != 1 || !(strings.HasSuffix(got[k][0], `"code":"not-initialised"`) || strings.HasSuffix(got[k][0], `"code":"person-required"`)) {
				t.Fatalf("%s from the agent's working directory, its variables dropped: %v (working directory %v)", k, got[k], got["pwd"])
			}
			wd := got["pwd"][0]
			if rel, err := filepath.Rel(p.dir, wd); err == nil && !strings.HasPrefix(rel, "..") {
				t.Fatalf("the agent ran in %s, in the project %s", wd, p.dir)
			}
			if _, err := os.Stat(wd); !os.IsNotExist(err) {
				t.Fatalf("the agent's private folder %s is left behind: %v", wd, err)
			}
			for _, kv := range got["env"] {
				if strings.HasPrefix(kv, "DONT_PROJECT_DIR=") {
					t.Fatalf("the agent got %s", kv)
				}
			}
			if after := p.run("tokens", "list"); after.data()["count"] != before {
				t.Fatalf("the agent minted a token:\n%s", after.stdout)
			}
		})
	}
}

func TestATemporaryFolderInsideTheProjectIsNotWhereAgentsRun(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.configureAgent(t)
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	tmp := filepath.Join(p.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r := p.runIn(t, []string{"TMPDIR=" + tmp, "DONT_BIN=" + binary, "AGENT_MODE=ok"}, nil, "spawns", "run", "--agent", "script", "--request-id", rid)
	rem, _ := r.data()["remediation"].([]any)
	if r.exit != 2 || r.str("code") != "invalid-argument" || len(rem) == 0 {
		t.Fatalf("agents' folders under the project: exit %d %s", r.exit, r.stdout)
	}
	if n := p.ok("spawns", "--pending").data()["count"]; n != float64(1) {
		t.Fatalf("the refused run changed the spawn: %v pending", n)
	}
}
