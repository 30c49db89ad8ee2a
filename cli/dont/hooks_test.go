package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookReceiver verifies every delivery's Standard Webhooks signature and
// passes the accepted ones to got.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	got    chan map[string]any
	bad    int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{got: make(chan map[string]any, 64)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		secret := r.secret
		r.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = wh.Verify(body, req.Header) // the signature, and the timestamp within 5 minutes
		}
		if err != nil {
			r.mu.Lock()
			r.bad++
			r.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p map[string]any
		json.Unmarshal(body, &p)
		p["webhook-id"] = req.Header.Get("webhook-id")
		r.got <- p
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) setSecret(s string) { r.mu.Lock(); r.secret = s; r.mu.Unlock() }

// next waits for the next accepted delivery of type typ.
func (r *hookReceiver) next(t *testing.T, typ string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case p := <-r.got:
			if p["type"] == typ {
				return p
			}
		case <-deadline:
			t.Fatalf("no %s delivery within %v", typ, within)
		}
	}
}

func (r *hookReceiver) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-r.got:
		t.Fatalf("unexpected delivery %v", p)
	default:
	}
}

const allowLoopback = "DONT_HOOKS_ALLOW_PRIVATE=127.0.0.1/32"

func (p *testProject) addHook(t *testing.T, r *hookReceiver, events string) string {
	t.Helper()
	res := p.ok("hooks", "add", "--url", r.URL+"/in", "--events", events, "--yes")
	r.setSecret(res.str("secret"))
	if !strings.HasPrefix(res.str("secret"), "whsec_") {
		t.Fatalf("hooks add showed no secret: %s", res.stdout)
	}
	return res.str("hook_id")
}

func TestHooksThroughTheCLIDeliverSignedEvents(t *testing.T) {
	t.Parallel()
	p := newProject(t, allowLoopback)
	rcv := newHookReceiver(t)
	id := p.addHook(t, rcv, "spawn.requested,spawn.resolved")
	if strings.Contains(p.ok("hooks", "list").stdout, "whsec_") {
		t.Fatal("hooks list shows the secret")
	}
	if a := p.ok("hooks", "test", id, "--yes").data()["attempt"].(map[string]any); a["outcome"] != "delivered" {
		t.Fatalf("hooks test: %v", a)
	}
	rcv.next(t, "hook.test", 5*time.Second)
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	req := p.ok("assume", claim).str("request_id")
	// The embedded command delivered before it exited.
	got := rcv.next(t, "spawn.requested", time.Second)
	if d := got["data"].(map[string]any); d["request_id"] != req || d["entity_id"] != claim {
		t.Fatalf("payload %v", got)
	}
	p.ok("dismiss", claim, "--evidence", "https://example.org/its-90", "--request-id", req)
	if d := rcv.next(t, "spawn.resolved", time.Second)["data"].(map[string]any); d["request_id"] != req {
		t.Fatalf("resolved payload %v", d)
	}
	log := p.ok("hooks", "deliveries", id).data()
	if atts := log["attempts"].([]any); len(atts) != 3 {
		t.Fatalf("delivery log %v", log)
	}
	p.ok("hooks", "remove", id, "--yes")
	p.ok("assume", p.ok("conclude", "another claim").str("id"))
	rcv.none(t)
	if rcv.bad != 0 {
		t.Fatalf("%d deliveries failed verification", rcv.bad)
	}
}

func TestBadHookInputIsRefusedAndStoresNothing(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{
		{"--url", "http://hooks.example.com/in", "--events", "approval.asked"},
		{"--url", "https://169.254.169.254/latest/meta-data/", "--events", "approval.asked"},
		{"--url", "http://127.0.0.1:9/in", "--events", "approval.asked"}, // loopback is private unless allowed
		{"--url", "https://hooks.example.com/in", "--events", "approval.maybe"},
		{"--url", "https://hooks.example.com/in", "--events", "approval.asked", "--format", "xml"},
	} {
		r := p.run(append([]string{"hooks", "add", "--yes"}, args...)...)
		rem, _ := r.data()["remediation"].([]any)
		if r.exit != 2 || len(rem) == 0 {
			t.Errorf("hooks add %v: exit %d %s", args, r.exit, r.stdout)
		}
	}
	if n := p.ok("hooks", "list").data()["count"]; n != 0.0 {
		t.Fatalf("%v hooks stored", n)
	}
	if r := p.run("hooks", "remove", "hook:01HX05A9K8VP0000000000000A", "--yes"); r.exit != 3 || r.str("code") != "hook-not-found" {
		t.Fatalf("remove unknown: %d %s", r.exit, r.stdout)
	}
}

