package storetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
)

// KeyedPutStore is a store whose one-record writes carry a call's
// Idempotency-Key (store.KeyedPuts), with the ports that read them back.
type KeyedPutStore interface {
	store.Store
	store.KeyedPuts
	idempotency.Store
	store.HookStore
	store.TokenStore
	store.ConfirmationStore
	store.ApprovalStore
}

// keyedRecord is one kind of record a keyed put writes: put writes the
// record numbered n under key, get reads it (store.ErrNotFound: absent).
type keyedRecord struct {
	name string
	put  func(ctx context.Context, s KeyedPutStore, n int, key *idempotency.Put) error
	get  func(ctx context.Context, s KeyedPutStore, n int) error
	// id is the id of the record numbered n, as its ConditionFailed names it.
	id func(n int) string
}

// keyedRecords are the records of hooks add, tokens create, a held call
// and sessions open.
func keyedRecords() []keyedRecord {
	idOf := func(kind string) func(n int) string {
		made := map[int]string{} // an id is random: made once per n
		return func(n int) string {
			if made[n] == "" {
				made[n] = ids.New(kind, base.Add(time.Duration(n)*time.Second))
			}
			return made[n]
		}
	}
	hookID, tokenID, heldID, sessionID := idOf(ids.Hook), idOf(ids.Token), idOf(ids.Confirmation), idOf(ids.Session)
	return []keyedRecord{
		{"hook", func(ctx context.Context, s KeyedPutStore, n int, key *idempotency.Put) error {
			return s.PutHookKeyed(ctx, hooks.Hook{ID: hookID(n), URL: "https://hooks.example.com/in", Events: []hooks.EventType{hooks.ApprovalAsked},
				Format: hooks.FormatJSON, CreatedAt: base, Secret: "whsec_test"}, key)
		}, func(ctx context.Context, s KeyedPutStore, n int) error {
			_, err := s.GetHook(ctx, hookID(n))
			return err
		}, hookID},
		{"token", func(ctx context.Context, s KeyedPutStore, n int, key *idempotency.Put) error {
			return s.PutTokenKeyed(ctx, auth.Token{ID: tokenID(n), Role: auth.RoleHarness, Hash: "h", CreatedAt: base}, key)
		}, func(ctx context.Context, s KeyedPutStore, n int) error {
			_, err := s.GetToken(ctx, tokenID(n))
			return err
		}, tokenID},
		{"held call", func(ctx context.Context, s KeyedPutStore, n int, key *idempotency.Put) error {
			return s.PutConfirmationKeyed(ctx, confirm.Pending{ID: heldID(n), Tool: "lock", Args: map[string]any{}, State: confirm.StatePending,
				RequestedAt: base, ExpiresAt: base.Add(time.Hour)}, key)
		}, func(ctx context.Context, s KeyedPutStore, n int) error {
			_, err := s.GetConfirmation(ctx, heldID(n))
			return err
		}, heldID},
		{"session", func(ctx context.Context, s KeyedPutStore, n int, key *idempotency.Put) error {
			return s.CreateSessionKeyed(ctx, approvals.Session{ID: sessionID(n), Tier: approvals.Tier("read-only"), OpenedAt: base}, key)
		}, func(ctx context.Context, s KeyedPutStore, n int) error {
			_, err := s.GetSession(ctx, sessionID(n))
			return err
		}, sessionID},
	}
}

