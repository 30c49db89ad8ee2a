package dynamo_test

import (
	"errors"
	"github.com/dont-cli/dont/internal/store"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/store/dynamo"
)

// A function's rebuilt store reads the project's settings and then its
// secret (or the other way round, for a callback token): one Query of
// the meta partition, one read unit, answers both (docs/aws-cost.md).
func TestARebuiltStoreReadsItsSettingsAndSecretInOneRequest(t *testing.T) {
	s := newStore(t)
	if err := s.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: 90 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateProjectSecret(ctx); err != nil {
		t.Fatal(err)
	}
	for _, settingsFirst := range []bool{true, false} {
		counter := newCounter()
		rebuilt := dynamo.New(newClient(nil, counter), table, s.Project())
		var ps store.ProjectSettings
		var err error
		if settingsFirst {
			ps, err = rebuilt.Settings(ctx)
			if err == nil {
				_, _, err = rebuilt.CurrentSecret(ctx)
			}
		} else {
			_, err = rebuilt.SecretVersion(ctx, store.FirstSecretVersion)
			if err == nil {
				ps, err = rebuilt.Settings(ctx)
			}
		}
		if err != nil || ps.SpawnTimeout != 90*time.Minute {
			t.Fatalf("settings first %v: %+v, %v", settingsFirst, ps, err)
		}
		if u := counter.Total(); u.Requests != 1 || u.ReadUnits != 1 {
			t.Fatalf("settings first %v: %v requests, %v read units; want one of each", settingsFirst, u.Requests, u.ReadUnits)
		}
	}
}

// The secret item the settings' read kept answers one check at most: a
// version an operator retires is refused by every check after it, as
// when each check read the item itself.
func TestASecretItemKeptByTheSettingsReadAnswersOneCheckAtMost(t *testing.T) {
	operator := newStore(t)
	if _, err := operator.CreateProjectSecret(ctx); err != nil {
		t.Fatal(err)
	}
	current, err := operator.RotateSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := dynamo.New(newClient(nil, nil), table, operator.Project())
	if _, err := rebuilt.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	if err := operator.RetireSecretVersions(ctx, current, []string{store.FirstSecretVersion}); err != nil {
		t.Fatal(err)
	}
	// The kept item is the one read before the retirement: at most this
	// check may still see version 1, as it would have a moment earlier.
	rebuilt.SecretVersion(ctx, store.FirstSecretVersion)
	if _, err := rebuilt.SecretVersion(ctx, store.FirstSecretVersion); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a retired version checked again: want ErrNotFound, got %v", err)
	}
}

// This store's own write of the settings or the secret drops what it
// kept: its next read sees the write.
func TestAStoreReadsItsOwnSettingsAndSecretWritesBack(t *testing.T) {
	s := newStore(t)
	if _, err := s.Settings(ctx); err != nil { // keeps "no secret"
		t.Fatal(err)
	}
	if _, err := s.CreateProjectSecret(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CurrentSecret(ctx); err != nil {
		t.Fatalf("the secret this store just made: %v", err)
	}
	fresh := dynamo.New(newClient(nil, nil), table, s.Project())
	if _, err := fresh.SecretVersion(ctx, store.FirstSecretVersion); err != nil { // keeps the settings
		t.Fatal(err)
	}
	if err := fresh.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if ps, err := fresh.Settings(ctx); err != nil || ps.SpawnTimeout != time.Hour {
		t.Fatalf("settings after this store wrote them: %+v, %v", ps, err)
	}
}
