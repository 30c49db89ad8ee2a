package dynamo_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// A commit that carries its call's response (service.Tx.Key) writes it
// in the same TransactWriteItems: the record is there exactly when the
// call's writes are, and a key already recorded fails the whole commit.
func TestACallsResponseIsCommittedWithItsWritesOrNotAtAll(t *testing.T) {
	s := newStore(t)
	now := time.Now()
	e := newClaim()
	key := &idempotency.Put{Name: "tok/assume/k-1", Fingerprint: "fp", Status: 200, Body: []byte(`{"ok":true}`), At: now}
	if err := s.Commit(ctx, service.Tx{Entities: []service.EntityPut{{Entity: e}}, Key: key}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Lookup(ctx, key.Name, now)
	if err != nil || rec == nil || !rec.Done || rec.Status != 200 || string(rec.Body) != `{"ok":true}` || rec.Fingerprint != "fp" {
		t.Fatalf("the committed response: %+v, %v", rec, err)
	}
	other := newClaim()
	again := &idempotency.Put{Name: key.Name, Fingerprint: "fp2", Status: 200, Body: []byte(`{"ok":false}`), At: now}
	if err := s.Commit(ctx, service.Tx{Entities: []service.EntityPut{{Entity: other}}, Key: again}); !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a second commit under the key: %v, want ErrTaken", err)
	}
	if _, err := s.GetEntity(ctx, other.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("the refused commit's entity was written: %v", err)
	}
	if rec, _ := s.Lookup(ctx, key.Name, now); rec == nil || string(rec.Body) != `{"ok":true}` {
		t.Fatalf("the first response was replaced: %+v", rec)
	}
	// A record older than the window counts as absent: taken again.
	later := now.Add(idempotency.Window + time.Minute)
	third := newClaim()
	if err := s.Commit(ctx, service.Tx{Entities: []service.EntityPut{{Entity: third}}, Key: &idempotency.Put{Name: key.Name, Fingerprint: "fp3", Status: 200, Body: []byte(`{}`), At: later}}); err != nil {
		t.Fatalf("a key past the window: %v", err)
	}
}

// A response that would take the call's transaction past DynamoDB's
// 4 MB is not added to it: the call commits alone, and the key is marked
// Deferred, so the transport remembers it after the commit as before.
func TestAResponseThatWouldOverflowTheTransactionIsDeferred(t *testing.T) {
	s := newStore(t)
	var puts []service.EntityPut
	for range 14 { // about 290 KB each, stored: just under 4 MB together
		e := newClaim()
		e.Statement = incompressible(380 * 1024)
		puts = append(puts, service.EntityPut{Entity: e})
	}
	key := &idempotency.Put{Name: "tok/conclude/big", Fingerprint: "fp", Status: 200, Body: []byte(incompressible(300 * 1024)), At: time.Now()}
	if err := s.Commit(ctx, service.Tx{Entities: puts, Key: key}); err != nil {
		t.Fatal(err)
	}
	if !key.Deferred {
		t.Fatal("the response was not deferred")
	}
	if rec, err := s.Lookup(ctx, key.Name, time.Now()); err != nil || rec != nil {
		t.Fatalf("a deferred response was written: %+v, %v", rec, err)
	}
	if _, err := s.GetEntity(ctx, puts[0].Entity.ID); err != nil {
		t.Fatalf("the call was not applied: %v", err)
	}
}
