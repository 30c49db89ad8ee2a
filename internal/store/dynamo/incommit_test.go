package dynamo_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
)

// On DynamoDB the response of a call the service's own conditions apply
// once (Put.MayDefer: assume, overlook, a callback token's heartbeat) is
// not an item of its commit (the cost: docs/aws-cost.md): the commit
// applies the call alone and marks the key Deferred, so the transport
// remembers the response after it. (A callback's terminal action keeps
// its response on its resolution instead:
// TestACallbacksKeyRidesOnTheResolutionItCommits.)
func TestAGuardedCallsResponseIsDeferredPastItsCommitOnDynamoDB(t *testing.T) {
	s := newStore(t)
	now := time.Now()
	e := newClaim()
	key := &idempotency.Put{Name: "tok/assume/k-1", Fingerprint: "fp", Status: 200, Body: []byte(`{"ok":true}`), At: now, MayDefer: true}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Key: key}); err != nil {
		t.Fatal(err)
	}
	if !key.Deferred {
		t.Fatal("the response was not deferred")
	}
	if rec, err := s.Lookup(ctx, key.Name, now); err != nil || rec != nil {
		t.Fatalf("the commit wrote the response: %+v, %v", rec, err)
	}
	if _, err := s.GetEntity(ctx, e.ID); err != nil {
		t.Fatalf("the call was not applied: %v", err)
	}
}

// Every other keyed call (a conclude) is one TransactWriteItems that
// carries the call's items and the key's record together, and a retry of
// that transaction whose answer was lost (the same ClientRequestToken)
// succeeds without applying anything twice.
func TestTheTransactionCarryingAKeyedConcludeCarriesItsIdempotencyItem(t *testing.T) {
	f := &faults{op: "TransactWriteItems"}
	s := faultyStore(t, f)
	now := time.Now()
	e := ledger.Entity{ID: ids.New(ids.Claim, now), Kind: ledger.KindClaim, Statement: "carried together",
		Status: ledger.Unverified, Version: 1, CreatedAt: now, UpdatedAt: now}
	key := &idempotency.Put{Name: "tok/conclude/k-1", Fingerprint: "fp", Status: 201, Body: []byte(`{"ok":true}`), At: now}
	f.mu.Lock()
	f.dropOnSuccess = 1
	f.mu.Unlock()
	before := f.appliedCount()
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}},
		Events: []ledger.Event{{ID: ids.New(ids.Event, now), Kind: ledger.EvConcluded, EntityID: e.ID, To: ledger.Unverified, At: now}}, Key: key}); err != nil {
		t.Fatalf("the retry of a committed keyed transaction must succeed, got %v", err)
	}
	// Counted as the server's successes: a strict stand-in (.ci/run) may
	// also refuse an attempt with an injected conflict, which is retried.
	if n := f.appliedCount() - before; n != 2 {
		t.Fatalf("%d TransactWriteItems answered 200, want 2 (the lost one and its retry)", n)
	}
	f.mu.Lock()
	body := f.bodies[len(f.bodies)-1]
	f.mu.Unlock()
	var in struct {
		TransactItems []struct {
			Put *struct {
				Item map[string]map[string]any
			}
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	var entity, record bool
	for _, it := range in.TransactItems {
		if it.Put == nil {
			continue
		}
		for _, v := range it.Put.Item {
			if s, ok := v["S"].(string); ok && strings.HasSuffix(s, "I#"+key.Name) {
				record = true
			}
			if s, ok := v["S"].(string); ok && strings.Contains(s, e.ID) {
				entity = true
			}
		}
	}
	if !entity || !record {
		t.Fatalf("the transaction carries the entity: %v, the idempotency record: %v (%s)", entity, record, body)
	}
	if key.Deferred {
		t.Fatal("the key was deferred")
	}
	if rec, err := s.Lookup(ctx, key.Name, now); err != nil || rec == nil || !rec.Done || string(rec.Body) != `{"ok":true}` {
		t.Fatalf("the record: %+v %v", rec, err)
	}
	if evs, err := s.Events(ctx, e.ID); err != nil || len(evs) != 1 {
		t.Fatalf("%d events, want 1: %v", len(evs), err)
	}
	// The same key in a new commit applies nothing.
	e2 := e
	e2.ID = ids.New(ids.Claim, now)
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2}}, Key: &idempotency.Put{Name: key.Name, Fingerprint: "fp", Status: 201,
		Body: []byte(`{"ok":false}`), At: now}}); !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a second commit of the key: want ErrTaken, got %v", err)
	}
	if _, err := s.GetEntity(ctx, e2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused commit was applied: %v", err)
	}
}
