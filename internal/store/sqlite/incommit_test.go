package sqlite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
)

func aClaim(at time.Time) ledger.Entity {
	return ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: "a claim", Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
}

// A commit that carries its call's response (store.Tx.Key) writes it
// in the same transaction: the record is there exactly when the call's
// writes are, and a key already recorded fails the whole commit.
func TestACallsResponseIsCommittedWithItsWritesOrNotAtAll(t *testing.T) {
	s := newStore(t)
	now := time.Now()
	key := &idempotency.Put{Name: "tok/assume/k-1", Fingerprint: "fp", Status: 200, Body: []byte(`{"ok":true}`), At: now}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: aClaim(now)}}, Key: key}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Lookup(ctx, key.Name, now)
	if err != nil || rec == nil || !rec.Done || rec.Status != 200 || string(rec.Body) != `{"ok":true}` || rec.Fingerprint != "fp" {
		t.Fatalf("the committed response: %+v, %v", rec, err)
	}
	other := aClaim(now)
	again := &idempotency.Put{Name: key.Name, Fingerprint: "fp2", Status: 200, Body: []byte(`{"ok":false}`), At: now}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: other}}, Key: again}); !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a second commit under the key: %v, want ErrTaken", err)
	}
	if _, err := s.GetEntity(ctx, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused commit's entity was written: %v", err)
	}
	if rec, _ := s.Lookup(ctx, key.Name, now); rec == nil || string(rec.Body) != `{"ok":true}` {
		t.Fatalf("the first response was replaced: %+v", rec)
	}
	later := now.Add(idempotency.Window + time.Minute)
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: aClaim(later)}},
		Key: &idempotency.Put{Name: key.Name, Fingerprint: "fp3", Status: 200, Body: []byte(`{}`), At: later}}); err != nil {
		t.Fatalf("a key past the window: %v", err)
	}
}
