package dynamo_test

import (
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// On DynamoDB a call's response does not ride its commit (the cost:
// docs/aws-cost.md): the commit applies the call alone and marks the
// key Deferred, so the transport remembers the response after it.
func TestACallsResponseIsDeferredPastItsCommitOnDynamoDB(t *testing.T) {
	s := newStore(t)
	now := time.Now()
	e := newClaim()
	key := &idempotency.Put{Name: "tok/assume/k-1", Fingerprint: "fp", Status: 200, Body: []byte(`{"ok":true}`), At: now}
	if err := s.Commit(ctx, service.Tx{Entities: []service.EntityPut{{Entity: e}}, Key: key}); err != nil {
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
