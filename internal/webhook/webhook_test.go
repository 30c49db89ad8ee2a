package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var loopback = hooks.AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// receiver is a Standard Webhooks receiver: it verifies every request's
// signature with the hook's secret and records what it accepted.
type receiver struct {
	t      *testing.T
	secret string
	now    func() time.Time // the receiver's clock (the test's)
	mu     sync.Mutex
	// script answers the n-th request (from 1): a status, or 0 to drop
	// the connection without answering.
	script   func(n int) int
	n        int
	got      []delivered
	rejected int
}

type delivered struct {
	ID      string
	Type    string
	Payload map[string]any
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	id := req.Header.Get(standardwebhooks.HeaderWebhookID)
	if err := r.verify(req.Header, body); err != nil {
		r.mu.Lock()
		r.rejected++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	status := 200
	if r.script != nil {
		status = r.script(n)
	}
	if status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if status == 200 {
		var p map[string]any
		json.Unmarshal(body, &p)
		t, _ := p["type"].(string)
		r.mu.Lock()
		r.got = append(r.got, delivered{ID: id, Type: t, Payload: p})
		r.mu.Unlock()
	}
	w.WriteHeader(status)
}

// verify is what a receiver does with the Standard Webhooks library: the
// signature, and the timestamp within 5 minutes of the receiver's clock
// (the test's, which the library's Verify cannot be given).
func (r *receiver) verify(h http.Header, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(r.secret)
	if err != nil {
		return err
	}
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		return err
	}
	ts, err := strconv.ParseInt(h.Get(standardwebhooks.HeaderWebhookTimestamp), 10, 64)
	if err != nil {
		return err
	}
	if d := r.clock().Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %d is %v off", ts, d)
	}
	return nil
}

func (r *receiver) clock() time.Time {
	if r.now == nil {
		return time.Now()
	}
	return r.now()
}

func (r *receiver) accepted() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivered(nil), r.got...)
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	svc   *service.Service
	store *sqlite.Store
	clk   *clock
}

func newFixture(t *testing.T, policy hooks.AddrPolicy) fixture {
	t.Helper()
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{now: time.Now().UTC()}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Tokens: st, Confirmations: st, Clock: clk.Now, Author: "test",
		HooksConfig: service.HooksConfig{Store: st, Sender: webhook.New(policy), Policy: policy, PublicURL: "https://dont.example.com"}})
	return fixture{svc: svc, store: st, clk: clk}
}

func (f fixture) add(t *testing.T, url string, events ...string) service.HookView {
	t.Helper()
	v, err := f.svc.Hooks.Add(context.Background(), service.HookAddInput{URL: url, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f fixture) requestSpawn(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c, err := f.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C"})
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := f.svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: c.ID, Mode: spawn.ModeHarness})
	if err != nil {
		t.Fatal(err)
	}
	return sp.Spawn.ID
}

