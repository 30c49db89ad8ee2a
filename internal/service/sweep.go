package service

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// SweepReport says what a sweep did.
type SweepReport struct {
	TimedOut []TimeoutResult `json:"timed_out"`
	// Lost lists due spawns another resolver committed first.
	Lost []TimeoutResult `json:"lost"`
	// Approvals says which questions the sweep timed out or announced.
	Approvals *ApprovalSweep `json:"approvals,omitempty"`
	// Warnings say what the questions' part could not do (ApprovalSweep).
	Warnings []envelope.Warning `json:"-"`
}

// TimeoutResult is one spawn a sweep looked at.
type TimeoutResult struct {
	RequestID string        `json:"request_id"`
	EntityID  string        `json:"entity_id,omitempty"`
	Outcome   spawn.Outcome `json:"outcome"`
	Restored  bool          `json:"restored"`
	Status    ledger.Status `json:"status,omitempty"`
	// Committed is true when this call committed the timeout, false when
	// it found the spawn already resolved (or not yet due).
	Committed bool `json:"-"`
}

// Sweep resolves up to limit (1000 if not positive) expired pending
// spawns by timeout, and ends due questions: `dont sweep`, the timers and
// the ticker (SweepFirst is the part a tool call runs). It is idempotent: a spawn
// some other resolver committed first is reported as lost and left alone.
func (s *core) Sweep(ctx context.Context, limit int) (SweepReport, error) {
	return s.sweep(ctx, limit, true)
}

func (s *core) sweep(ctx context.Context, limit int, withApprovals bool) (SweepReport, error) {
	if limit <= 0 {
		limit = 1000
	}
	rep := SweepReport{TimedOut: []TimeoutResult{}, Lost: []TimeoutResult{}}
	if withApprovals {
		rep.Approvals, rep.Warnings = s.sweepApprovalsQuietly(ctx, limit)
	}
	due, err := s.Store.ExpiringSpawns(ctx, time.Time{}, s.now(), limit)
	if err != nil {
		return rep, storeErr(err)
	}
	for _, sp := range due {
		r, won, err := s.expire(ctx, sp.ID)
		if err != nil {
			return rep, err
		}
		if won {
			rep.TimedOut = append(rep.TimedOut, r)
		} else if r.Outcome != "" {
			rep.Lost = append(rep.Lost, r)
		}
	}
	return rep, nil
}

// SweepFirstPolicy is how much of the sweep a tool call runs (SweepFirst
// before the call, SweepAfter after a call that resolves its own request
// first). A call that sweeps first sweeps expired spawns whatever the
// policy: a command that touches an entity or a spawn whose pending spawn
// has expired sees the timeout committed first (docs/design.md §5.5), and
// that part costs one read of the pending-expiry index, which finds
// nothing when nothing is due.
type SweepFirstPolicy struct {
	// ApprovalsEvery, when positive, runs the approvals part of a call's
	// sweep (due questions ended, missing ending frames announced) at
	// most once per this interval of the service's clock; zero runs it on
	// every call. It is for a front end whose own periodic sweep ends due
	// questions anyway (dont serve's ticker): every approvals operation
	// reads a question's deadline itself (an answer after it times the
	// question out), so a call between two of those sweeps decides the
	// same, and only a missing ending frame waits up to the interval for
	// its announce.
	ApprovalsEvery time.Duration
	// AfterEvery, when positive, runs the sweep after a call that resolved
	// its own request first (a callback, an answer) at most once per this
	// interval; zero runs it after every such call. That sweep never
	// concerned what the call touched — the call resolved its own request
	// and built its answer before it — only other due spawns and
	// questions, which the next call that sweeps first, a timer or the
	// periodic sweep ends anyway.
	AfterEvery time.Duration
}

// SweepFirst is the sweep the tool surface runs before every call that
// needs it: Sweep of at most InlineSweep due spawns, with the approvals part as the service's
// SweepFirstPolicy allows. `dont sweep`, the timers and the ticker call
// Sweep, which always sweeps in full.
//
// A store that can tell in one read whether anything is due (DueProbe)
// is asked first, and a sweep that would find nothing costs that read
// alone: no due spawn, question or unannounced ending means every part of
// the sweep would have found nothing.
func (s *core) SweepFirst(ctx context.Context) (SweepReport, error) {
	// The interval's turn is taken whether or not anything is due, as if
	// the approvals part had run and found nothing.
	approvalsTurn := turn(&s.approvalsSweptAt, s.SweepPolicy.ApprovalsEvery, s.now())
	if s.nothingDue(ctx) {
		return SweepReport{TimedOut: []TimeoutResult{}, Lost: []TimeoutResult{}}, nil
	}
	rep, err := s.sweep(ctx, InlineSweep, approvalsTurn)
	if err == nil && len(rep.TimedOut)+len(rep.Lost) >= InlineSweep {
		// More may be due than this call timed out: a backlog, which the
		// sweeper drains; until it has, calls settle what they act on.
		s.backlogSeenAt.Store(s.now().UnixNano())
	}
	return rep, err
}

