package deliveryworker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// counts are a worker's queries and deliveries; worker makes one whose
// query says due.
type counts struct{ queries, deliveries atomic.Int32 }

func (c *counts) worker(due bool, delivered chan<- struct{}) Worker {
	return Worker{
		Due: func(context.Context, time.Time) (bool, error) { c.queries.Add(1); return due, nil },
		Deliver: func(context.Context) {
			c.deliveries.Add(1)
			if delivered != nil {
				delivered <- struct{}{}
			}
		},
		Every: time.Millisecond,
	}
}

// A call that does not wait gets one pass, after it ends: one query, and
// a delivery only when something is due.
func TestACallThatDoesNotWaitDeliversOnceWhenItEnds(t *testing.T) {
	for _, due := range []bool{true, false} {
		var c counts
		end := c.worker(due, nil).Around(context.Background(), false)
		if c.queries.Load() != 0 {
			t.Fatal("the worker queried before the call ended")
		}
		end()
		want := int32(0)
		if due {
			want = 1
		}
		if c.queries.Load() != 1 || c.deliveries.Load() != want {
			t.Fatalf("due %v: %d queries, %d deliveries after the call", due, c.queries.Load(), c.deliveries.Load())
		}
	}
}

// A call that may wait delivers while it waits, not only at its end.
func TestAWaitingCallDeliversWhileItWaits(t *testing.T) {
	var c counts
	delivered := make(chan struct{}, 8)
	end := c.worker(true, delivered).Around(context.Background(), true)
	<-delivered
	<-delivered // two passes while the call still runs
	go func() {
		for range delivered { // the passes until end stops the ticker
		}
	}()
	end()
	close(delivered)
	if c.deliveries.Load() < 3 {
		t.Fatalf("%d deliveries: two while waiting and one after", c.deliveries.Load())
	}
}

// An interrupted call (its context ended) makes no last pass: what is due
// stays due for the next command, `dont hooks deliver` or `dont serve`.
func TestAnInterruptedCallMakesNoLastPass(t *testing.T) {
	var c counts
	ctx, cancel := context.WithCancel(context.Background())
	end := c.worker(true, nil).Around(ctx, false)
	cancel()
	end()
	if c.queries.Load() != 0 || c.deliveries.Load() != 0 {
		t.Fatalf("%d queries, %d deliveries after an interrupt", c.queries.Load(), c.deliveries.Load())
	}
}