func (f fixture) deliver(t *testing.T) service.DeliverResult {
	t.Helper()
	res, err := f.svc.Hooks.Deliver(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestAReceiverVerifiesTheSignatureOfEveryDelivery(t *testing.T) {
	f := newFixture(t, loopback)
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	h := f.add(t, srv.URL+"/in", "spawn.requested")
	rcv.secret = h.Secret
	if !strings.HasPrefix(h.Secret, hooks.SecretPrefix) {
		t.Fatalf("secret %q", h.Secret)
	}
	req := f.requestSpawn(t)
	if res := f.deliver(t); res.Delivered != 1 {
		t.Fatalf("deliver: %+v", res)
	}
	got := rcv.accepted()
	if len(got) != 1 || got[0].Type != "spawn.requested" || rcv.rejected != 0 {
		t.Fatalf("received %+v (rejected %d)", got, rcv.rejected)
	}
	if data, _ := got[0].Payload["data"].(map[string]any); data["request_id"] != req {
		t.Fatalf("payload %+v", got[0].Payload)
	}
	// Signed with another secret, the receiver refuses it.
	other, _ := hooks.NewSecret()
	rcv.secret = other
	f.requestSpawn(t)
	if res := f.deliver(t); res.Delivered != 0 || rcv.rejected != 1 {
		t.Fatalf("a wrong secret was accepted: %+v", res)
	}
}

// Retries after 500s and after a dropped connection carry the same
// webhook-id, so the receiver dedupes them.
func TestRetriesAfter500sAndADroppedConnectionCarryTheSameID(t *testing.T) {
	f := newFixture(t, loopback)
	rcv := &receiver{t: t, now: f.clk.Now, script: func(n int) int {
		switch n {
		case 1, 2:
			return 500
		case 3:
			return 0 // drop the connection
		}
		return 200
	}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	h := f.add(t, srv.URL, "spawn.requested")
	rcv.secret = h.Secret
	f.requestSpawn(t)
	for i := 0; i < 3; i++ {
		if res := f.deliver(t); res.Retrying != 1 {
			log, _ := f.svc.Hooks.Deliveries(context.Background(), h.ID)
			t.Fatalf("attempt %d: %+v %+v", i+1, res, log)
		}
		if res := f.deliver(t); res.Attempted != 0 {
			t.Fatalf("retried before its backoff: %+v", res)
		}
		f.clk.Add(hooks.BackoffCap)
	}
	if res := f.deliver(t); res.Delivered != 1 {
		t.Fatalf("4th attempt: %+v", res)
	}
	log, err := f.svc.Hooks.Deliveries(context.Background(), h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Attempts) != 4 || log.Attempts[0].Outcome != hooks.Delivered || log.Attempts[1].Status != 0 || log.Attempts[1].Error == "" ||
		log.Attempts[2].Status != 500 || log.Attempts[3].Status != 500 || log.Deliveries[0].State != hooks.StateDelivered {
		t.Fatalf("delivery log %+v", log)
	}
	for _, a := range log.Attempts {
		if a.MessageID != log.Attempts[0].MessageID {
			t.Fatalf("attempts of one message under different ids: %+v", log.Attempts)
		}
	}
	if got := rcv.accepted(); len(got) != 1 || got[0].ID != log.Attempts[0].MessageID {
		t.Fatalf("accepted %+v", got)
	}
}

// A duplicate delivery (the worker died after the receiver accepted, before
// it recorded the attempt) carries the same webhook-id.
func TestADuplicateDeliveryCarriesTheSameID(t *testing.T) {
	f := newFixture(t, loopback)
	rcv := &receiver{t: t, now: f.clk.Now}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	h := f.add(t, srv.URL, "spawn.requested")
	rcv.secret = h.Secret
	f.requestSpawn(t)
	// A worker claims the delivery and sends it, then dies before recording.
	due, err := f.store.ClaimDue(context.Background(), f.clk.Now(), service.DeliveryLease, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("claim: %v %d", err, len(due))
	}
	body, _ := hooks.Body(hooks.FormatJSON, due[0].Message, "")
	if r := webhook.New(loopback).Send(context.Background(), srv.URL, h.Secret, due[0].Message.ID, f.clk.Now(), body); r.Status != 200 {
		t.Fatalf("send: %+v", r)
	}
	f.clk.Add(service.DeliveryLease + time.Second)
	if res := f.deliver(t); res.Delivered != 1 {
		t.Fatalf("redelivery: %+v", res)
	}
	got := rcv.accepted()
	if len(got) != 2 || got[0].ID != got[1].ID {
		t.Fatalf("duplicates %+v", got)
	}
}

func TestFourHundredsAreNotRetriedAndADayOfFailuresEndsFailed(t *testing.T) {
	f := newFixture(t, loopback)
	rcv := &receiver{t: t, now: f.clk.Now, script: func(int) int { return 503 }}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	h := f.add(t, srv.URL, "spawn.requested")
	rcv.secret = h.Secret
	f.requestSpawn(t)
	var res service.DeliverResult
	for i := 0; i < 200 && res.Failed == 0; i++ {
		res = f.deliver(t)
		f.clk.Add(hooks.BackoffCap)
	}
	log, _ := f.svc.Hooks.Deliveries(context.Background(), h.ID)
	if res.Failed != 1 || log.Deliveries[0].State != hooks.StateFailed {
		t.Fatalf("after a day of 503s: %+v", log.Deliveries)
	}
	if first, last := log.Attempts[len(log.Attempts)-1].At, log.Attempts[0].At; last.Sub(first) > hooks.RetryFor {
		t.Fatalf("retried for %v", last.Sub(first))
	}

	rcv.script = func(int) int { return 410 }
	f.requestSpawn(t)
	if res := f.deliver(t); res.Failed != 1 || res.Attempted != 1 {
		t.Fatalf("a 410 was retried: %+v", res)
	}
}

// The SSRF refusals: at add time for literals and plain http, at dial
// time for a name that resolves to a private address.
func TestAnAgentCannotPointAHookAtAPrivateAddress(t *testing.T) {
	f := newFixture(t, hooks.AddrPolicy{})
	for _, u := range []string{"http://127.0.0.1:8700/v1/tools/tokens.create", "https://169.254.169.254/latest/meta-data/", "https://10.0.0.7/", "https://[::1]/", "http://internal.example.com/"} {
		if _, err := f.svc.Hooks.Add(context.Background(), service.HookAddInput{URL: u, Events: []string{"spawn.requested"}}); err == nil {
			t.Errorf("hooks add %s was accepted", u)
		}
	}
	// A name passes the add-time check; the dialer refuses what it resolves to.
	hit := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	h := f.add(t, "http://localhost:"+port+"/in", "spawn.requested")
	res, err := f.svc.Hooks.Test(context.Background(), h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempt.Outcome != hooks.Rejected || !strings.Contains(res.Attempt.Error, "refused address") || res.Delivery.State != hooks.StateFailed {
		t.Fatalf("a name resolving to loopback was dialled: %+v", res)
	}
	select {
	case <-hit:
		t.Fatal("the private receiver was reached")
	default:
	}
}

func TestRedirectsAreNotFollowedAndBodiesAreCapped(t *testing.T) {
	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	c := webhook.New(loopback)
	r := c.Send(context.Background(), redirect.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg:x", time.Now(), []byte(`{}`))
	if r.Status != http.StatusTemporaryRedirect || followed || hooks.Classify(r.Status) != hooks.Rejected {
		t.Fatalf("redirect: %+v followed=%v", r, followed)
	}
	// An endless body is read only up to the cap: the attempt ends.
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for i := 0; i < 1<<12; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	start := time.Now()
	if r := c.Send(context.Background(), endless.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg:x", time.Now(), []byte(`{}`)); r.Status != 200 || time.Since(start) > hooks.AttemptTimeout {
		t.Fatalf("endless body: %+v after %v", r, time.Since(start))
	}
	if c.HTTP.Timeout != 5*time.Second {
		t.Fatalf("attempt timeout %v, want 5s", c.HTTP.Timeout)
	}
}

// A receiver that never answers is cut off at the attempt timeout (5 s,
// shortened here) and the attempt is one to retry.
func TestASilentReceiverTimesOutAndIsRetried(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	c := webhook.New(loopback)
	c.HTTP.Timeout = 300 * time.Millisecond
	r := c.Send(context.Background(), srv.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg:x", time.Now(), []byte(`{}`))
	if r.Err == nil || r.Status != 0 || hooks.Classify(r.Status) != hooks.Retry || time.Since(start) > hooks.AttemptTimeout {
		t.Fatalf("silent receiver: %+v after %v", r, time.Since(start))
	}
}

// fakeSlack replays the responses Slack's incoming webhooks give: 200
// "ok", 400 "invalid_payload" (also for a body that is not a Block Kit
// message), 404 "no_service", 429 with Retry-After.
type fakeSlack struct {
	mu     sync.Mutex
	next   []int
	bodies []map[string]any
}

func (s *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg map[string]any
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	status := 200
	if len(s.next) > 0 {
		status, s.next = s.next[0], s.next[1:]
	}
	s.mu.Unlock()
	if json.Unmarshal(b, &msg) != nil || msg["text"] == nil || msg["blocks"] == nil || r.Header.Get("Content-Type") != "application/json" {
		status = 400
	}
	switch status {
	case 200:
		s.mu.Lock()
		s.bodies = append(s.bodies, msg)
		s.mu.Unlock()
		io.WriteString(w, "ok")
	case 400:
		w.WriteHeader(400)
		io.WriteString(w, "invalid_payload")
	case 404:
		w.WriteHeader(404)
		io.WriteString(w, "no_service")
	case 429:
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
		io.WriteString(w, "rate_limited")
	}
}

func TestASlackIncomingWebhookAcceptsTheQuestion(t *testing.T) {
	f := newFixture(t, loopback)
	slack := &fakeSlack{next: []int{429, 200, 404, 400}}
	srv := httptest.NewServer(slack)
	defer srv.Close()
	v, err := f.svc.Hooks.Add(context.Background(), service.HookAddInput{URL: srv.URL + "/services/T000/B000/XXXX", Events: []string{"approval.asked"}, Format: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(call string) {
		ctx := context.Background()
		now := f.clk.Now()
		ses := approvals.Session{ID: ids.New(ids.Session, now), Tier: approvals.ReadOnly, OpenedAt: now}
		if err := f.store.CreateSession(ctx, ses); err != nil {
			t.Fatal(err)
		}
		a := approvals.Approval{ID: ids.New(ids.Approval, now), SessionID: ses.ID, CallID: call, From: ses.Tier, To: approvals.WorkspaceWrite,
			Preview: "rm -rf build\r\x1b[2K$ make", Reason: "clean build", Requester: "agent", Asked: true, State: approvals.Pending, CreatedAt: now, Deadline: now.Add(2 * time.Minute)}
		q := approvals.RequestFrame(a)
		if err := f.store.CreateApproval(ctx, a, &q); err != nil {
			t.Fatal(err)
		}
	}
	ask("c1")
	// 429 with Retry-After: 30 → retried no sooner than 30 s later.
	if res := f.deliver(t); res.Retrying != 1 {
		t.Fatalf("429: %+v", res)
	}
	log, _ := f.svc.Hooks.Deliveries(context.Background(), v.ID)
	if d := log.Deliveries[0]; d.NextAt.Sub(log.Attempts[0].At) < 30*time.Second {
		t.Fatalf("Retry-After not honoured: next %v after %v", d.NextAt, log.Attempts[0].At)
	}
	f.clk.Add(31 * time.Second)
	if res := f.deliver(t); res.Delivered != 1 {
		t.Fatalf("200 ok: %+v", res)
	}
	if len(slack.bodies) != 1 || strings.Contains(mustJSON(slack.bodies[0]), "\r") || !strings.Contains(mustJSON(slack.bodies[0]), `\\r\\x1b[2K$ make`) ||
		!strings.Contains(mustJSON(slack.bodies[0]), "https://dont.example.com/approvals#") {
		t.Fatalf("slack got %s", mustJSON(slack.bodies))
	}
	// 404 no_service and 400 invalid_payload are not retried.
	ask("c2")
	ask("c3")
	if res := f.deliver(t); res.Failed != 2 {
		t.Fatalf("404/400: %+v", res)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The no-subscriber rule (docs/approvals.md): nobody reads the session's
// frames, yet a hook that hears approval.asked and whose last delivery
// succeeded makes the question askable; one whose last delivery failed
// does not.
func TestAHookWhoseLastDeliverySucceededCountsAsALiveSubscriber(t *testing.T) {
	f := newFixture(t, loopback)
	f.svc.Approvals = service.Approvals{Store: f.store}
	ctx := context.Background()
	ses, err := f.svc.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: "read-only"})
	if err != nil {
		t.Fatal(err)
	}
	escalate := func(call string) error {
		_, _, err := f.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses.ID, CallID: call, To: "workspace-write", Reason: "build", Preview: "make", NoWait: true})
		return err
	}
	if err := escalate("c0"); err == nil || !strings.Contains(err.Error(), "no client") {
		t.Fatalf("with no subscriber and no hook: %v", err)
	}
	rcv := &receiver{t: t, now: f.clk.Now, script: func(n int) int {
		if n == 1 {
			return 500
		}
		return 200
	}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	h := f.add(t, srv.URL, "approval.asked")
	rcv.secret = h.Secret
	if _, err := f.svc.Hooks.Test(ctx, h.ID); err != nil { // 500: the last delivery failed
		t.Fatal(err)
	}
	if err := escalate("c1"); err == nil {
		t.Fatal("a hook whose last delivery failed counted as a subscriber")
	}
	if _, err := f.svc.Hooks.Test(ctx, h.ID); err != nil { // 200
		t.Fatal(err)
	}
	if err := escalate("c2"); err != nil {
		t.Fatalf("a hook whose last delivery succeeded did not count: %v", err)
	}
	if res := f.deliver(t); res.Delivered < 1 {
		t.Fatalf("the question was not delivered: %+v", res)
	}
	var asked bool
	for _, d := range rcv.accepted() {
		asked = asked || d.Type == "approval.asked"
	}
	if !asked {
		t.Fatalf("received %+v", rcv.accepted())
	}
}

// What we send carries the Standard Webhooks specification's published
// test vector, byte for byte, and the library's verifier accepts it and
// refuses it for another body.
func TestSendSignsTheStandardWebhooksTestVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { got <- req.Header.Clone() }))
	defer srv.Close()
	r := webhook.New(loopback).Send(context.Background(), srv.URL, secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("send: %+v", r)
	}
	h := <-got
	if sig, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" {
		t.Fatalf("headers %v", h)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		t.Fatalf("the library refuses what we sent: %v", err)
	}
	if wh.VerifyIgnoringTimestamp([]byte(`{"test": 2432232315}`), h) == nil {
		t.Fatal("a changed body verified")
	}
	if wh.Verify(body, h) == nil {
		t.Fatal("a years-old timestamp verified")
	}
}

func TestASecretThatIsNotBase64IsRefusedWithoutSending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a request was sent") }))
	defer srv.Close()
	if r := webhook.New(loopback).Send(context.Background(), srv.URL, "whsec_!!!", "msg_1", time.Now(), []byte(`{}`)); r.Err == nil || !r.Refused {
		t.Fatalf("send with a bad secret: %+v", r)
	}
}
