package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
)

// RunIdempotency is the suite every idempotency.Store must pass: a record
// lives idempotency.Window and is absent after it, on every path.
func RunIdempotency(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s idempotency.Store)
	}{
		{"a claimed and completed key is absent after the window", claimedExpires},
		{"a remembered key is absent after the window and may be remembered again", rememberedExpires},
		{"a claim that never completed reads as of when it was claimed, and is unknown once stale", claimNeverCompleted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func claimedExpires(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	if ex, err := s.Claim(ctx, "k", "fp1", base); err != nil || ex != nil {
		t.Fatalf("first claim: %+v %v", ex, err)
	}
	must(t, s.Complete(ctx, "k", 201, []byte(`{"first":true}`)))
	just := base.Add(idempotency.Window - time.Second)
	if ex, err := s.Claim(ctx, "k", "fp1", just); err != nil || ex == nil || !ex.Done || string(ex.Body) != `{"first":true}` {
		t.Fatalf("claim within the window: %+v %v", ex, err)
	}
	if ex, err := s.Lookup(ctx, "k", just); err != nil || ex == nil || ex.Status != 201 {
		t.Fatalf("lookup within the window: %+v %v", ex, err)
	}
	past := base.Add(idempotency.Window + time.Second)
	if ex, err := s.Lookup(ctx, "k", past); err != nil || ex != nil {
		t.Fatalf("lookup after the window: %+v %v", ex, err)
	}
	if ex, err := s.Claim(ctx, "k", "fp2", past); err != nil || ex != nil {
		t.Fatalf("claim after the window: %+v %v", ex, err)
	}
	must(t, s.Complete(ctx, "k", 200, []byte(`{"second":true}`)))
	if ex, err := s.Claim(ctx, "k", "fp2", past.Add(time.Second)); err != nil || ex == nil || ex.Fingerprint != "fp2" || string(ex.Body) != `{"second":true}` {
		t.Fatalf("the key claimed again after the window: %+v %v", ex, err)
	}
}

func rememberedExpires(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	must(t, s.Remember(ctx, "r", "fp1", 200, []byte(`{"first":true}`), base))
	must(t, s.Remember(ctx, "r", "fp1", 200, []byte(`{"later":true}`), base.Add(time.Hour)))
	if ex, err := s.Lookup(ctx, "r", base.Add(time.Hour)); err != nil || ex == nil || string(ex.Body) != `{"first":true}` {
		t.Fatalf("within the window the first response stays: %+v %v", ex, err)
	}
	past := base.Add(idempotency.Window + time.Second)
	if ex, err := s.Lookup(ctx, "r", past); err != nil || ex != nil {
		t.Fatalf("lookup after the window: %+v %v", ex, err)
	}
	must(t, s.Remember(ctx, "r", "fp2", 200, []byte(`{"again":true}`), past))
	if ex, err := s.Lookup(ctx, "r", past); err != nil || ex == nil || ex.Fingerprint != "fp2" || string(ex.Body) != `{"again":true}` {
		t.Fatalf("remembered again after the window: %+v %v", ex, err)
	}
}

// claimNeverCompleted is a server that died between a call's write and
// its key's completion: the claim, read, says when it was made, so a
// transport can refuse it once stale instead of running the call again
// (idempotency.Record.OutcomeUnknown).
func claimNeverCompleted(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	if ex, err := s.Claim(ctx, "c", "fp1", base); err != nil || ex != nil {
		t.Fatalf("first claim: %+v %v", ex, err)
	}
	fresh := base.Add(idempotency.StaleClaim - time.Second)
	ex, err := s.Lookup(ctx, "c", fresh)
	if err != nil || ex == nil || ex.Done || !ex.At.Equal(base) || ex.OutcomeUnknown(fresh) {
		t.Fatalf("a fresh claim: %+v %v", ex, err)
	}
	if ex, err := s.Claim(ctx, "c", "fp1", fresh); err != nil || ex == nil || ex.Done || !ex.At.Equal(base) {
		t.Fatalf("a claim of a fresh claim: %+v %v", ex, err)
	}
	stale := base.Add(idempotency.StaleClaim)
	if ex, err := s.Lookup(ctx, "c", stale); err != nil || !ex.OutcomeUnknown(stale) {
		t.Fatalf("a stale claim: %+v %v", ex, err)
	}
}
