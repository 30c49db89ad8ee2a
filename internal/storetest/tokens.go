package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/store"
)

// TokenFixture returns an empty token store of one project, and another
// project's store on the same backend (nil where a store is one project,
// as an embedded SQLite file is).
type TokenFixture func(t *testing.T) (mine, other store.TokenStore)

// RunTokens runs the conformance suite of store.TokenStore.
func RunTokens(t *testing.T, open TokenFixture) {
	tests := []struct {
		name string
		fn   func(t *testing.T, mine, other store.TokenStore)
	}{
		{"a missing token is ErrNotFound to read and to revoke", missingToken},
		{"a token reads back as it was put, hash included", tokenRoundTrip},
		{"a token id is put once", tokenPutOnce},
		{"tokens are listed in id order, revoked ones too", tokensListed},
		{"a revocation keeps its first time", revokeKeepsFirstTime},
		{"another project's tokens are not this project's", tokensOfAnotherProject},
		{"the project secret is made once, whoever races to make it", secretMadeOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mine, other := open(t)
			tc.fn(t, mine, other)
		})
	}
}

func newToken(id, role string) auth.Token {
	return auth.Token{ID: id, Role: role, Name: id + "-name", Hash: "hash-of-" + id, CreatedAt: base}
}

func missingToken(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	if _, err := s.GetToken(ctx, "tok_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetToken of a missing id: want ErrNotFound, got %v", err)
	}
	if err := s.RevokeToken(ctx, "tok_missing", base); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RevokeToken of a missing id: want ErrNotFound, got %v", err)
	}
	if list, err := s.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("ListTokens of an empty store = %v, %v; want none", list, err)
	}
}

func tokenRoundTrip(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	want := newToken("tok_roundtrip", auth.RoleApprover)
	must(t, s.PutToken(ctx, want))
	got, err := s.GetToken(ctx, want.ID)
	must(t, err)
	if got.ID != want.ID || got.Role != want.Role || got.Name != want.Name || got.Hash != want.Hash ||
		!got.CreatedAt.Equal(want.CreatedAt) || got.RevokedAt != nil {
		t.Fatalf("GetToken = %+v, want %+v", got, want)
	}
}

func tokenPutOnce(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	first := newToken("tok_once", auth.RoleHarness)
	must(t, s.PutToken(ctx, first))
	second := newToken("tok_once", auth.RoleAdmin)
	second.Hash = "another-hash"
	if err := s.PutToken(ctx, second); !store.FailedOn(err, first.ID) {
		t.Fatalf("a second PutToken of one id: want ConditionFailed on %s, got %v", first.ID, err)
	}
	got, err := s.GetToken(ctx, first.ID)
	must(t, err)
	if got.Role != first.Role || got.Hash != first.Hash {
		t.Fatalf("the refused put changed the token: %+v", got)
	}
}

func tokensListed(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	for _, id := range []string{"tok_c", "tok_a", "tok_b"} {
		must(t, s.PutToken(ctx, newToken(id, auth.RoleHarness)))
	}
	must(t, s.RevokeToken(ctx, "tok_b", base.Add(time.Minute)))
	list, err := s.ListTokens(ctx)
	must(t, err)
	var ids []string
	for _, tok := range list {
		ids = append(ids, tok.ID)
		if tok.Hash != "hash-of-"+tok.ID {
			t.Errorf("listed %s without its hash: %q", tok.ID, tok.Hash)
		}
		if (tok.ID == "tok_b") != (tok.RevokedAt != nil) {
			t.Errorf("listed %s with revoked_at %v", tok.ID, tok.RevokedAt)
		}
	}
	if len(ids) != 3 || ids[0] != "tok_a" || ids[1] != "tok_b" || ids[2] != "tok_c" {
		t.Fatalf("ListTokens ids = %v, want [tok_a tok_b tok_c]", ids)
	}
}

func revokeKeepsFirstTime(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	must(t, s.PutToken(ctx, newToken("tok_revoked", auth.RoleHarness)))
	first := base.Add(time.Hour)
	must(t, s.RevokeToken(ctx, "tok_revoked", first))
	must(t, s.RevokeToken(ctx, "tok_revoked", first.Add(time.Hour)))
	got, err := s.GetToken(ctx, "tok_revoked")
	must(t, err)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Fatalf("revoked_at = %v, want the first revocation %v", got.RevokedAt, first)
	}
	if got.Hash != "hash-of-tok_revoked" {
		t.Fatalf("a revocation lost the hash: %q", got.Hash)
	}
}

func tokensOfAnotherProject(t *testing.T, s, other store.TokenStore) {
	if other == nil {
		return // a store of one project has no other project to leak into
	}
	ctx := context.Background()
	must(t, other.PutToken(ctx, newToken("tok_theirs", auth.RoleAdmin)))
	if _, err := s.GetToken(ctx, "tok_theirs"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetToken of another project's token: want ErrNotFound, got %v", err)
	}
	if err := s.RevokeToken(ctx, "tok_theirs", base); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RevokeToken of another project's token: want ErrNotFound, got %v", err)
	}
	if list, err := s.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("ListTokens shows another project's tokens: %v, %v", list, err)
	}
	// A token id is global: this project cannot take the other's id.
	if err := s.PutToken(ctx, newToken("tok_theirs", auth.RoleAdmin)); !store.FailedOn(err, "tok_theirs") {
		t.Fatalf("PutToken of an id another project holds: want ConditionFailed, got %v", err)
	}
	got, err := other.GetToken(ctx, "tok_theirs")
	must(t, err)
	if got.RevokedAt != nil {
		t.Fatalf("another project revoked this project's token: %+v", got)
	}
}

func secretMadeOnce(t *testing.T, s, _ store.TokenStore) {
	ctx := context.Background()
	const racers = 8
	secrets := make([][]byte, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			secrets[i], errs[i] = s.CreateProjectSecret(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i := range racers {
		must(t, errs[i])
		if len(secrets[i]) < 32 {
			t.Fatalf("a project secret of %d bytes; want at least 256 bits", len(secrets[i]))
		}
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Fatalf("racing creators got different secrets")
		}
	}
	again, err := s.ProjectSecret(ctx)
	must(t, err)
	if !bytes.Equal(again, secrets[0]) {
		t.Fatalf("ProjectSecret after create differs from what create returned")
	}
}

// RunSettings runs the conformance suite of store.SettingsStore.
func RunSettings(t *testing.T, newStore func(t *testing.T) store.SettingsStore) {
	t.Run("a project that set none reads the zero value", func(t *testing.T) {
		got, err := newStore(t).Settings(context.Background())
		must(t, err)
		if got != (store.ProjectSettings{}) {
			t.Fatalf("Settings of a new project = %+v, want the zero value", got)
		}
	})
	t.Run("put replaces the whole settings", func(t *testing.T) {
		ctx := context.Background()
		s := newStore(t)
		must(t, s.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: 90 * time.Second, SpawnMaxLease: time.Hour}))
		got, err := s.Settings(ctx)
		must(t, err)
		if got.SpawnTimeout != 90*time.Second || got.SpawnMaxLease != time.Hour {
			t.Fatalf("Settings = %+v after put", got)
		}
		must(t, s.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: 5 * time.Minute}))
		got, err = s.Settings(ctx)
		must(t, err)
		if got != (store.ProjectSettings{SpawnTimeout: 5 * time.Minute}) {
			t.Fatalf("Settings = %+v after a put without spawn_max_lease; want it gone", got)
		}
	})
}