// RunKeyedPuts checks on a store that a call whose write is one record
// commits it with its key's response, atomically: the record with its
// response, or neither. A put under a key already recorded writes no
// record (idempotency.ErrTaken) and keeps the first response; a put whose
// record's own condition fails records no key, so its retry applies once.
//
// And a response larger than one DynamoDB item (350 KiB stored, up to
// idempotency.MaxBody) commits with its write all the same, and reads
// back whole.
func RunKeyedPuts(t *testing.T, newStore func(t *testing.T) KeyedPutStore) {
	t.Run("a response over 350 KiB commits with its write and reads back whole", func(t *testing.T) {
		largeResponseCommitsWithItsWrite(t, newStore(t))
	})
	for _, r := range keyedRecords() {
		t.Run("a "+r.name+" and its key's response commit together or not at all", func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			first := keyedPut("tok/"+r.name+"/k1", `{"ok":true,"first":1}`, base)
			must(t, r.put(ctx, s, 1, first))
			if err := r.get(ctx, s, 1); err != nil {
				t.Fatalf("the %s committed with its key: %v", r.name, err)
			}
			rec, err := s.Lookup(ctx, first.Name, base)
			if err != nil || rec == nil || !rec.Done || rec.Status != 201 || string(rec.Body) != `{"ok":true,"first":1}` || rec.Fingerprint != first.Fingerprint {
				t.Fatalf("the response committed with the %s: %+v %v", r.name, rec, err)
			}

			// The same key again (a retry that missed the record): nothing written.
			again := keyedPut(first.Name, `{"ok":true,"second":2}`, base.Add(time.Minute))
			if err := r.put(ctx, s, 2, again); !errors.Is(err, idempotency.ErrTaken) {
				t.Fatalf("a second %s under one key: want ErrTaken, got %v", r.name, err)
			}
			if err := r.get(ctx, s, 2); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a %s refused for its key was written: %v", r.name, err)
			}
			if rec, err := s.Lookup(ctx, first.Name, base.Add(time.Minute)); err != nil || rec == nil || string(rec.Body) != `{"ok":true,"first":1}` {
				t.Fatalf("the first response was replaced: %+v %v", rec, err)
			}

			// A put whose record exists already writes neither it nor its key.
			lost := keyedPut("tok/"+r.name+"/k2", `{"ok":true}`, base)
			wantCondition(t, r.put(ctx, s, 1, lost), r.id(1))
			if rec, err := s.Lookup(ctx, lost.Name, base); err != nil || rec != nil {
				t.Fatalf("a failed %s recorded its key: %+v %v", r.name, rec, err)
			}
			// So its retry applies it, once.
			must(t, r.put(ctx, s, 3, lost))
			if rec, err := s.Lookup(ctx, lost.Name, base); err != nil || rec == nil || !rec.Done {
				t.Fatalf("the retry's record: %+v %v", rec, err)
			}
		})
	}
}

// largeResponseCommitsWithItsWrite: a keyed conclude whose response is
// 1.5 MiB that does not compress (an entity grown large) carries it in
// its commit, and the record reads back byte for byte, to Lookup and to
// Claim; a second commit under the key applies nothing.
func largeResponseCommitsWithItsWrite(t *testing.T, s KeyedPutStore) {
	ctx := context.Background()
	noise := make([]byte, 1100<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	body := []byte(`{"ok":true,"data":"` + base64.StdEncoding.EncodeToString(noise) + `"}`)
	if len(body) <= 350<<10 || len(body) > idempotency.MaxBody {
		t.Fatalf("a %d-byte response does not test the split", len(body))
	}
	first := claim(ledger.Unverified)
	put := &idempotency.Put{Name: "tok/conclude/large", Fingerprint: "fp-large", Status: 201, Body: body, At: base}
	must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: first}}, Events: []ledger.Event{ev(ledger.EvConcluded, first.ID)}, Key: put}))
	if put.Deferred {
		t.Fatal("a large response was deferred past its commit")
	}
	rec, err := s.Lookup(ctx, put.Name, base)
	if err != nil || rec == nil || !rec.Done || rec.Status != 201 || !bytes.Equal(rec.Body, body) {
		t.Fatalf("the large response read back: %v (done %v, %d bytes of %d)", err, rec != nil && rec.Done, len(recBody(rec)), len(body))
	}
	if ex, err := s.Claim(ctx, put.Name, "fp-large", base.Add(time.Minute)); err != nil || ex == nil || !bytes.Equal(ex.Body, body) {
		t.Fatalf("a claim of the key found: %v (%d bytes of %d)", err, len(recBody(ex)), len(body))
	}
	second := claim(ledger.Unverified)
	again := &idempotency.Put{Name: put.Name, Fingerprint: "fp-large", Status: 201, Body: []byte(`{"ok":true}`), At: base.Add(time.Minute)}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: second}}, Key: again}); !errors.Is(err, idempotency.ErrTaken) {
		t.Fatalf("a second commit of the key: want ErrTaken, got %v", err)
	}
	if _, err := s.GetEntity(ctx, second.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a commit refused for its key applied its write: %v", err)
	}
}

func recBody(r *idempotency.Record) []byte {
	if r == nil {
		return nil
	}
	return r.Body
}
