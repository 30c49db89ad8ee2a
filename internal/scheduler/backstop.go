package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/dont-cli/dont/internal/service"
)

// Sweeper runs one bounded sweep of what is due. *service.Service
// implements it.
type Sweeper interface {
	Sweep(ctx context.Context, limit int) (service.SweepReport, error)
}

// Defaults of the backstop: how often it sweeps, and how much each sweep
// may time out.
const (
	DefaultBackstopEvery = time.Second
	DefaultBackstopLimit = 1000
)

// Backstop sweeps on a ticker, behind the timers: it expires what no
// timer of this process holds — spawns another process issued on the
// same store, timers lost in a restart, spawns a full heap refused. It is
// `dont serve`'s counterpart of the scheduled sweep in AWS.
type Backstop struct {
	// Every is the interval between sweeps (default DefaultBackstopEvery).
	Every time.Duration
	// Limit bounds each sweep (default DefaultBackstopLimit).
	Limit int
	// Log receives failed sweeps and what each sweep timed out (default:
	// discard).
	Log *slog.Logger
}

// Run sweeps every b.Every until ctx is done. A failed sweep is logged
// and the next tick tries again.
func (b Backstop) Run(ctx context.Context, s Sweeper) {
	limit := b.Limit
	if limit <= 0 {
		limit = DefaultBackstopLimit
	}
	log := b.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	every := b.Every
	if every <= 0 {
		every = DefaultBackstopEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if rep, err := s.Sweep(ctx, limit); err != nil && ctx.Err() == nil {
				log.Warn("sweep", "err", err)
			} else if len(rep.TimedOut) > 0 {
				log.Info("sweep", "timed_out", len(rep.TimedOut))
			}
		}
	}
}
