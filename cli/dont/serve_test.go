package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// server is a `dont serve` process on a free port of the project.
type server struct {
	cmd      *exec.Cmd
	endpoint string
	// holding is closed when the server reports a held write transaction.
	holding chan struct{}
}

func (p *testProject) serve(t *testing.T, env ...string) *server {
	t.Helper()
	return p.serveWith(t, []string{"--sweep-interval", "50ms"}, env...)
}

func (p *testProject) serveWith(t *testing.T, flags []string, env ...string) *server {
	t.Helper()
	c := p.cmd(append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...)...)
	c.Env = append(c.Env, env...)
	out, _ := c.StdoutPipe()
	errPipe, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address: %v", err)
	}
	var l struct{ Listening string }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Listening == "" {
		t.Fatalf("serve printed %q", line)
	}
	srv := &server{cmd: c, endpoint: l.Listening, holding: make(chan struct{})}
	go func() { // drain the log so the server never blocks on it
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "holding the write transaction open") {
				once = true
				close(srv.holding)
			}
		}
	}()
	return srv
}

func (p *testProject) token(role string) string {
	p.t.Helper()
	return p.mintToken(role, "")
}

func withoutMeta(r result) string {
	delete(r.env, "meta")
	b, _ := json.Marshal(r.env)
	return string(b)
}

func TestRemoteCLIPrintsTheSameEnvelopeAsEmbedded(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	id := p.runEnv(remote, "conclude", "water boils at 100 C at sea level", "--json").str("id")
	if !strings.HasPrefix(id, "claim:") {
		t.Fatal("remote conclude returned no id")
	}
	p.runEnv(remote, "trust", id, "--reason", "ITS-90 gives 99.97 C")
	for _, args := range [][]string{
		{"show", id, "--history"},
		{"list"},
		{"spawns", "--all"},
		{"show", "claim:01HX05A9K8VP0000000000000A"},
		{"trust", id, "--reason", "maybe"},
	} {
		local, far := p.run(args...), p.runEnv(remote, args...)
		if local.exit != far.exit || withoutMeta(local) != withoutMeta(far) {
			t.Fatalf("dont %v differs remotely (exit %d vs %d):\nembedded %s\nremote   %s", args, local.exit, far.exit, local.stdout, far.stdout)
		}
	}
	// The spawn request a remote harness receives is the payload the embedded CLI prints for the same spawn.
	req := p.runEnv(remote, "assume", id)
	if req.env["envelope_kind"] != "spawn_request" || req.data()["callback"].(map[string]any)["token"] == "" {
		t.Fatalf("remote assume: %s", req.stdout)
	}
	cb := req.data()["callback"].(map[string]any)["token"].(string)
	byCallback := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + cb}, "lock", id, "--yes")
	if byCallback.exit != 3 || byCallback.data()["code"] != "forbidden" {
		t.Fatalf("callback token locked: exit %d %s", byCallback.exit, byCallback.stdout)
	}
	if r := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN="}, "list"); r.exit != 3 || r.data()["code"] != "unauthenticated" {
		t.Fatalf("no token: exit %d %s", r.exit, r.stdout)
	}
}

func TestServeShutsDownGracefullyOnSIGTERM(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t, "DONT_FAULT_COMMIT_DELAY=1500ms")
	c := p.cmd("conclude", "in flight during shutdown")
	c.Env = append(c.Env, "DONT_ENDPOINT="+srv.endpoint, "DONT_TOKEN="+harness)
	var out strings.Builder
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The request is in flight once the server holds its write transaction open.
	select {
	case <-srv.holding:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the server's store")
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.Wait(); err != nil {
		t.Fatalf("in-flight request failed during shutdown: %v %s", err, out.String())
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v", err)
	}
	if !strings.Contains(out.String(), `"ok":true`) {
		t.Fatalf("in-flight request: %s", out.String())
	}
	if n := p.ok("list").data()["count"]; n != 1.0 {
		t.Fatalf("%v entities after shutdown", n)
	}
}

func TestATokenNeverReachesAnotherProjectsData(t *testing.T) {
	t.Parallel()
	a, b := newProject(t), newProject(t)
	tokenA := a.token("admin")
	secret := a.ok("conclude", "project A's claim").str("id")
	srvB := b.serve(t)
	r := b.runEnv([]string{"DONT_ENDPOINT=" + srvB.endpoint, "DONT_TOKEN=" + tokenA}, "show", secret)
	if r.exit != 3 || r.data()["code"] != "unauthenticated" {
		t.Fatalf("project A's token on project B's server: exit %d %s", r.exit, r.stdout)
	}
	reqA := a.ok("assume", secret)
	cbA := reqA.data()["callback"].(map[string]any)["token"].(string)
	r = b.runEnv([]string{"DONT_ENDPOINT=" + srvB.endpoint, "DONT_TOKEN=" + cbA}, "show", secret)
	if r.exit != 3 || r.data()["code"] != "unauthenticated" {
		t.Fatalf("project A's callback token on project B's server: exit %d %s", r.exit, r.stdout)
	}
}

