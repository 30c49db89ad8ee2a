package sqlite_test

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSweepProbe compares the sweep's three reads with nothing due
// (what every command runs first) against the one-statement probe.
func BenchmarkSweepProbe(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	now := time.Now()
	requested(b, s, "x") // the write connection exists, as in a command
	b.Run("three-queries", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.ExpiringSpawns(ctx, time.Time{}, now, 100); err != nil {
				b.Fatal(err)
			}
			if _, err := s.DueApprovals(ctx, now, 100); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Unannounced(ctx, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-probe", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if due, err := s.AnythingDue(ctx, now); err != nil || due {
				b.Fatal(due, err)
			}
		}
	})
}
