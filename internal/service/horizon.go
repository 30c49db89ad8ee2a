package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
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
		limit = store.SweepBatch
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

// DueTimeout is one pending spawn or approval question and the time its
// timeout is due: what a scheduler is handed.
type DueTimeout struct {
	ID string
	At time.Time
}

// ComingDuePage is one page of ComingDue.
type ComingDuePage struct {
	// Due are the pending spawns, then the pending questions, expiring in
	// (after, Through], earliest first within each kind; none due by now.
	Due []DueTimeout
	// Through is how far the page reached: until, or less when a read
	// was full (More); the next page starts after it.
	Through time.Time
	More    bool
}

// ComingDue reads the pending spawns and questions expiring in the
// window (after, until], at most limit of each, for a scheduler that keeps
// its own record of how far it has scheduled (the SQS sweeper's stored
// scheduled_until): unlike ScheduleComingDue it hands nothing over and
// assumes no fixed period, so a caller that asks for (last until, now +
// horizon] leaves no gap whatever its runs' jitter. What is already due
// by now is left out (the due sweep's job). A full read ends the page
// before its last item's time, so that items sharing that time are read
// again by the next page (duplicates are harmless, gaps are not).
func (s *core) ComingDue(ctx context.Context, after, until time.Time, limit int) (ComingDuePage, error) {
	if limit <= 0 {
		limit = store.SweepBatch
	}
	now := s.now()
	if after.Before(now) {
		after = now
	}
	page := ComingDuePage{Due: []DueTimeout{}, Through: until}
	if !until.After(after) {
		return page, nil
	}
	spawns, err := s.Store.ExpiringSpawns(ctx, after, until, limit)
	if err != nil {
		return page, storeErr(err)
	}
	page.cut(len(spawns), limit, after, func() time.Time { return spawns[len(spawns)-1].ExpiresAt })
	var questions []approvals.Approval
	if s.ApprovalScheduler != nil && s.Approvals.Store != nil {
		if questions, err = s.Approvals.Store.DueApprovals(ctx, page.Through, limit); err != nil {
			return page, storeErr(err)
		}
		page.cut(len(questions), limit, after, func() time.Time { return questions[len(questions)-1].Deadline })
	}
	w := window{now: now, from: after, to: page.Through}
	for _, sp := range spawns {
		if w.holds(sp.ExpiresAt) {
			page.Due = append(page.Due, DueTimeout{ID: sp.ID, At: sp.ExpiresAt})
		}
	}
	for _, a := range questions {
		if w.holds(a.Deadline) {
			page.Due = append(page.Due, DueTimeout{ID: a.ID, At: a.Deadline})
		}
	}
	return page, nil
}

// cut ends the page just before the last item of a full read, or at it
// when every item of the read shares one time (progress over precision).
func (p *ComingDuePage) cut(n, limit int, after time.Time, last func() time.Time) {
	if n < limit {
		return
	}
	end := last().Add(-time.Nanosecond)
	if !end.After(after) {
		end = last()
	}
	if end.Before(p.Through) {
		p.Through, p.More = end, true
	}
}
