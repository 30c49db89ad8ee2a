package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestHookConformance(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T) storetest.HookStores {
		s, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}
	})
}

// A transaction that wrote its event and its outbox row and then rolled
// back (here: the commit hook fails after every write) delivers nothing.
func TestNothingIsQueuedForARolledBackTransaction(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now().UTC()
	if err := s.PutHook(ctx, hooks.Hook{ID: ids.New(ids.Hook, at), URL: "https://hooks.example.com/", Events: []hooks.EventType{hooks.SpawnRequested}, Format: hooks.FormatJSON, CreatedAt: at, Secret: "whsec_AAAA"}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("rolled back")
	s.Hooks.BeforeCommit = func(ctx context.Context) error {
		if due, err := s.HasDue(ctx, at.Add(time.Hour)); err != nil || due {
			// Another connection must not see the uncommitted outbox row.
			return errors.New("the outbox row is visible before the commit")
		}
		return boom
	}
	e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: "s", Status: ledger.Unverified, CreatedAt: at, UpdatedAt: at, Version: 1}
	ev := ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: ids.New(ids.Spawn, at), At: at}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}); !errors.Is(err, boom) {
		t.Fatalf("commit: %v", err)
	}
	s.Hooks.BeforeCommit = nil
	if due, err := s.ClaimDue(ctx, at.Add(time.Hour), time.Minute, 10); err != nil || len(due) != 0 {
		t.Fatalf("after a rollback: %v %+v", err, due)
	}
	if _, err := s.GetEntity(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the entity survived the rollback: %v", err)
	}
}