// backlogMemory is how long after a sweep-first last found a backlog the
// calls of this process keep settling what they act on (settledEntity).
const backlogMemory = time.Minute

// inBacklog reports whether a sweep-first of this process found more due
// spawns than it timed out within backlogMemory. A call whose own
// sweep-first found fewer timed out everything due, so it needs no more.
func (s *core) inBacklog() bool {
	at := s.backlogSeenAt.Load()
	return at != 0 && s.now().UnixNano()-at < int64(backlogMemory)
}

// settledEntity reads the entity a call acts on; during a backlog
// (inBacklog) its pending spawn, if due, is timed out first, so the call
// sees what it would have seen had its sweep-first reached that spawn.
func (s *core) settledEntity(ctx context.Context, id string) (ledger.Entity, error) {
	e, err := s.entity(ctx, id)
	if err != nil || e.PendingSpawn == "" || !s.inBacklog() {
		return e, err
	}
	sp, err := s.spawnRecord(ctx, e.PendingSpawn)
	if err != nil || sp.State != spawn.Pending || s.now().Before(sp.ExpiresAt) {
		return e, nil // a missing spawn is the entity's business, not the sweep's
	}
	if _, _, err := s.expire(ctx, sp.ID); err != nil {
		return e, err
	}
	return s.entity(ctx, id)
}

// settledSpawn is settledEntity for a call that names a spawn: a due
// pending spawn is timed out first (during a backlog) and read again.
func (s *core) settledSpawn(ctx context.Context, sp spawn.Spawn) (spawn.Spawn, error) {
	if sp.State != spawn.Pending || s.now().Before(sp.ExpiresAt) || !s.inBacklog() {
		return sp, nil
	}
	if _, _, err := s.expire(ctx, sp.ID); err != nil {
		return sp, err
	}
	return s.spawnRecord(ctx, sp.ID)
}

// DueProbe is the optional one-read check of a Store: whether a sweep at
// now would find a pending spawn or question due, or a question's ending
// not yet announced. The SQLite store implements it; a store without it
// is swept in full.
type DueProbe interface {
	AnythingDue(ctx context.Context, now time.Time) (bool, error)
}

// nothingDue reports whether the store says no part of a sweep has work.
// It answers for the approvals part too only if the questions live in the
// same store; any error means "sweep and see".
func (s *core) nothingDue(ctx context.Context) bool {
	probe, ok := s.Store.(DueProbe)
	if !ok {
		return false
	}
	if s.Approvals.Store != nil && !s.Approvals.Scheduled && any(s.Approvals.Store) != any(s.Store) {
		return false
	}
	due, err := probe.AnythingDue(ctx, s.now())
	return err == nil && !due
}

// SweepAfter is the sweep the tool surface runs after a call that
// resolved its own request (or answered its own question) first:
// SweepFirst, at most once per SweepFirstPolicy.AfterEvery.
func (s *core) SweepAfter(ctx context.Context) (SweepReport, error) {
	if !turn(&s.afterSweptAt, s.SweepPolicy.AfterEvery, s.now()) {
		return SweepReport{TimedOut: []TimeoutResult{}, Lost: []TimeoutResult{}}, nil
	}
	return s.SweepFirst(ctx)
}

// turn says whether a sweep rate-limited to once per every (none if not
// positive) runs now, and if so takes the interval's turn: of the callers
// that race for one turn, one gets it. last holds the turn's time.
func turn(last *atomic.Int64, every time.Duration, at time.Time) bool {
	if every <= 0 {
		return true
	}
	now, prev := at.UnixNano(), last.Load()
	if prev != 0 && now >= prev && now-prev < int64(every) {
		return false
	}
	return last.CompareAndSwap(prev, now)
}

