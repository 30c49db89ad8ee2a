package sqs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// Horizon is what the scheduled sweep needs of a project's store to keep
// its horizon gap-free: how far its timeout messages have been sent, and
// a conditional move of that mark that never goes back
// (internal/store/dynamo implements it: scheduled_until).
type Horizon interface {
	ScheduledUntil(ctx context.Context) (time.Time, error)
	AdvanceScheduledUntil(ctx context.Context, t time.Time) (bool, error)
}

// Horizons is implemented by a Projects whose projects store their
// horizon. A project without one falls back to the window of the last
// Period, which a late or missed run leaves a gap in (the due sweep still
// ends what falls into it, at most a Period late).
type Horizons interface {
	Horizon(ctx context.Context, project string) (Horizon, error)
}

// SweepReport is what the scheduled sweep did: how many sweep messages it
// enqueued (the fan-out), or, without a work queue, each project's sweep.
type SweepReport struct {
	Projects []ProjectSweep `json:"projects"`
	// Enqueued counts the "sweep project p" messages sent to the work queue.
	Enqueued int `json:"enqueued"`
	// Waiting, when positive, is how many sweep messages of an earlier run
	// were still waiting: this run enqueued none (one pending sweep per
	// project at a time).
	Waiting int `json:"waiting,omitempty"`
}

// ProjectSweep is one project's sweep.
type ProjectSweep struct {
	Project  string `json:"project"`
	TimedOut int    `json:"timed_out"`
	Lost     int    `json:"lost"`
	// ApprovalsTimedOut counts questions ended at their deadline,
	// Announced endings whose missing frame was appended.
	ApprovalsTimedOut int `json:"approvals_timed_out"`
	Announced         int `json:"announced"`
	// Scheduled counts the timeout messages sent for spawns and questions
	// that came within the horizon since the project's last sweep.
	Scheduled int `json:"scheduled"`
	// Requeued: the invocation's time ran low before the sweep was done;
	// its project's sweep message was sent again for the rest.
	Requeued bool `json:"requeued,omitempty"`
	// Delivered counts the webhook and event-bus deliveries attempted.
	Delivered int    `json:"delivered,omitempty"`
	Error     string `json:"error,omitempty"`
}

// OutcomeSwept: a sweep message's project was swept.
const OutcomeSwept = "swept"

const defaultReserve = 10 * time.Second

const defaultIndexLag = 2 * time.Second

// SweepAll is the scheduled run. With a work queue it lists the projects
// and enqueues one sweep message per project, ten to a SendMessageBatch,
// unless messages of an earlier run still wait there (then it sends
// none), and returns: the sweeps run concurrently in the queue's consumers
// (HandleSQS), bounded by the event source's maximum concurrency, so the
// run's cost does not grow with the work of each project. Without one it
// sweeps every project in turn (SweepProject). One project's failure does
// not stop the others; it is returned at the end so that the invocation
// counts as failed.
func (s *Sweeper) SweepAll(ctx context.Context, limit int) (SweepReport, error) {
	rep := SweepReport{Projects: []ProjectSweep{}}
	if s.Work != nil {
		// One pending sweep per project: while an earlier run's messages
		// wait, this run adds none, so a fan-out the consumers do not keep
		// up with stays one round deep instead of piling up. A count that
		// cannot be read sends the round anyway: the backstop matters more
		// than a duplicate.
		n, ok, err := s.Work.Waiting(ctx)
		if err != nil {
			s.log().WarnContext(ctx, "scheduled sweep", "err", err)
		}
		if ok && n > 0 {
			rep.Waiting = n
			s.log().InfoContext(ctx, "scheduled sweep", "waiting", n, "enqueued", 0)
			return rep, nil
		}
	}
	names, err := s.Projects.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("list projects: %w", err)
	}
	if s.Work != nil {
		rep.Enqueued, err = s.Work.SendSweeps(ctx, names)
		if err != nil {
			s.log().ErrorContext(ctx, "scheduled sweep", "projects", len(names), "enqueued", rep.Enqueued, "err", err)
		}
		return rep, err
	}
	var failed []error
	for _, name := range names {
		ps, err := s.SweepProject(ctx, name, limit)
		if err != nil {
			failed = append(failed, fmt.Errorf("project %s: %w", name, err))
		}
		rep.Projects = append(rep.Projects, ps)
	}
	return rep, errors.Join(failed...)
}

// handleSweep sweeps the project of one sweep message. A sweep cut short
// by the invocation's time sends the project's message again; a failed
// one is left for SQS to deliver again.
func (s *Sweeper) handleSweep(ctx context.Context, rec events.SQSMessage, project string) string {
	ps, err := s.SweepProject(ctx, project, s.limit())
	if err == nil && ps.Requeued {
		if s.Work == nil {
			err = errors.New("no work queue to send the rest of the sweep to")
		} else {
			_, err = s.Work.SendSweeps(ctx, []string{project})
		}
	}
	if err != nil {
		s.log().WarnContext(ctx, "sweep message", "message_id", rec.MessageId, "project", project, "outcome", OutcomeFailed, "err", err)
		return OutcomeFailed
	}
	return OutcomeSwept
}

