package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/storetest"
)

// Before, SQLite kept every Idempotency-Key record, and so every response
// (tokens included), forever: a key of last year still replayed.
func TestIdempotencyRecordsExpireAfter24Hours(t *testing.T) {
	storetest.RunIdempotency(t, func(t *testing.T) idempotency.Store { return newStore(t) })

	t.Run("expired records are deleted by later writes, a bounded batch each", func(t *testing.T) {
		ctx := context.Background()
		s := createdStore(t)
		// A database made before the expiry index gets it on its first write.
		if _, err := s.DB().Exec("DROP INDEX IF EXISTS idempotency_created"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		const old = 150
		for i := range old {
			if err := s.Remember(ctx, fmt.Sprintf("old-%d", i), "fp", 200, []byte(`{"secret":"kept forever"}`), t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		rows := func() (n int) {
			t.Helper()
			if err := s.DB().QueryRow("SELECT count(*) FROM idempotency").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := rows(); n != old {
			t.Fatalf("%d records within the window, want %d", n, old)
		}
		later := t0.Add(idempotency.Window + time.Hour)
		if ex, err := s.Claim(ctx, "new-1", "fp", later); err != nil || ex != nil {
			t.Fatalf("claim: %+v %v", ex, err)
		}
		if n := rows(); n != old-100+1 {
			t.Fatalf("after one write %d records, want %d (a batch of 100 expired deleted)", n, old-100+1)
		}
		if err := s.Remember(ctx, "new-2", "fp", 200, []byte(`{}`), later); err != nil {
			t.Fatal(err)
		}
		var expired int
		if err := s.DB().QueryRow("SELECT count(*) FROM idempotency WHERE key LIKE 'old-%'").Scan(&expired); err != nil || expired != 0 {
			t.Fatalf("%d expired records left after two writes (%v)", expired, err)
		}
		if n := rows(); n != 2 {
			t.Fatalf("%d records, want the 2 of the window", n)
		}
		var indexes int
		if err := s.DB().QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'idempotency_created'").Scan(&indexes); err != nil || indexes != 1 {
			t.Fatalf("the expiry index was not made again: %d %v", indexes, err)
		}
	})
}

// Concurrent Remembers share transactions; each must still be stored
// when it returns, and of one key's racing responses exactly one stays.
func TestConcurrentRemembersAreEachStoredWhenTheyReturnAndTheFirstStays(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const n = 32
	errc := make(chan error, 2*n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			key := fmt.Sprintf("k-%d", i)
			if err := s.Remember(ctx, key, "fp", 200, []byte(key), now); err != nil {
				errc <- err
				return
			}
			rec, err := s.Lookup(ctx, key, now)
			if err == nil && (rec == nil || !rec.Done || string(rec.Body) != key) {
				err = fmt.Errorf("%s returned but reads back as %+v", key, rec)
			}
			errc <- err
		}()
		go func() {
			<-start
			errc <- s.Remember(ctx, "shared", fmt.Sprintf("fp-%d", i), 200, []byte(fmt.Sprintf("body-%d", i)), now)
		}()
	}
	close(start)
	for range 2 * n {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Lookup(ctx, "shared", now)
	if err != nil || rec == nil {
		t.Fatalf("shared: %+v %v", rec, err)
	}
	if want := "body-" + rec.Fingerprint[len("fp-"):]; string(rec.Body) != want {
		t.Fatalf("the stored body %q is not the one of fingerprint %q", rec.Body, rec.Fingerprint)
	}
	for i := range 3 {
		if err := s.Remember(ctx, "shared", "later", 201, []byte("later"), now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := s.Lookup(ctx, "shared", now); string(again.Body) != string(rec.Body) {
		t.Fatalf("a later Remember replaced the first response: %q", again.Body)
	}
}