func TestAHarnessAtTheEmbeddedCLICannotManageHooks(t *testing.T) {
	t.Parallel()
	p := newProject(t, allowLoopback)
	for _, args := range [][]string{
		{"hooks", "add", "--url", "http://127.0.0.1:9/in", "--events", "approval.asked", "--yes"},
		{"hooks", "list"},
	} {
		if r := p.runEnv([]string{"DONT_HARNESS=1"}, args...); r.exit != 3 || r.str("code") != "forbidden" {
			t.Errorf("%v under DONT_HARNESS: %d %s", args, r.exit, r.stdout)
		}
	}
}

func TestMCPDoesNotListTheHookTools(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	list, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if strings.HasPrefix(tl.Name, "hooks") {
			t.Errorf("MCP exposes %s", tl.Name)
		}
	}
	res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "hooks_add", Arguments: map[string]any{"url": "https://hooks.example.com/in", "events": []string{"approval.asked"}}})
	if err == nil && !res.IsError {
		t.Fatal("hooks_add ran over MCP")
	}
	if n := p.ok("hooks", "list").data()["count"]; n != 0.0 {
		t.Fatalf("%v hooks exist", n)
	}
}

// SIGKILL a real dont process after its commit, before its delivery: the
// outbox row survived, and the next `dont hooks deliver` — or `dont
// serve` — delivers it.
func TestACrashBetweenCommitAndDeliveryStillDelivers(t *testing.T) {
	t.Parallel()
	p := newProject(t, allowLoopback)
	rcv := newHookReceiver(t)
	p.addHook(t, rcv, "spawn.requested")
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	kill := func(args ...string) {
		c := p.cmd(args...)
		c.Env = append(c.Env, "DONT_FAULT_DELIVERY_DELAY=30s")
		stderr, _ := c.StderrPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.Contains(sc.Text(), "committed; holding the delivery") {
		}
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
	}
	kill("assume", claim)
	rcv.none(t)
	if n := len(p.ok("spawns", "--pending").data()["spawns"].([]any)); n != 1 {
		t.Fatalf("%d pending spawns", n)
	}
	if r := p.ok("hooks", "deliver").data(); r["delivered"] != 1.0 {
		t.Fatalf("hooks deliver: %v", r)
	}
	first := rcv.next(t, "spawn.requested", time.Second)

	// Again, and this time dont serve picks it up in the background.
	kill("assume", p.ok("conclude", "another claim").str("id"))
	rcv.none(t)
	p.serve(t)
	second := rcv.next(t, "spawn.requested", 10*time.Second)
	if first["webhook-id"] == second["webhook-id"] {
		t.Fatal("two events under one webhook-id")
	}
}

// Nobody watches the session, but a hook that hears approval.asked and
// last delivered successfully keeps it answerable: the embedded escalate
// asks, the question reaches the hook while escalate waits, and its
// ending follows.
func TestAnEscalationReachesAHookWhileItWaits(t *testing.T) {
	t.Parallel()
	p := newProject(t, allowLoopback, "DONT_APPROVAL_TIMEOUT=3s")
	rcv := newHookReceiver(t)
	id := p.addHook(t, rcv, "approval.asked,approval.ended")
	ses := p.session("read-only")
	if r := p.run("escalate", "--session", ses, "--call", "c0", "--to", "workspace-write", "--reason", "build", "--no-wait"); r.str("code") != "no-subscriber" {
		t.Fatalf("a hook that never delivered counted as a subscriber: %s", r.stdout)
	}
	p.ok("hooks", "test", id, "--yes")
	rcv.next(t, "hook.test", 5*time.Second)
	c, out, apr := p.startEscalate(nil, "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "runs make", "--", "make", "test")
	asked := rcv.next(t, "approval.asked", 3*time.Second) // delivered while escalate waits
	if d := asked["data"].(map[string]any); d["approval_id"] != apr || d["preview"] != "make test" {
		t.Fatalf("asked %v", asked)
	}
	if code, _ := waitExit(t, c, out); code != 1 {
		t.Fatalf("escalate exit %d", code)
	}
	if d := rcv.next(t, "approval.ended", 5*time.Second)["data"].(map[string]any); d["verdict"] != "timed-out" {
		t.Fatalf("ended %v", d)
	}
}

// An agent's write is delivered to the project's webhooks by the command
// itself, in-process, before it exits, as a person's is: a harness
// signal changes nothing (the loopback receiver is allowed in the
// person's config: a harness-signalled process ignores
// DONT_HOOKS_ALLOW_PRIVATE, docs/security.md#person-settings).
func TestAnAgentsWriteIsDeliveredInProcessBeforeTheCommandExits(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.writePersonConfig(t, "[hooks]\nallow_private = [\"127.0.0.1/32\"]\n")
	rcv := newHookReceiver(t)
	p.addHook(t, rcv, "spawn.requested")
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "assume", claim)
	if r.exit != 0 {
		t.Fatalf("assume: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	got := rcv.next(t, "spawn.requested", time.Second) // before the command exited
	if d := got["data"].(map[string]any); d["request_id"] != r.str("request_id") {
		t.Fatalf("payload %v", got)
	}
}
