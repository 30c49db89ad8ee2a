// Package deliveryworker is the embedded CLI's part of webhook delivery
// (docs/hooks.md): while a call that may wait runs (escalate, approvals
// wait), and once after any call that writes, it attempts the due
// deliveries, asking first whether anything is due, so that a project
// with nothing due pays one query. What it does not finish, `dont hooks
// deliver` or `dont serve` does. cli/dont gives it the store's query and
// the service's delivery.
package deliveryworker

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
)

// Budget bounds the pass after a call.
const Budget = 2 * hooks.AttemptTimeout

// Every is how often a waiting call's worker looks for due deliveries.
const Every = 250 * time.Millisecond

// Worker attempts due deliveries around one call.
type Worker struct {
	// Due reports whether a delivery is due at now (one query).
	Due func(ctx context.Context, now time.Time) (bool, error)
	// Deliver attempts the due deliveries (best effort: what is left
	// stays due).
	Deliver func(ctx context.Context)
	// Every and Budget, when zero, are the package's.
	Every, Budget time.Duration
}

// Around starts the worker for a call that begins now; waits: the call may
// wait, so the worker delivers every Every while it runs. The function
// returned ends the call: it stops the worker and, unless ctx has ended,
// makes one last pass bounded by Budget, returning once it is done.
func (w Worker) Around(ctx context.Context, waits bool) func() {
	every, budget := w.Every, w.Budget
	if every == 0 {
		every = Every
	}
	if budget == 0 {
		budget = Budget
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if !waits {
			<-done
			return
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				w.pass(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		if ctx.Err() != nil {
			return
		}
		bounded, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		w.pass(bounded)
	}
}

// pass delivers what is due, if anything is.
func (w Worker) pass(ctx context.Context) {
	if due, err := w.Due(ctx, time.Now()); err != nil || !due {
		return
	}
	w.Deliver(ctx)
}
