package integration_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/ledger"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/spawn"
)

// The callback path, end to end through the API function: conclude,
// assume, and the subagent's dismiss with the spawn's callback token.
func TestCallbackResolvesTheSpawnThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)

	if h := s.request(t, s.api, http.MethodGet, "/v1/health", "", nil, nil); h.Status != 200 || h.Body["ok"] != true {
		t.Fatalf("health: %d %s", h.Status, h.Raw)
	}
	id := p.verifiedClaim(s.api)
	req := p.assume(s.api, id)
	if req.Callback.Token == "" || req.EntityID != id {
		t.Fatalf("spawn request without a callback token or entity: %+v", req)
	}
	if left := time.Until(req.ExpiresAt); left < 23*time.Hour {
		t.Fatalf("the 24h function issued a spawn that expires in %v", left)
	}
	if e := p.entity(id); e.Status != ledger.Unverified || e.PendingSpawn != req.RequestID {
		t.Fatalf("under review in DynamoDB: status %s, pending %q", e.Status, e.PendingSpawn)
	}
	if sp := p.spawn(req.RequestID); sp.State != spawn.Pending || sp.PreStatus != ledger.Verified {
		t.Fatalf("spawn in DynamoDB: %+v", sp)
	}

	// The callback token is good for the spawn's own entity and nothing else.
	if e := p.call(s.api, "conclude", map[string]any{"statement": "s"}, req.Callback.Token); e.Status != http.StatusForbidden || e.code() != "forbidden" {
		t.Fatalf("callback token on conclude: %d %s", e.Status, e.Raw)
	}
	e := p.ok(s.api, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/its-90"}, "request_id": req.RequestID}, req.Callback.Token)
	res, _ := e.data()["resolution"].(map[string]any)
	if res["outcome"] != string(spawn.CallbackApplied) || res["applied"] != true {
		t.Fatalf("resolution %v", res)
	}
	if sp := p.spawn(req.RequestID); sp.State != spawn.Resolved || sp.Outcome != spawn.CallbackApplied {
		t.Fatalf("spawn after the callback: %s %s", sp.State, sp.Outcome)
	}
	if e := p.entity(id); e.Status != ledger.Verified || e.PendingSpawn != "" {
		t.Fatalf("entity after the callback: %s pending %q", e.Status, e.PendingSpawn)
	}

	// A duplicate callback changes nothing and says so.
	dup := p.ok(s.api, "trust", map[string]any{"id": id, "reason": "the cited table gives 99.97 C at 1 atm", "request_id": req.RequestID})
	if !slices.Contains(dup.warnings(), "spawn-duplicate") {
		t.Fatalf("duplicate callback warnings %v", dup.warnings())
	}
	if e := p.entity(id); e.Status != ledger.Verified {
		t.Fatalf("a duplicate callback moved the entity to %s", e.Status)
	}
}

func TestTheAPIFunctionRefusesBadRequestsWithEnvelopes(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	other := s.newProject(t)
	id := p.ok(s.api, "conclude", map[string]any{"statement": "s"}).str("id")
	for _, c := range []struct {
		name   string
		e      envelope
		status int
		code   string
	}{
		{"no token", s.request(t, s.api, "POST", "/v1/tools/list", "", []byte(`{"args":{}}`), nil), 401, "unauthenticated"},
		{"wrong secret", p.call(s.api, "list", map[string]any{}, p.token+"x"), 401, "unauthenticated"},
		{"another project's entity", other.call(s.api, "show", map[string]any{"id": id}), 404, "not-found"},
		{"bad json", s.request(t, s.api, "POST", "/v1/tools/list", p.token, []byte(`{"args":`), nil), 400, "bad-json"},
		{"unknown route", s.request(t, s.api, "GET", "/v2/x", p.token, nil, nil), 404, "route-not-found"},
	} {
		if c.e.Status != c.status || c.e.code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, c.e.Status, c.e.code(), c.status, c.code)
		}
		if rem, _ := c.e.data()["remediation"].([]any); len(rem) == 0 {
			t.Errorf("%s: no remediation", c.name)
		}
	}
	// Idempotency-Key: a retry gets the first response and writes nothing.
	body := []byte(`{"args":{"statement":"once"}}`)
	key := map[string]string{"Idempotency-Key": "it-" + p.name}
	first := s.request(t, s.api, "POST", "/v1/tools/conclude", p.token, body, key)
	again := s.request(t, s.api, "POST", "/v1/tools/conclude", p.token, body, key)
	if first.Status != 200 || again.Headers["Idempotent-Replayed"] != "true" || again.str("id") != first.str("id") {
		t.Fatalf("idempotent retry: %d %v %s vs %s", again.Status, again.Headers, again.str("id"), first.str("id"))
	}
}

