// Package scheduler holds the in-process adapter of the service's
// TimeoutScheduler port: a heap of timers that expires each spawn when it
// comes due. `dont serve` uses it; AWS uses the SQS adapter in
// scheduler/sqs instead. Neither is the only line of defence: `dont
// serve` keeps a ticker sweep behind its timers (Backstop) and AWS its
// scheduled sweep, because a timer dies with its process and a spawn
// issued by another process (the CLI on the same SQLite file) never
// reaches this one.
package scheduler

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/service"
)

// Expirer resolves one spawn by timeout if it is due and reports the time
// left otherwise. *service.Service implements it.
type Expirer interface {
	ExpireSpawn(ctx context.Context, requestID string) (service.TimeoutResult, time.Duration, error)
}

// DefaultCapacity bounds the number of timers held. Beyond it new spawns
// are left to the backstop sweep rather than growing the heap without limit.
const DefaultCapacity = 100_000

// Retry policy for an ExpireSpawn that failed (a busy store, say).
const (
	retryDelay  = time.Second
	maxAttempts = 5
)

// Timers is a min-heap of spawn expiries served by one goroutine (Run).
// It is safe for concurrent use; ScheduleTimeout never blocks on the store.
type Timers struct {
	// Now is the clock (default time.Now). Waiting uses real timers.
	Now func() time.Time
	// Capacity bounds the heap (default DefaultCapacity).
	Capacity int
	// Log receives retries and drops (default: discard).
	Log *slog.Logger

	mu   sync.Mutex
	h    timerHeap
	wake chan struct{}
}

// ScheduleTimeout implements service.TimeoutScheduler. A spawn already
// held is not added twice; a full heap refuses quietly (the backstop sweep
// still finds the spawn).
func (t *Timers) ScheduleTimeout(_ context.Context, requestID string, expiresAt time.Time) error {
	t.push(timer{requestID: requestID, due: expiresAt})
	return nil
}

// CancelTimeout implements service.TimeoutCanceller: the service calls it
// once the spawn is resolved, and its timer goes. Without it every
// resolved spawn's timer stayed until its expiry, then read the store to
// find the spawn resolved: under load the heap held every spawn of the
// last timeout's length, and once it reached Capacity new spawns got no
// timer at all (TestTimersForgetAResolvedSpawn).
func (t *Timers) CancelTimeout(requestID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, held := t.h.at[requestID]; held {
		heap.Remove(&t.h, i)
	}
}

// ready makes the heap's index and the wake channel on first use.
// t.mu is held.
func (t *Timers) ready() {
	if t.h.at == nil {
		t.h.at = map[string]int{}
		t.wake = make(chan struct{}, 1)
	}
}

func (t *Timers) push(tm timer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ready()
	if _, held := t.h.at[tm.requestID]; held {
		return
	}
	capacity := t.Capacity
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if t.h.Len() >= capacity {
		t.log().Warn("timeout timers full; the sweep will expire this spawn", "request_id", tm.requestID, "capacity", capacity)
		return
	}
	heap.Push(&t.h, tm)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Len is the number of timers held.
func (t *Timers) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h.Len()
}

// Run expires spawns as they come due until ctx is done. It calls exp
// from this goroutine only, one spawn at a time, in expiry order. A spawn
// that is not yet due after all (the store's clock) is re-armed for the
// remainder; a failed call is retried a few times, then left to the sweep.
func (t *Timers) Run(ctx context.Context, exp Expirer) {
	t.mu.Lock()
	t.ready()
	wake := t.wake
	t.mu.Unlock()
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for {
		due, next, ok := t.popDue()
		for _, tm := range due {
			if ctx.Err() != nil {
				return
			}
			t.expire(ctx, exp, tm)
		}
		if len(due) > 0 {
			continue // expiring took time; look again before sleeping
		}
		d := time.Hour
		if ok {
			d = next.Sub(t.now())
		}
		wait.Reset(d) // since Go 1.23 a reset timer never delivers a stale tick
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-wait.C:
		}
	}
}

func (t *Timers) expire(ctx context.Context, exp Expirer, tm timer) {
	res, left, err := exp.ExpireSpawn(ctx, tm.requestID)
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case err != nil:
		tm.attempts++
		if tm.attempts >= maxAttempts {
			t.log().Warn("timeout timer gave up; the sweep will expire this spawn", "request_id", tm.requestID, "err", err)
			return
		}
		t.log().Info("timeout timer retry", "request_id", tm.requestID, "attempt", tm.attempts, "err", err)
		tm.due = t.now().Add(retryDelay)
		t.push(tm)
	case left > 0:
		tm.due = t.now().Add(left)
		t.push(tm)
	default:
		t.log().Info("spawn timeout", "request_id", tm.requestID, "outcome", res.Outcome, "restored", res.Restored)
	}
}

// popDue removes and returns every timer due now; otherwise it reports
// the earliest due time, if any.
func (t *Timers) popDue() (due []timer, next time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for t.h.Len() > 0 && !t.h.items[0].due.After(now) {
		due = append(due, heap.Pop(&t.h).(timer))
	}
	if t.h.Len() > 0 {
		return due, t.h.items[0].due, true
	}
	return due, time.Time{}, false
}

func (t *Timers) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Timers) log() *slog.Logger {
	if t.Log != nil {
		return t.Log
	}
	return slog.New(slog.DiscardHandler)
}

type timer struct {
	requestID string
	due       time.Time
	attempts  int
}

// timerHeap is a min-heap of timers by due time that knows where each
// spawn's timer is, so that CancelTimeout can take it out.
type timerHeap struct {
	items []timer
	at    map[string]int // request id -> index in items
}

func (h *timerHeap) Len() int           { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool { return h.items[i].due.Before(h.items[j].due) }
func (h *timerHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.at[h.items[i].requestID] = i
	h.at[h.items[j].requestID] = j
}
func (h *timerHeap) Push(x any) {
	tm := x.(timer)
	h.at[tm.requestID] = len(h.items)
	h.items = append(h.items, tm)
}
func (h *timerHeap) Pop() any {
	n := len(h.items)
	tm := h.items[n-1]
	h.items[n-1] = timer{}
	h.items = h.items[:n-1]
	delete(h.at, tm.requestID)
	return tm
}