// The in-process timeout scheduler: with the ticker sweep an hour away, a
// spawn issued through the server still times out at its expires_at.
func TestServeTimesOutASpawnWhenDueWithoutWaitingForTheSweep(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serveWith(t, []string{"--sweep-interval", "1h"}, "DONT_SPAWN_TIMEOUT=300ms")
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	id := p.runEnv(remote, "conclude", "water boils at 100 C at sea level", "--json").str("id")
	p.runEnv(remote, "dismiss", id, "--evidence", "https://example.org/a", "--json")
	rid := p.runEnv(remote, "assume", id, "--json").str("request_id")
	if rid == "" {
		t.Fatal("assume issued no spawn")
	}
	time.Sleep(2 * time.Second) // due at 300ms; a request now would sweep 1.7s late
	r := p.runEnv(remote, "show", id, "--history", "--json")
	history, _ := r.data()["history"].([]any)
	for _, h := range history {
		ev, _ := h.(map[string]any)
		if ev["kind"] != "spawn_timeout" {
			continue
		}
		d, _ := ev["detail"].(map[string]any)
		expires, _ := time.Parse(time.RFC3339Nano, d["expires_at"].(string))
		at, _ := time.Parse(time.RFC3339Nano, d["timed_out_at"].(string))
		if lag := at.Sub(expires); lag < 0 || lag > 800*time.Millisecond {
			t.Fatalf("timed out %v after expires_at; the timer should fire at it", lag)
		}
		if st := r.str("status"); st != "verified" {
			t.Fatalf("status %s, want verified restored", st)
		}
		return
	}
	t.Fatalf("no spawn_timeout in the history: %s", r.stdout)
}

// A spawn the embedded CLI issued on the same file has no timer in the
// server, and with --sweep-interval 1h the ticker does not run either:
// only each call's own sweep-first stands between an expired spawn and a
// command that touches it. The server rate-limits the approvals part of
// that sweep, never the spawns part.
func TestServeSweepsACLIIssuedSpawnThatExpiredBeforeTheTickerRan(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serveWith(t, []string{"--sweep-interval", "1h"})
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	p.runEnv(remote, "list", "--json") // the approvals sweep's turn is taken for the hour
	issue := func(id string) (rid, token string) {
		t.Helper()
		req := p.runEnv([]string{"DONT_SPAWN_TIMEOUT=500ms"}, "assume", id, "--json")
		expires, err := time.Parse(time.RFC3339Nano, req.str("expires_at"))
		token, _ = req.data()["callback"].(map[string]any)["token"].(string)
		if req.str("request_id") == "" || token == "" || err != nil {
			t.Fatalf("assume: %s %v", req.stdout, err)
		}
		time.Sleep(time.Until(expires.Add(100 * time.Millisecond))) // due now; no timer or ticker will end it
		return req.str("request_id"), token
	}

	// The timed-out view lists an expired spawn right away: the listing's
	// own sweep-first commits the timeout.
	listed := p.ok("conclude", "ice melts at 0 C").str("id")
	listedRID, _ := issue(listed)
	r := p.runEnv(remote, "spawns", "--timed-out", "--json")
	spawns, _ := r.data()["spawns"].([]any)
	if len(spawns) != 1 || spawns[0].(map[string]any)["request_id"] != listedRID {
		t.Fatalf("spawns --timed-out right after the expiry: %s", r.stdout)
	}
	if st := p.runEnv(remote, "show", listed, "--json").str("status"); st != "unverified" {
		t.Fatalf("%s is %s, want its pre-spawn status restored", listed, st)
	}

	// A late callback whose request has no committed resolver still
	// applies, with spawn-expired: it resolves before its call's sweep.
	late := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	lateRID, callbackToken := issue(late)
	cb := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + callbackToken},
		"dismiss", late, "--request-id", lateRID, "--evidence", "https://example.org/a", "--json")
	if cb.exit != 0 || cb.str("status") != "verified" || !strings.Contains(strings.Join(warnings(cb), " "), "spawn-expired") {
		t.Fatalf("late callback: exit %d %v %s", cb.exit, warnings(cb), cb.stdout)
	}
}

// An agent flooding `dont serve` past --rate (its token) or --total-rate
// (every token) gets 429 with Retry-After and an error envelope.
func TestAFloodThroughDontServeGets429WithRetryAfter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness, approver := p.token("harness"), p.token("approver")
	for _, flags := range [][]string{{"--rate", "0.001", "--total-rate", "-1"}, {"--rate", "-1", "--total-rate", "0.001"}} {
		srv := p.serveWith(t, append([]string{"--sweep-interval", "1h"}, flags...))
		post := func(token string) (int, string, map[string]any) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, srv.endpoint+"/v1/tools/list", strings.NewReader(`{"args":{}}`))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var env map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, resp.Header.Get("Retry-After"), env
		}
		if status, _, env := post(harness); status != http.StatusOK {
			t.Fatalf("%v: the first call: %d %v", flags, status, env)
		}
		// The same token again; under --total-rate another token too.
		for _, tok := range []string{harness, approver} {
			status, retry, env := post(tok)
			if flags[1] != "-1" && tok == approver {
				if status != http.StatusOK {
					t.Fatalf("%v: another token's bucket is its own: %d %v", flags, status, env)
				}
				continue
			}
			data, _ := env["data"].(map[string]any)
			rem, _ := data["remediation"].([]any)
			if s, err := strconv.Atoi(retry); status != http.StatusTooManyRequests || err != nil || s < 1 || data["code"] != "rate-limited" || len(rem) == 0 {
				t.Fatalf("%v: a flood got %d Retry-After %q %v", flags, status, retry, env)
			}
		}
		srv.cmd.Process.Signal(syscall.SIGTERM)
		srv.cmd.Wait()
	}
}