// The timeout path: a real delayed SQS message comes due, the sweeper
// function gets it as Lambda's poller would hand it over, and DynamoDB
// holds the spawn_timeout and the restored status.
func TestATimeoutMessageComesDueAndTheSweeperRestoresTheStatus(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	id := p.verifiedClaim(s.apiShort)
	req := p.assume(s.apiShort, id)
	if left := time.Until(req.ExpiresAt); left > s.short || left <= 0 {
		t.Fatalf("the short function issued a spawn expiring in %v (want <= %v)", left, s.short)
	}
	if st := p.entity(id).Status; st != ledger.Unverified {
		t.Fatalf("under review: %s", st)
	}
	s.pump(t, s.short+15*time.Second, func() bool { return p.spawn(req.RequestID).State == spawn.Resolved })

	sp := p.spawn(req.RequestID)
	if sp.Outcome != spawn.TimeoutRestored {
		t.Fatalf("outcome %s", sp.Outcome)
	}
	to := p.events(id, ledger.EvSpawnTimeout)
	if len(to) != 1 || to[0].RequestID != req.RequestID || to[0].Outcome != string(spawn.TimeoutRestored) || to[0].To != ledger.Verified {
		t.Fatalf("spawn_timeout events %+v", to)
	}
	at, _ := time.Parse(time.RFC3339Nano, to[0].Detail["timed_out_at"].(string))
	if at.Before(req.ExpiresAt) {
		t.Fatalf("timed out %v before expires_at", req.ExpiresAt.Sub(at))
	}
	t.Logf("timeout lag %v (expires_at -> committed spawn_timeout)", at.Sub(req.ExpiresAt))
	if e := p.entity(id); e.Status != ledger.Verified || e.PendingSpawn != "" {
		t.Fatalf("entity after the timeout: %s pending %q", e.Status, e.PendingSpawn)
	}

	// The callback that arrives now is too late: it changes nothing.
	late := p.ok(s.apiShort, "trust", map[string]any{"id": id, "reason": "the cited table gives 99.97 C at 1 atm", "request_id": req.RequestID})
	if !slices.Contains(late.warnings(), "spawn-lost-to-timeout") || p.entity(id).Status != ledger.Verified {
		t.Fatalf("late callback: warnings %v, status %s", late.warnings(), p.entity(id).Status)
	}
}

// SQS delivers at least once: the same message, handed over twice in one
// batch and again in a later one, commits one timeout.
func TestDuplicateDeliveryOfATimeoutMessageIsANoOp(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	id := p.verifiedClaim(s.apiShort)
	req := p.assume(s.apiShort, id)

	var mine []sqstypes.Message
	deadline := time.Now().Add(s.short + 15*time.Second)
	for len(mine) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the timeout message never came due")
		}
		var others []sqstypes.Message
		for _, m := range s.receive(t, time.Second) {
			if messageFor(m, req.RequestID) {
				mine = append(mine, m)
			} else {
				others = append(others, m)
			}
		}
		s.sweep(t, others)
	}
	m := mine[0]
	again := m
	again.MessageId = aws.String(aws.ToString(m.MessageId) + "-redelivered")
	var resp struct {
		BatchItemFailures []any `json:"batchItemFailures"`
	}
	for i, batch := range [][]sqstypes.Message{{m, again}, {m}} {
		if err := s.sweeper.invoke(ctx, s.sqsEvent(batch), &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: failures %v", i, resp.BatchItemFailures)
		}
	}
	s.delete(t, []sqstypes.Message{m})
	if to := p.events(id, ledger.EvSpawnTimeout); len(to) != 1 {
		t.Fatalf("%d spawn_timeout events, want exactly 1", len(to))
	}
	if e := p.entity(id); e.Status != ledger.Verified || e.Version != 4 {
		// conclude 1, dismiss 2, assume 3, timeout 4: nothing after.
		t.Fatalf("entity %s version %d, want verified at version 4", e.Status, e.Version)
	}
}