// SweepProject sweeps one project: its due approval questions (ended as
// timed-out, missing ending frames appended), then its due spawns page by
// page of limit until none is left, then the timeout messages of what
// came within the horizon since its last sweep (sendHorizon), ten to a
// SendMessageBatch. When less than Reserve is left of the invocation it
// stops between pages and reports Requeued. The approvals sweep's failure
// fails the project at once; the horizon runs even when the spawn sweep
// failed.
func (s *Sweeper) SweepProject(ctx context.Context, name string, limit int) (ps ProjectSweep, err error) {
	ps.Project = name
	defer func() {
		if err != nil {
			ps.Error = err.Error()
			s.log().ErrorContext(ctx, "project sweep", "project", name, "err", err)
		} else if ps.TimedOut > 0 || ps.Lost > 0 || ps.ApprovalsTimedOut > 0 || ps.Announced > 0 || ps.Scheduled > 0 || ps.Requeued {
			s.log().InfoContext(ctx, "project sweep", "project", name, "timed_out", ps.TimedOut, "lost", ps.Lost,
				"approvals_timed_out", ps.ApprovalsTimedOut, "announced", ps.Announced, "scheduled", ps.Scheduled, "requeued", ps.Requeued)
		}
	}()
	if limit <= 0 {
		limit = s.limit()
	}
	svc, err := s.Projects.Project(ctx, name)
	if err != nil {
		return ps, err
	}
	a, err := svc.SweepApprovals(ctx, limit)
	if err != nil && !errs.Is(err, service.ApprovalsUnavailable) {
		return ps, err
	}
	ps.ApprovalsTimedOut, ps.Announced = len(a.TimedOut), len(a.Announced)
	var sweepErr error
	for {
		r, err := svc.Sweep(ctx, limit)
		ps.TimedOut += len(r.TimedOut)
		ps.Lost += len(r.Lost)
		if r.Approvals != nil { // anything that came due meanwhile
			ps.ApprovalsTimedOut += len(r.Approvals.TimedOut)
			ps.Announced += len(r.Approvals.Announced)
		}
		if err != nil {
			sweepErr = err
			break
		}
		if len(r.TimedOut)+len(r.Lost) < limit {
			break
		}
		if s.short(ctx) {
			ps.Requeued = true
			return ps, nil
		}
	}
	horizonErr := s.sendHorizon(ctx, name, svc, limit, &ps)
	// The backstop of the delivery messages: what is due, retries included.
	var deliverErr error
	if d, ok := svc.(Deliverer); ok {
		var res service.DeliverResult
		res, deliverErr = d.DeliverHooks(ctx, limit)
		ps.Delivered = res.Attempted
	}
	return ps, errors.Join(sweepErr, horizonErr, deliverErr)
}

// sendHorizon sends the timeout messages of the project's pending spawns
// and questions expiring in (scheduled_until, now + horizon], page by
// page, and after each page that sent something moves scheduled_until to
// where the page ended (kept IndexLag behind the horizon's end); an idle
// project's sweep writes nothing. Whatever the runs'
// jitter, a missed run or a retry, the windows of consecutive runs
// therefore meet: the next one starts where the stored mark is, and the
// mark only moves past what was sent. A project that never stored a mark
// starts at now: everything pending within the horizon is sent (an
// already-sent message sent again changes nothing).
func (s *Sweeper) sendHorizon(ctx context.Context, name string, svc Timeouts, limit int, ps *ProjectSweep) error {
	now := s.Queue.now()
	until := now.Add(s.Queue.horizon())
	keep := until.Add(-s.indexLag())
	after := now
	var h Horizon
	if hs, ok := s.Projects.(Horizons); ok {
		var err error
		if h, err = hs.Horizon(ctx, name); err != nil {
			return err
		}
	}
	if h == nil {
		after = until.Add(-s.period())
	} else if su, err := h.ScheduledUntil(ctx); err != nil {
		return err
	} else if !su.IsZero() {
		after = su
	}
	for {
		page, err := svc.ComingDue(ctx, after, until, limit)
		if err != nil {
			return err
		}
		msgs := make([]Message, len(page.Due))
		for i, d := range page.Due {
			msgs[i] = Message{Project: name, RequestID: d.ID, ExpiresAt: d.At.UTC()}
		}
		n, err := s.Queue.sendAll(ctx, outgoingOf(s.Queue, msgs))
		ps.Scheduled += n
		if err != nil {
			return errs.E(service.ScheduleFailed, "could not send the horizon's timeout messages: "+err.Error()).Wrap(err)
		}
		// A window with nothing in it leaves the mark where it is (no
		// write): the next window, read from the same mark, holds it.
		if through := minTime(page.Through, keep); h != nil && (len(page.Due) > 0 || page.More) && through.After(after) {
			if _, err := h.AdvanceScheduledUntil(ctx, through); err != nil {
				return err
			}
		}
		if !page.More {
			return nil
		}
		after = page.Through
		if s.short(ctx) {
			ps.Requeued = true
			return nil
		}
	}
}

func outgoingOf(q *Queue, ms []Message) []outgoing {
	now := q.now()
	out := make([]outgoing, len(ms))
	for i, m := range ms {
		out[i] = outgoing{body: m.Encode(), delay: Delay(m.ExpiresAt.Sub(now)), name: m.RequestID}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// short reports whether less than Reserve is left of the invocation.
func (s *Sweeper) short(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	reserve := s.Reserve
	if reserve <= 0 {
		reserve = defaultReserve
	}
	return ok && time.Until(deadline) < reserve
}

func (s *Sweeper) limit() int {
	if s.Limit > 0 {
		return s.Limit
	}
	return store.SweepBatch
}

func (s *Sweeper) indexLag() time.Duration {
	if s.IndexLag > 0 {
		return s.IndexLag
	}
	return defaultIndexLag
}

func (s *Sweeper) period() time.Duration {
	if s.Period > 0 {
		return s.Period
	}
	return defaultPeriod
}
