package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

var ctx = context.Background()

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func newToken(role string) auth.Token {
	return auth.Token{ID: ids.New(ids.Token, t0), Role: role, Name: role + "-token", Hash: auth.Hash("secret-" + role), CreatedAt: t0}
}

func TestTokensAreStoredHashedListedAndRevoked(t *testing.T) {
	s := newStore(t)
	a, b := newToken(auth.RoleAdmin), newToken(auth.RoleHarness)
	for _, tok := range []auth.Token{a, b} {
		if err := s.PutToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutToken(ctx, a); !store.FailedOn(err, a.ID) {
		t.Fatalf("a second PutToken of %s: want ConditionFailed, got %v", a.ID, err)
	}
	got, err := s.GetToken(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != a.Hash || got.Role != a.Role || got.Project != s.Project() || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("read back %+v", got)
	}
	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID || list[1].Hash != b.Hash {
		t.Fatalf("list = %+v", list)
	}
	at := t0.Add(time.Minute)
	if err := s.RevokeToken(ctx, b.ID, at); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeToken(ctx, b.ID, at.Add(time.Hour)); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	got, _ = s.GetToken(ctx, b.ID)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(at) {
		t.Fatalf("revoked_at = %v, want %v (the first revocation)", got.RevokedAt, at)
	}
	list, _ = s.ListTokens(ctx)
	if list[1].RevokedAt == nil {
		t.Fatal("the project's token list still shows the token unrevoked")
	}
	if err := s.RevokeToken(ctx, ids.New(ids.Token, t0), at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking an unknown token: want ErrNotFound, got %v", err)
	}
	if _, err := s.GetToken(ctx, ids.New(ids.Token, t0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown token: want ErrNotFound, got %v", err)
	}
}

func TestProjectSecretIsMadeOncePerProject(t *testing.T) {
	s := newStore(t)
	counter := newCounter()
	client := newClient(nil, counter)
	// Reading a project's secret never makes one.
	if _, err := dynamo.New(client, table, s.Project()).ProjectSecret(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the secret of a project that has none: want ErrNotFound, got %v", err)
	}
	if u := counter.Usage(); u["PutItem"].Requests != 0 || u["GetItem"].Requests+u["Query"].Requests != 1 {
		t.Fatalf("reading a missing secret sent %v, want one read (the meta partition's Query)", u)
	}
	// Several processes of one project race to make the secret.
	secrets := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sec, err := dynamo.New(client, table, s.Project()).CreateProjectSecret(ctx)
			if err != nil {
				t.Error(err)
			}
			secrets[i] = sec
		}()
	}
	wg.Wait()
	for _, sec := range secrets {
		if len(sec) != 32 || !bytes.Equal(sec, secrets[0]) {
			t.Fatalf("secrets differ or are short: %x vs %x", sec, secrets[0])
		}
	}
	if sec, err := dynamo.New(client, table, s.Project()).ProjectSecret(ctx); err != nil || !bytes.Equal(sec, secrets[0]) {
		t.Fatalf("read back %x %v, want %x", sec, err, secrets[0])
	}
	other, err := newStore(t).CreateProjectSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, secrets[0]) {
		t.Fatal("two projects share a callback secret")
	}
}

func TestIdempotencyKeysReplayTheFirstResponse(t *testing.T) {
	s := newStore(t)
	now := t0
	if ex, err := s.Claim(ctx, "k1", "fp1", now); err != nil || ex != nil {
		t.Fatalf("first claim: %v %v", ex, err)
	}
	ex, err := s.Claim(ctx, "k1", "fp1", now.Add(time.Second))
	if err != nil || ex == nil || ex.Done || ex.Fingerprint != "fp1" {
		t.Fatalf("claim while running: %+v %v", ex, err)
	}
	body := []byte(`{"ok":true,"data":"` + strings.Repeat("compressible ", 200) + `"}`)
	if err := s.Complete(ctx, "k1", 201, body); err != nil {
		t.Fatal(err)
	}
	ex, err = s.Claim(ctx, "k1", "fp2", now.Add(time.Hour))
	if err != nil || ex == nil || !ex.Done || ex.Status != 201 || !bytes.Equal(ex.Body, body) || ex.Fingerprint != "fp1" {
		t.Fatalf("replay: %+v %v", ex, err)
	}
	// Small bodies are kept as they are.
	s.Claim(ctx, "k2", "fp", now)
	s.Complete(ctx, "k2", 200, []byte(`{}`))
	if ex, _ := s.Claim(ctx, "k2", "fp", now); ex == nil || string(ex.Body) != `{}` {
		t.Fatalf("small body replay: %+v", ex)
	}
	// Past the window the key is new again, even before TTL deletes it.
	if ex, err := s.Claim(ctx, "k1", "fp3", now.Add(dynamo.IdempotencyWindow+time.Minute)); err != nil || ex != nil {
		t.Fatalf("claim after the window: %+v %v", ex, err)
	}
}

// A Slack request's replay record completes with no body: DynamoDB takes
// no empty binary, so a nil body must still record the key done.
func TestAKeyCompletedWithoutABodyIsDone(t *testing.T) {
	s := newStore(t)
	if ex, err := s.Claim(ctx, "k", "fp", t0); err != nil || ex != nil {
		t.Fatalf("first claim: %v %v", ex, err)
	}
	if err := s.Complete(ctx, "k", 200, nil); err != nil {
		t.Fatal(err)
	}
	if ex, err := s.Claim(ctx, "k", "fp", t0.Add(time.Hour)); err != nil || ex == nil || !ex.Done || ex.Status != 200 || len(ex.Body) != 0 {
		t.Fatalf("replay: %+v %v", ex, err)
	}
}

func TestAbandonedAndReleasedKeysCanBeClaimedAgain(t *testing.T) {
	s := newStore(t)
	now := t0
	s.Claim(ctx, "k", "fp", now)
	if ex, _ := s.Claim(ctx, "k", "fp", now.Add(30*time.Second)); ex == nil {
		t.Fatal("a fresh claim was taken over")
	}
	if ex, err := s.Claim(ctx, "k", "fp", now.Add(2*time.Minute)); err != nil || ex != nil {
		t.Fatalf("a claim abandoned for 2 minutes was not taken over: %+v %v", ex, err)
	}
	if err := s.Release(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if ex, err := s.Claim(ctx, "k", "fp", now.Add(2*time.Minute)); err != nil || ex != nil {
		t.Fatalf("claim after release: %+v %v", ex, err)
	}
	s.Complete(ctx, "k", 200, []byte(`{"first":true}`))
	if err := s.Release(ctx, "k"); err != nil {
		t.Fatalf("release of a completed key: %v", err)
	}
	if err := s.Complete(ctx, "k", 500, []byte(`{"second":true}`)); err != nil {
		t.Fatal(err)
	}
	if ex, _ := s.Claim(ctx, "k", "fp", now.Add(3*time.Minute)); ex == nil || string(ex.Body) != `{"first":true}` {
		t.Fatalf("a completed record was released or overwritten: %+v", ex)
	}
}
