package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// faults is an http.RoundTripper in front of the test server. For the
// operation it watches, it answers the next requests with the queued
// faults instead of the server, and it can drop the first successful
// response (the server applied the request; the client never hears so).
type faults struct {
	op   string
	next http.RoundTripper

	mu            sync.Mutex
	queue         []fault
	dropOnSuccess int
	attempts      int
	// applied counts the attempts the server answered 200 (dropped or
	// not); a strict stand-in's injected conflicts and throttles are not.
	applied int
	bodies  [][]byte
}

// fault is a canned reply: HTTP status and DynamoDB error body.
type fault struct {
	status int
	body   string
}

func throttled(code string) fault {
	return fault{400, `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"injected"}`}
}

func cancelled(reasons ...string) fault {
	var rs []map[string]string
	for _, r := range reasons {
		rs = append(rs, map[string]string{"Code": r})
	}
	b, _ := json.Marshal(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(reasons, ", ") + "]",
		"CancellationReasons": rs,
	})
	return fault{400, string(b)}
}

var serverError = fault{500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`}

func (f *faults) RoundTrip(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	if !strings.HasSuffix(target, "."+f.op) {
		return f.next.RoundTrip(r)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.attempts++
	f.bodies = append(f.bodies, body)
	var canned *fault
	if len(f.queue) > 0 {
		canned = &f.queue[0]
		f.queue = f.queue[1:]
	}
	f.mu.Unlock()
	if canned != nil {
		h := http.Header{}
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(canned.body))), 10))
		return &http.Response{StatusCode: canned.status, Status: http.StatusText(canned.status), Header: h,
			Body: io.NopCloser(strings.NewReader(canned.body)), ContentLength: int64(len(canned.body)), Request: r}, nil
	}
	resp, err := f.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK {
		f.mu.Lock()
		f.applied++
		drop := f.dropOnSuccess > 0
		if drop {
			f.dropOnSuccess--
		}
		f.mu.Unlock()
		if drop {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		}
	}
	return resp, err
}

func (f *faults) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func (f *faults) appliedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// faultyStore is a fresh project whose TransactWriteItems go through f.
func faultyStore(t *testing.T, f *faults) *dynamo.Store {
	t.Helper()
	needServer(t)
	f.next = http.DefaultTransport
	s := dynamo.New(newClient(f, nil), table, "test-"+randomName())
	dynamo.SetRetry(s, 8, time.Millisecond, 20*time.Millisecond)
	return s
}

// pendingSpawn commits an unverified claim under review by a pending spawn.
func pendingSpawn(t *testing.T, s store.Store) (ledger.Entity, spawn.Spawn) {
	t.Helper()
	e := ledger.Entity{ID: ids.New(ids.Claim, t0), Kind: ledger.KindClaim, Statement: "water boils at 100 C at sea level",
		Status: ledger.Unverified, Version: 1, CreatedAt: t0, UpdatedAt: t0}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		PreStatus: ledger.Unverified, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), EntityVersion: 2, Request: []byte(`{"request_id":"x"}`)}
	e.PendingSpawn = sp.ID
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}},
		Events: []ledger.Event{{ID: ids.New(ids.Event, t0), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: sp.ID, At: t0}}}); err != nil {
		t.Fatal(err)
	}
	return e, sp
}

// resolution is the callback's write: entity verified, spawn resolved, two events.
func resolution(e ledger.Entity, sp spawn.Spawn) store.Tx {
	e2 := e
	e2.Status, e2.Version, e2.PendingSpawn = ledger.Verified, e.Version+1, ""
	done := sp
	done.State, done.Outcome = spawn.Resolved, spawn.CallbackApplied
	return store.Tx{
		Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}},
		Spawns:   []store.SpawnPut{{Spawn: done, Step: spawn.StepCallback}},
		Events: []ledger.Event{
			{ID: ids.New(ids.Event, t0), Kind: ledger.EvDismissed, EntityID: e.ID, RequestID: sp.ID, From: ledger.Unverified, To: ledger.Verified, At: t0},
			{ID: ids.New(ids.Event, t0), Kind: ledger.EvSpawnResolved, EntityID: e.ID, RequestID: sp.ID, Outcome: string(spawn.CallbackApplied), At: t0},
		},
	}
}

// transactional is tx with a new claim of its own added: a commit of two
// entities, one TransactWriteItems (a spawn's resolution alone is one
// conditional put, planInline).
func transactional(tx store.Tx) store.Tx {
	tx.Entities = append(append([]store.EntityPut(nil), tx.Entities...), store.EntityPut{Entity: newClaim()})
	return tx
}

func TestALostCommitResponseIsRetriedWithItsTokenAndAppliedOnce(t *testing.T) {
	f := &faults{op: "TransactWriteItems"}
	s := faultyStore(t, f)
	e, sp := pendingSpawn(t, s)
	before := f.count()
	f.mu.Lock()
	f.dropOnSuccess = 1
	f.mu.Unlock()

	tx := transactional(resolution(e, sp))
	if err := s.Commit(ctx, tx); err != nil {
		t.Fatalf("the retry of a committed transaction must succeed, got %v", err)
	}
	if n := f.count() - before; n != 2 {
		t.Fatalf("%d TransactWriteItems attempts, want 2 (the lost one and its retry)", n)
	}
	f.mu.Lock()
	first, second := f.bodies[len(f.bodies)-2], f.bodies[len(f.bodies)-1]
	f.mu.Unlock()
	if tok := clientToken(t, first); tok == "" || tok != clientToken(t, second) {
		t.Fatalf("the retry carried ClientRequestToken %q, the first attempt %q", clientToken(t, second), tok)
	}
	evs, err := s.Events(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3 (requested, dismissed, resolved once)", len(evs))
	}
	got, _ := s.GetEntity(ctx, e.ID)
	if got.Version != 2 || got.Status != ledger.Verified {
		t.Fatalf("entity %s v%d", got.Status, got.Version)
	}
	// The same write as a new Commit (a new token) is a second resolver: it loses.
	if err := s.Commit(ctx, tx); !errors.As(err, new(*store.ConditionFailed)) {
		t.Fatalf("a second Commit of the same resolution: want ConditionFailed, got %v", err)
	}
}

// A resolution alone is one conditional put of its entity's item: when it
// landed but its answer was lost, the retry finds the item it wrote and
// succeeds; a second resolution loses.
func TestALostInlineResolutionResponseIsRetriedAndAppliedOnce(t *testing.T) {
	f := &faults{op: "PutItem"}
	s := faultyStore(t, f)
	e, sp := pendingSpawn(t, s)
	before := f.count()
	f.mu.Lock()
	f.dropOnSuccess = 1
	f.mu.Unlock()
	tx := resolution(e, sp)
	if err := s.Commit(ctx, tx); err != nil {
		t.Fatalf("the retry of a resolution that landed must succeed, got %v", err)
	}
	if n := f.count() - before; n != 2 {
		t.Fatalf("%d PutItem attempts, want 2 (the lost one and its retry)", n)
	}
	if evs, err := s.Events(ctx, e.ID); err != nil || len(evs) != 3 {
		t.Fatalf("%d events, want 3 (requested, dismissed, resolved once): %v", len(evs), err)
	}
	if got, err := s.GetSpawn(ctx, sp.ID); err != nil || got.State != spawn.Resolved || got.Outcome != spawn.CallbackApplied {
		t.Fatalf("spawn after the resolution: %+v %v", got, err)
	}
	if err := s.Commit(ctx, tx); !errors.As(err, new(*store.ConditionFailed)) {
		t.Fatalf("a second Commit of the same resolution: want ConditionFailed, got %v", err)
	}
}

func TestALostCallbackResponseDoesNotTurnTheWinnerIntoADuplicate(t *testing.T) {
	f := &faults{op: "PutItem"}
	s := faultyStore(t, f)
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, Clock: func() time.Time { return now }, SpawnTimeout: time.Hour})
	res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "the retry is safe"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.ID
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id})
	if err != nil {
		t.Fatal(err)
	}
	var req spawn.Request
	json.Unmarshal(r.Request, &req)
	f.mu.Lock()
	f.dropOnSuccess = 1
	f.mu.Unlock()
	out, err := tools.Call(ctx, svc, "dismiss", map[string]any{"id": id,
		"evidence": []string{"https://example.org/evidence"}, "request_id": req.RequestID})
	if err != nil {
		t.Fatal(err)
	}
	view := out.Data.(service.EntityView)
	if view.Resolution == nil || !view.Resolution.Applied || len(out.Warnings) != 0 {
		t.Fatalf("resolution %+v, warnings %+v: the callback that won must be told it applied", view.Resolution, out.Warnings)
	}
}

func TestThrottlingConflictsAndServerErrorsAreRetried(t *testing.T) {
	f := &faults{op: "TransactWriteItems"}
	s := faultyStore(t, f)
	e, sp := pendingSpawn(t, s)
	before := f.count()
	f.mu.Lock()
	f.queue = []fault{
		throttled("ProvisionedThroughputExceededException"),
		throttled("ThrottlingException"),
		cancelled("TransactionConflict", "None", "None"),
		cancelled("None", "ThrottlingError", "None"),
		serverError,
		throttled("RequestLimitExceeded"),
	}
	f.mu.Unlock()
	if err := s.Commit(ctx, transactional(resolution(e, sp))); err != nil {
		t.Fatal(err)
	}
	if n := f.count() - before; n != 7 {
		t.Fatalf("%d attempts, want 7 (six faults, then the server)", n)
	}
	if evs, _ := s.Events(ctx, e.ID); len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
}

func TestRetriesAreBoundedAndConditionFailuresAreNotRetried(t *testing.T) {
	f := &faults{op: "TransactWriteItems"}
	s := faultyStore(t, f)
	e, sp := pendingSpawn(t, s)

	before := f.count()
	f.mu.Lock()
	for range 20 {
		f.queue = append(f.queue, throttled("ProvisionedThroughputExceededException"))
	}
	f.mu.Unlock()
	err := s.Commit(ctx, transactional(resolution(e, sp)))
	if err == nil || errors.As(err, new(*store.ConditionFailed)) {
		t.Fatalf("endless throttling: want a store error, got %v", err)
	}
	if n := f.count() - before; n != 8 {
		t.Fatalf("%d attempts, want 8 (the bound)", n)
	}

	f.mu.Lock()
	// The entity item (index 0) carries the spawn's condition.
	f.queue = []fault{cancelled("ConditionalCheckFailed", "None")}
	f.mu.Unlock()
	before = f.count()
	err = s.Commit(ctx, transactional(resolution(e, sp)))
	if !store.FailedOn(err, sp.ID) {
		t.Fatalf("want ConditionFailed on the spawn (index 0), got %v", err)
	}
	if n := f.count() - before; n != 1 {
		t.Fatalf("a failed condition was retried: %d attempts", n)
	}
}

func clientToken(t *testing.T, body []byte) string {
	t.Helper()
	var in struct{ ClientRequestToken string }
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(fmt.Errorf("decode request: %w", err))
	}
	return in.ClientRequestToken
}

// A claim whose first attempt landed but whose answer was lost is still
// the claimer when the retry finds the record.
func TestALostClaimResponseStillClaimsTheKey(t *testing.T) {
	f := &faults{op: "PutItem", dropOnSuccess: 1}
	s := faultyStore(t, f)
	ex, err := s.Claim(ctx, "key", "fp", t0)
	if err != nil || ex != nil {
		t.Fatalf("claim: existing %+v, err %v; want the claim", ex, err)
	}
	if f.count() != 2 {
		t.Fatalf("%d PutItem attempts, want 2", f.count())
	}
	if ex, _ := s.Claim(ctx, "key", "fp", t0); ex == nil || ex.Done {
		t.Fatalf("a second request with the key: %+v, want the running claim", ex)
	}
}

// Issuing a spawn on an existing entity is two puts (the spawn's item,
// then the entity's item with the spawn pending on it); when both land but
// both answers are lost, the retries recognise their own writes.
func TestALostIssueResponseIsAppliedOnce(t *testing.T) {
	f := &faults{op: "PutItem"}
	s := faultyStore(t, f)
	e := newClaim()
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEntity(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		PreStatus: ledger.Unverified, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), EntityVersion: 2, Request: []byte(`{"request_id":"x"}`)}
	e2 := e
	e2.Version, e2.PendingSpawn, e2.LastSpawn = 2, sp.ID, sp.ID
	f.mu.Lock()
	f.dropOnSuccess = 2
	f.mu.Unlock()
	before := f.count()
	err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}},
		Events: []ledger.Event{{ID: ids.New(ids.Event, t0), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: sp.ID, At: t0}}})
	if err != nil {
		t.Fatalf("issue with lost answers: %v", err)
	}
	if n := f.count() - before; n != 4 {
		t.Fatalf("%d PutItem attempts, want 4 (two writes, each answered only on its retry)", n)
	}
	got, err := s.GetSpawn(ctx, sp.ID)
	if err != nil || got.State != spawn.Pending {
		t.Fatalf("spawn after the issue: %+v %v", got, err)
	}
	if evs, _ := s.Events(ctx, e.ID); len(evs) != 1 || evs[0].Kind != ledger.EvSpawnRequested {
		t.Fatalf("history after the issue: %+v", evs)
	}
}
