package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/spawn"
)

// ScheduleFailed: the scheduler refused a coming-due spawn or question.
// Nothing is lost: the due sweep still times it out, at most one sweep
// period late.
const ScheduleFailed errs.Code = "schedule-failed"

// ScheduleComingDue is the horizon of a scheduler that can only wait so
// long (an SQS message waits at most 15 minutes): it hands the Scheduler
// the pending spawns whose expires_at, and the pending approval questions
// whose deadline, lies in (now+horizon-period, now+horizon], and returns
// how many it handed over. It is meant to run every period (the scheduled
// sweep), with the scheduler declining anything further away than horizon
// when it is issued. It reads at most limit spawns (the window's, from the
// store's index range) and limit questions (the store returns those due
// by the window's end, earliest first, already-due ones included).
//
// Why that window: each tick hands over exactly the slice that entered
// the horizon since the previous tick, so consecutive ticks tile the
// future without overlap and each pending spawn is handed over at most
// once. A lost or late tick only leaves its slice to the due sweep, which
// times those spawns out at most one period late. A spawn already due is
// skipped: ending it is the due sweep's job, not the scheduler's. Handing
// a spawn over twice is harmless, its expiry being idempotent; it happens
// to a spawn issued with its expiry between horizon-period and horizon
// away, which the scheduler took when it was issued and the next tick's
// window may hold as well.
//
// A scheduler failure stops the tick (what is left falls to the due
// sweep) and is returned as ScheduleFailed with the count so far.
func (s *core) ScheduleComingDue(ctx context.Context, horizon, period time.Duration, limit int) (int, error) {
	if s.Scheduler == nil {
		return 0, nil
	}
	if limit <= 0 {
		limit = SweepBatch
	}
	now := s.now()
	w := window{now: now, from: now.Add(horizon - period), to: now.Add(horizon)}
	n, err := s.scheduleSpawns(ctx, w, limit)
	if err != nil {
		return n, err
	}
	m, err := s.scheduleApprovals(ctx, w, limit)
	return n + m, err
}

// window is one tick's slice of the future: (from, to], never due by now.
type window struct{ now, from, to time.Time }

func (w window) holds(t time.Time) bool {
	return t.After(w.from) && t.After(w.now) && !t.After(w.to)
}

func (s *core) scheduleSpawns(ctx context.Context, w window, limit int) (int, error) {
	due, err := s.Store.ExpiringSpawns(ctx, w.from, w.to, limit)
	if err != nil {
		return 0, storeErr(err)
	}
	return handOver(due, w, func(sp spawn.Spawn) (string, time.Time) { return sp.ID, sp.ExpiresAt },
		func(id string, at time.Time) error { return s.Scheduler.ScheduleTimeout(ctx, id, at) })
}

// scheduleApprovals is scheduleSpawns for question deadlines; a service
// that keeps no approvals, or whose scheduler does not drive deadlines,
// has none to hand over.
func (s *core) scheduleApprovals(ctx context.Context, w window, limit int) (int, error) {
	sched := s.ApprovalScheduler
	if sched == nil || s.Approvals.Store == nil {
		return 0, nil
	}
	due, err := s.Approvals.Store.DueApprovals(ctx, w.to, limit)
	if err != nil {
		return 0, storeErr(err)
	}
	return handOver(due, w, func(a approvals.Approval) (string, time.Time) { return a.ID, a.Deadline },
		func(id string, at time.Time) error { return sched.ScheduleApprovalTimeout(ctx, id, at) })
}

// handOver sends the items whose time lies in w, in order, stopping at the
// first refusal; it returns how many it sent.
func handOver[T any](items []T, w window, when func(T) (string, time.Time), send func(id string, at time.Time) error) (int, error) {
	n := 0
	for _, it := range items {
		id, at := when(it)
		if !w.holds(at) {
			continue
		}
		if err := send(id, at); err != nil {
			return n, scheduleErr(id, err)
		}
		n++
	}
	return n, nil
}

func scheduleErr(id string, err error) error {
	return errs.E(ScheduleFailed, "could not schedule the timeout of "+id+": "+err.Error()).Wrap(err)
}
