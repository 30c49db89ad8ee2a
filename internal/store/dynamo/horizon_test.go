package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The horizon's mark (scheduled_until) only moves forward, whatever order
// concurrent sweeps of a project store theirs in, and stays in its project.
func TestScheduledUntilOnlyMovesForward(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	if su, err := st.ScheduledUntil(ctx); err != nil || !su.IsZero() {
		t.Fatalf("a new project's mark: %v %v, want none", su, err)
	}
	base := time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC)
	if moved, err := st.AdvanceScheduledUntil(ctx, base); err != nil || !moved {
		t.Fatalf("first advance: %v %v", moved, err)
	}
	if moved, err := st.AdvanceScheduledUntil(ctx, base.Add(-time.Second)); err != nil || moved {
		t.Fatalf("moving back: moved %v, %v; want refused without an error", moved, err)
	}
	// Concurrent sweeps store their marks in any order: the latest stays.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.AdvanceScheduledUntil(ctx, base.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if su, err := st.ScheduledUntil(ctx); err != nil || !su.Equal(base.Add(7*time.Minute)) {
		t.Fatalf("after concurrent advances: %v %v, want %v", su, err, base.Add(7*time.Minute))
	}
	other := dynamo.New(newClient(nil, nil), table, "test-"+randomName())
	if su, err := other.ScheduledUntil(ctx); err != nil || !su.IsZero() {
		t.Fatalf("another project's mark: %v %v, want none", su, err)
	}
}
