package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/dont-cli/dont/internal/tools"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The strict modes are on where they are asked for. The strict CI run
// (.ci/run) starts the stand-in with them on for every table and sets
// DONT_STANDIN_EXPECT_STRICT=1: then a fresh table must be strict, so
// that the conformance suite beside it ran against them. Otherwise one
// table configured strict must be.
func TestTheStandinIsStrictWhereAsked(t *testing.T) {
	needServer(t)
	var m *standin.Strict
	if !standin.ExpectStrict() {
		m = &standin.Strict{GSILagReads: 1, ConflictRate: 0.2, ThrottleRate: 0.2}
	}
	err := standin.CheckStrict(ctx, endpoint, dynamo.CreateTable, m)
	if errors.Is(err, standin.ErrNotTheStandin) {
		t.Skipf("%v; DynamoDB's own index lag, conflicts and throttling cannot be forced", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// strictTable is a fresh table whose strict modes are m, whatever the
// stand-in's defaults; ok is false (and the test has nothing to check)
// when the endpoint is not the stand-in, whose faults cannot be forced.
func strictTable(t *testing.T, m standin.Strict) (name string, ok bool) {
	t.Helper()
	needServer(t)
	name = "dont-strict-" + randomName()
	if err := dynamo.CreateTable(ctx, newClient(nil, nil), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { newClient(nil, nil).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	err := standin.Configure(ctx, endpoint, name, m)
	if errors.Is(err, standin.ErrNotTheStandin) {
		t.Logf("%v; DynamoDB's own faults cannot be forced, nothing to check", err)
		return name, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return name, true
}

// seen records the DynamoDB operations a client sent and the error codes
// they got.
type seen struct {
	mu   sync.Mutex
	sent []string // "Operation[+ExclusiveStartKey][:ErrorCode[:Reason]]"
}

func (s *seen) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"ExclusiveStartKey"`)) {
			op += "+ExclusiveStartKey"
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	entry := op
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var e struct {
			Type                string `json:"__type"`
			CancellationReasons []struct{ Code string }
		}
		json.Unmarshal(body, &e)
		entry += ":" + e.Type[strings.LastIndex(e.Type, "#")+1:]
		for _, r := range e.CancellationReasons {
			if r.Code != "None" {
				entry += ":" + r.Code
			}
		}
	}
	s.mu.Lock()
	s.sent = append(s.sent, entry)
	s.mu.Unlock()
	return resp, nil
}

func (s *seen) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.sent {
		if strings.Contains(e, substr) {
			n++
		}
	}
	return n
}

func (s *seen) last(op string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.sent) - 1; i >= 0; i-- {
		if strings.HasPrefix(s.sent[i], op) {
			return s.sent[i]
		}
	}
	return ""
}

// A commit that DynamoDB cancels only for a TransactionConflict is
// retried, with backoff, until it commits, once; one that keeps
// conflicting gives up after the bounded attempts and writes nothing.
func TestACommitCancelledByTransactionConflictsIsRetriedAndAppliedOnce(t *testing.T) {
	name, ok := strictTable(t, standin.Strict{ConflictRate: 0.5})
	if !ok {
		return
	}
	w := &seen{}
	s := dynamo.New(newClient(w, nil), name, "test-"+randomName())
	// 20 attempts: at a conflict rate of one half, 20 commits all land
	// but one run in 50,000 (12 attempts failed one run in 200).
	dynamo.SetRetry(s, 20, time.Millisecond, 5*time.Millisecond)
	var made []ledger.Entity
	for range 20 {
		e := newClaim()
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatalf("commit among conflicts: %v", err)
		}
		made = append(made, e)
	}
	if w.count("TransactionConflict") == 0 {
		t.Fatalf("no conflict was injected: %v", w.sent)
	}
	list, err := s.ListEntities(ctx, store.EntityFilter{})
	if err != nil || len(list) != len(made) {
		t.Fatalf("%d entities after 20 commits, %v", len(list), err)
	}
	for _, e := range list {
		if e.Version != 1 {
			t.Fatalf("%s at version %d: a retry applied twice", e.ID, e.Version)
		}
	}

	if err := standin.Configure(ctx, endpoint, name, standin.Strict{ConflictRate: 1}); err != nil {
		t.Fatal(err)
	}
	before := w.count("TransactWriteItems")
	e := newClaim()
	err = s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}})
	if err == nil || store.FailedOn(err, e.ID) {
		t.Fatalf("a commit that always conflicts: want the conflict, got %v", err)
	}
	if n := w.count("TransactWriteItems") - before; n != 20 {
		t.Fatalf("%d attempts, want the 20 the store allows", n)
	}
	if _, err := s.GetEntity(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the conflicting commit was written: %v", err)
	}
}

// A failed condition is an answer, not a passing fault: among conflicts
// the store retries until DynamoDB evaluates the condition, and then stops.
func TestAFailedConditionIsNeverRetriedAmongConflicts(t *testing.T) {
	name, ok := strictTable(t, standin.Strict{})
	if !ok {
		return
	}
	w := &seen{}
	s := dynamo.New(newClient(w, nil), name, "test-"+randomName())
	dynamo.SetRetry(s, 20, time.Millisecond, 5*time.Millisecond)
	e := newClaim()
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
		t.Fatal(err)
	}
	if err := standin.Configure(ctx, endpoint, name, standin.Strict{ConflictRate: 0.5}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		before := w.count("TransactWriteItems")
		again := newClaim()
		again.ID = e.ID // exists: the create's condition fails
		other := newClaim()
		err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: other}, {Entity: again}}})
		if !store.FailedOn(err, e.ID) {
			t.Fatalf("want ConditionFailed on %s, got %v", e.ID, err)
		}
		if last := w.last("TransactWriteItems"); !strings.Contains(last, "ConditionalCheckFailed") {
			t.Fatalf("the last attempt got %q: the store went on after the condition failed", last)
		}
		if w.count("TransactWriteItems") == before {
			t.Fatal("no attempt")
		}
		if _, err := s.GetEntity(ctx, other.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("half of a failed commit was written: %v", err)
		}
	}
	if w.count("ConditionalCheckFailed") != 10 {
		t.Fatalf("%d attempts saw the failed condition, want one per commit (10): %v", w.count("ConditionalCheckFailed"), w.sent)
	}
}

// Throttled reads and writes (ThrottlingException,
// ProvisionedThroughputExceededException, a transaction's ThrottlingError)
// are retried; the caller sees only the answers.
func TestThrottledRequestsAreRetried(t *testing.T) {
	name, ok := strictTable(t, standin.Strict{ThrottleRate: 0.3})
	if !ok {
		return
	}
	w := &seen{}
	s := dynamo.New(newClient(w, nil), name, "test-"+randomName())
	dynamo.SetRetry(s, 16, time.Millisecond, 5*time.Millisecond)
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Hour, Clock: func() time.Time { return t0 }})
	for range 10 {
		v, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "throttled but answered"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: v.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetEntity(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Sweep(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListEntities(ctx, store.EntityFilter{}); err != nil || len(list) != 10 {
		t.Fatalf("%d entities, %v", len(list), err)
	}
	if w.count("Throttl")+w.count("ProvisionedThroughputExceeded") == 0 {
		t.Fatalf("nothing was throttled: %v", w.sent)
	}
}

// An index that lags its table: a sweep right after a spawn fell due can
// miss it, and a later sweep times it out, once.
func TestASweepThatMissesADueSpawnBehindTheIndexTimesItOutLater(t *testing.T) {
	name, ok := strictTable(t, standin.Strict{GSILagReads: 8})
	if !ok {
		return
	}
	s := dynamo.New(newClient(nil, nil), name, "test-"+randomName())
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Minute, Clock: func() time.Time { return now }})
	v, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "due behind the index"})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: v.ID})
	if err != nil {
		t.Fatal(err)
	}
	now = t0.Add(2 * time.Minute)
	rep, err := svc.Sweep(ctx, 100)
	if err != nil || len(rep.TimedOut) != 0 {
		t.Fatalf("the first sweep saw the spawn through a lagging index: %+v %v", rep, err)
	}
	if got, _ := s.GetSpawn(ctx, r.Spawn.ID); got.State != spawn.Pending {
		t.Fatalf("after the sweep that missed it the spawn is %s", got.State)
	}
	timedOut := 0
	for range 10 {
		rep, err := svc.Sweep(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		timedOut += len(rep.TimedOut)
	}
	if timedOut != 1 {
		t.Fatalf("%d timeouts in the later sweeps, want 1", timedOut)
	}
	got, _ := s.GetSpawn(ctx, r.Spawn.ID)
	if got.State != spawn.Resolved || got.Outcome != spawn.TimeoutRestored {
		t.Fatalf("spawn %s %s, want resolved by timeout", got.State, got.Outcome)
	}
}

// An index that lags its table: a sweep that still sees a spawn a callback
// has resolved re-reads it, skips it and changes nothing.
func TestASweepThatSeesAResolvedSpawnThroughTheIndexSkipsIt(t *testing.T) {
	name, ok := strictTable(t, standin.Strict{GSILagReads: 20})
	if !ok {
		return
	}
	s := dynamo.New(newClient(nil, nil), name, "test-"+randomName())
	now := t0
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s, Tokens: s, SpawnTimeout: time.Minute, Clock: func() time.Time { return now }})
	v, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "resolved behind the index"})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: v.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Let the index catch up with the issue.
	for i := 0; ; i++ {
		due, err := s.ExpiringSpawns(ctx, time.Time{}, t0.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) == 1 {
			break
		}
		if i > 40 {
			t.Fatal("the index never showed the spawn")
		}
	}
	out, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: v.ID,
		Evidence: []string{"https://example.org/e"}, RequestID: r.Spawn.ID})
	if err != nil || out.Resolution == nil || !out.Resolution.Applied {
		t.Fatalf("callback: %+v %v", out.Resolution, err)
	}
	now = t0.Add(2 * time.Minute)
	if due, _ := s.ExpiringSpawns(ctx, time.Time{}, now, 10); len(due) != 1 || due[0].ID != r.Spawn.ID {
		t.Fatalf("the lagging index should still list the resolved spawn, got %v", due)
	}
	rep, err := svc.Sweep(ctx, 100)
	if err != nil || len(rep.TimedOut) != 0 {
		t.Fatalf("a sweep timed out a resolved spawn it saw through the index: %+v %v", rep, err)
	}
	got, _ := s.GetSpawn(ctx, r.Spawn.ID)
	if got.State != spawn.Resolved || got.Outcome != spawn.CallbackApplied {
		t.Fatalf("spawn %s %s after the sweep, want the callback's resolution", got.State, got.Outcome)
	}
	e, _ := s.GetEntity(ctx, v.ID)
	if e.Status != ledger.Verified {
		t.Fatalf("entity %s after the sweep, want verified", e.Status)
	}
	evs, _ := s.Events(ctx, v.ID)
	for _, ev := range evs {
		if ev.Kind == ledger.EvSpawnTimeout {
			t.Fatalf("a timeout event was written for a resolved spawn: %+v", ev)
		}
	}
}