// A message that arrives before its spawn is due (SQS delays stop at 15
// minutes) is sent on for the remainder and the spawn stays pending.
func TestAMessageThatIsNotYetDueIsReenqueued(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	id := p.verifiedClaim(s.api)
	req := p.assume(s.api, id) // due in 24h: beyond the 15-minute horizon, so no message of its own yet
	_, delayedBefore, _ := s.queueCounts(t)

	// The message an older build sent when it issued the spawn, as it
	// arrives after a 15-minute leg: due now, spawn not.
	body := sqssched.Message{Project: p.name, RequestID: req.RequestID, ExpiresAt: req.ExpiresAt}.Encode()
	if _, err := s.sqs.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.queueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	var leg []sqstypes.Message
	deadline := time.Now().Add(10 * time.Second)
	for len(leg) == 0 && time.Now().Before(deadline) {
		for _, m := range s.receive(t, time.Second) {
			if messageFor(m, req.RequestID) {
				leg = append(leg, m)
			} else {
				s.sweep(t, []sqstypes.Message{m})
			}
		}
	}
	if len(leg) != 1 {
		t.Fatalf("received %d copies of the leg", len(leg))
	}
	if failed := s.sweep(t, leg); len(failed) != 0 {
		t.Fatalf("failures %v", failed)
	}
	if _, delayedAfter, _ := s.queueCounts(t); delayedAfter != delayedBefore+1 {
		t.Fatalf("delayed messages %d -> %d: the remainder was not sent on", delayedBefore, delayedAfter)
	}
	if sp := p.spawn(req.RequestID); sp.State != spawn.Pending {
		t.Fatalf("a not-yet-due message resolved the spawn: %s %s", sp.State, sp.Outcome)
	}
	if st := p.entity(id).Status; st != ledger.Unverified {
		t.Fatalf("status %s", st)
	}
}

// The scheduled EventBridge event is the backstop: a spawn whose message
// was lost is swept anyway, in every registered project.
func TestTheScheduledSweepExpiresASpawnWhoseMessageWasLost(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	id := p.verifiedClaim(s.apiShort)
	req := p.assume(s.apiShort, id)

	// Lose the message: receive it when it comes due and delete it unseen.
	lost := false
	deadline := time.Now().Add(s.short + 15*time.Second)
	for !lost {
		if time.Now().After(deadline) {
			t.Fatal("the timeout message never came due")
		}
		var others []sqstypes.Message
		for _, m := range s.receive(t, time.Second) {
			if messageFor(m, req.RequestID) {
				s.delete(t, []sqstypes.Message{m})
				lost = true
			} else {
				others = append(others, m)
			}
		}
		s.sweep(t, others)
	}
	if sp := p.spawn(req.RequestID); sp.State != spawn.Pending {
		t.Fatalf("resolved without its message: %s", sp.Outcome)
	}

	// The scheduled run fans out through the work queue (fanout_test.go).
	if _, swept := s.scheduledSweep(t); swept[p.name] != 1 {
		t.Fatalf("the sweep did not visit %s (registered by its first spawn): %v", p.name, swept)
	}
	if sp := p.spawn(req.RequestID); sp.Outcome != spawn.TimeoutRestored {
		t.Fatalf("outcome %s", sp.Outcome)
	}
	if to := p.events(id, ledger.EvSpawnTimeout); len(to) != 1 || p.entity(id).Status != ledger.Verified {
		t.Fatalf("timeouts %d, status %s", len(to), p.entity(id).Status)
	}
	// Idempotent: the next scheduled run finds nothing more to do here.
	version := p.entity(id).Version
	s.scheduledSweep(t)
	if to := p.events(id, ledger.EvSpawnTimeout); len(to) != 1 || p.entity(id).Version != version {
		t.Fatalf("second sweep: %d timeouts, version %d (was %d)", len(to), p.entity(id).Version, version)
	}
}

// A project's own spawn timeout (docs/design.md §5.5), set by an operator's direct
// invoke of the operator function, governs the spawns the function issues for
// that project; other projects keep the deployment's default (24 h).
func TestAnOperatorSetsAProjectsSpawnTimeoutThroughTheOperatorFunction(t *testing.T) {
	s := setup(t)
	p, other := s.newProject(t), s.newProject(t)
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"set_project": map[string]any{"project": p.name, "spawn_timeout": "90m"}}}
	if err := s.operator.invoke(ctx, op, &env); err != nil || env["ok"] != true {
		t.Fatalf("set_project: %v %v", env, err)
	}
	bad := map[string]any{"dont_operator": map[string]any{"set_project": map[string]any{"project": p.name, "spawn_timeout": "forever"}}}
	if err := s.operator.invoke(ctx, bad, &env); err != nil || env["ok"] != false {
		t.Fatalf("set_project with a bad timeout: %v %v", env, err)
	}
	for _, c := range []struct {
		p    *project
		want time.Duration
	}{{p, 90 * time.Minute}, {other, 24 * time.Hour}} {
		req := c.p.assume(s.api, c.p.verifiedClaim(s.api))
		sp := c.p.spawn(req.RequestID)
		if got := sp.ExpiresAt.Sub(sp.IssuedAt); got != c.want {
			t.Fatalf("project %s: a spawn of %v, want %v", c.p.name, got, c.want)
		}
	}
}