// ExpireSpawn is the queue-driven timeout of one request: it resolves the
// spawn by timeout if it is still pending and due. Not yet due reports
// the remaining time, so a delayed-message scheduler can re-enqueue it.
func (s *core) ExpireSpawn(ctx context.Context, requestID string) (TimeoutResult, time.Duration, error) {
	sp, err := s.spawnRecord(ctx, requestID)
	if err != nil {
		return TimeoutResult{}, 0, err
	}
	if sp.State == spawn.Pending {
		if left := sp.ExpiresAt.Sub(s.now()); left > 0 {
			return TimeoutResult{RequestID: sp.ID, EntityID: sp.EntityID}, left, nil
		}
	}
	r, won, err := s.expire(ctx, requestID)
	r.Committed = won
	return r, 0, err
}

// expire commits the timeout resolver for one spawn. won is false when the
// spawn was already resolved (r.Outcome then names the winner) or not due.
func (s *core) expire(ctx context.Context, requestID string) (r TimeoutResult, won bool, err error) {
	tr, err := s.runStep(ctx, spawn.Step{Kind: spawn.StepTimeout, RequestID: requestID}, nil, nil)
	r = TimeoutResult{RequestID: tr.Spawn.ID, EntityID: tr.Spawn.EntityID}
	if err != nil {
		return r, false, err
	}
	switch tr.Effect {
	case spawn.Lost:
		r.Outcome = tr.Outcome
		return r, false, nil
	case spawn.NoChange:
		return r, false, nil
	}
	r.Outcome, r.Restored, r.Status = spawn.TimeoutRestored, tr.Restored, tr.Status
	return r, true, nil
}

// Spawn views for `dont spawns`.
const (
	ViewPending  = "pending"
	ViewTimedOut = "timed-out"
	ViewAll      = "all"
)

// SpawnList is what Spawns returns. NextCursor names the next page; it is
// absent on the last.
type SpawnList struct {
	Count      int           `json:"count"`
	Spawns     []spawn.Spawn `json:"spawns"`
	View       string        `json:"view"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// List lists every spawn request of a view, page by page.
func (s *Spawns) List(ctx context.Context, view string) (SpawnList, error) {
	return walk(func(p Page) (SpawnList, error) { return s.ListPage(ctx, view, p) },
		func(l SpawnList) string { return l.NextCursor },
		func(all *SpawnList, l SpawnList) {
			all.Spawns = append(all.Spawns, l.Spawns...)
			all.Count, all.NextCursor = len(all.Spawns), l.NextCursor
		})
}

// ListPage lists one page of spawn requests, in id order (their issue
// order): pending (active, not expired), timed-out (expired and not
// re-assumed since) or all.
func (s *Spawns) ListPage(ctx context.Context, view string, p Page) (SpawnList, error) {
	var res SpawnList
	f := store.SpawnFilter{Indexed: true}
	switch view {
	case ViewPending:
		f.State = spawn.Pending
	case ViewTimedOut:
		f.State, f.Outcome = spawn.Resolved, spawn.TimeoutRestored
	case ViewAll, "":
		view = ViewAll
	default:
		return res, errs.E(errs.InvalidArgument, "unknown `view` "+view).Unmet("view is one of pending, timed-out, all")
	}
	q := pageQuery{project: s.Project, query: "spawns\x00view=" + view}
	limit, after, err := q.open(p, "spawns", spawnKey)
	if err != nil {
		return res, err
	}
	now := s.now()
	out := []spawn.Spawn{}
	// The view drops some of what the store returns: read on until the
	// page and one more are kept or the store has no more.
	for f.After = after; len(out) <= limit; {
		f.Limit = limit + 1 - len(out)
		list, err := s.Store.ListSpawns(ctx, f)
		if err != nil {
			return res, storeErr(err)
		}
		list = store.PageOf(list, func(sp spawn.Spawn) string { return sp.ID }, f.After, f.Limit)
		for _, sp := range list {
			if s.inView(ctx, view, sp, now) {
				out = append(out, sp)
			}
		}
		if len(list) < f.Limit {
			break
		}
		f.After = list[len(list)-1].ID
	}
	if len(out) > limit {
		out, res.NextCursor = out[:limit], q.cursor(out[limit-1].ID)
	}
	res.Count, res.Spawns, res.View = len(out), out, view
	return res, nil
}

// inView says whether a spawn the store listed for view belongs in it.
func (s *Spawns) inView(ctx context.Context, view string, sp spawn.Spawn, now time.Time) bool {
	switch view {
	case ViewPending:
		return now.Before(sp.ExpiresAt)
	case ViewTimedOut:
		if sp.Outcome != spawn.TimeoutRestored {
			return false
		}
		if sp.EntityID != "" {
			e, err := s.Store.GetEntity(ctx, sp.EntityID)
			if err != nil || e.LastSpawn != sp.ID {
				return false // re-assumed since: no longer relevant
			}
		}
	}
	return true
}
