package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

// RunConfirmations is the conformance suite of store.ConfirmationStore;
// newStore must return an empty store each call.
func RunConfirmations(t *testing.T, newStore func(t *testing.T) store.ConfirmationStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.ConfirmationStore)
	}{
		{"a missing confirmation is ErrNotFound", confirmationMissing},
		{"a confirmation is created once and reads back", confirmationCreateOnce},
		{"updates are conditional on the stored state", confirmationConditional},
		{"concurrent claims: exactly one commits", confirmationClaimRace},
		{"list is oldest first", confirmationList},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func held(at time.Time) confirm.Pending {
	return confirm.Pending{ID: ids.New(ids.Confirmation, at), Tool: "lock", Args: map[string]any{"id": "claim:x", "reason": "final"},
		State: confirm.StatePending, RequestedBy: "tok:a", RequestedAt: at, ExpiresAt: at.Add(time.Hour)}
}

func confirmationMissing(t *testing.T, s store.ConfirmationStore) {
	if _, err := s.GetConfirmation(context.Background(), "conf:01HX05A9K8VP0000000000000A"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func confirmationCreateOnce(t *testing.T, s store.ConfirmationStore) {
	ctx := context.Background()
	p := held(base)
	must(t, s.PutConfirmation(ctx, p))
	got, err := s.GetConfirmation(ctx, p.ID)
	must(t, err)
	if got.Tool != "lock" || got.Args["reason"] != "final" || got.State != confirm.StatePending || !got.ExpiresAt.Equal(p.ExpiresAt) {
		t.Fatalf("read back %+v", got)
	}
	again := p
	again.Tool = "ignore"
	wantCondition(t, s.PutConfirmation(ctx, again), p.ID)
	if got, _ := s.GetConfirmation(ctx, p.ID); got.Tool != "lock" {
		t.Fatal("a second create overwrote the confirmation")
	}
}

func confirmationConditional(t *testing.T, s store.ConfirmationStore) {
	ctx := context.Background()
	p := held(base)
	must(t, s.PutConfirmation(ctx, p))
	next := p
	next.State = confirm.StateExecuting
	wantCondition(t, s.UpdateConfirmation(ctx, next, confirm.StateExecuting), p.ID)
	must(t, s.UpdateConfirmation(ctx, next, confirm.StatePending))
	refused := p
	refused.State = confirm.StateRefused
	wantCondition(t, s.UpdateConfirmation(ctx, refused, confirm.StatePending), p.ID)
	got, _ := s.GetConfirmation(ctx, p.ID)
	if got.State != confirm.StateExecuting {
		t.Fatalf("state %s", got.State)
	}
	unknown := held(base)
	wantCondition(t, s.UpdateConfirmation(ctx, unknown, confirm.StatePending), unknown.ID)
}

func confirmationClaimRace(t *testing.T, s store.ConfirmationStore) {
	ctx := context.Background()
	p := held(base)
	must(t, s.PutConfirmation(ctx, p))
	const n = 16
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := p
			next.State = confirm.StateExecuting
			err := s.UpdateConfirmation(ctx, next, confirm.StatePending)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.As(err, new(*store.ConditionFailed)):
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims committed, want exactly 1", wins.Load())
	}
}

func confirmationList(t *testing.T, s store.ConfirmationStore) {
	ctx := context.Background()
	late, early := held(base.Add(time.Minute)), held(base)
	must(t, s.PutConfirmation(ctx, late))
	must(t, s.PutConfirmation(ctx, early))
	list, err := s.ListConfirmations(ctx)
	must(t, err)
	if len(list) != 2 || list[0].ID != early.ID || list[1].ID != late.ID {
		t.Fatalf("list %+v", list)
	}
}
