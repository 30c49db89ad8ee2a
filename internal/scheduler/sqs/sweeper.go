package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/service"
)

// Timeouts is what the sweeper needs of one project's service.
// *service.Service implements it.
type Timeouts interface {
	ExpireSpawn(ctx context.Context, requestID string) (service.TimeoutResult, time.Duration, error)
	ExpireApproval(ctx context.Context, approvalID string) (service.ApprovalExpiry, time.Duration, error)
	Sweep(ctx context.Context, limit int) (service.SweepReport, error)
	SweepApprovals(ctx context.Context, limit int) (service.ApprovalSweep, error)
	ScheduleComingDue(ctx context.Context, horizon, period time.Duration, limit int) (int, error)
}

// Deliverer is what a project's service offers to deliver its due
// webhooks (docs/hooks.md); *service.Service implements it. A service
// without it has nothing to deliver.
type Deliverer interface {
	DeliverHooks(ctx context.Context, limit int) (service.DeliverResult, error)
}

// deliverBatch bounds the deliveries one message or one scheduled pass
// attempts per project.
const deliverBatch = 50

// Projects opens a project's service and lists the projects the scheduled
// sweep visits.
type Projects interface {
	Project(ctx context.Context, name string) (Timeouts, error)
	List(ctx context.Context) ([]string, error)
}

// Sweeper consumes timeout messages and runs the scheduled sweep.
type Sweeper struct {
	Queue    *Queue
	Projects Projects
	Log      *slog.Logger
	// MaxWait: a message that arrives at most this long before its spawn
	// is due is waited out in place instead of being sent on again
	// (default 1s; SQS delays have whole-second granularity and clocks
	// differ a little). Negative disables waiting.
	MaxWait time.Duration
	// Concurrency bounds the records of one batch handled at once (default 10).
	Concurrency int
	// Period is how often SweepAll runs (default 1 minute, the EventBridge
	// rule's rate(1 minute)): each run sends the messages of the spawns and
	// questions that came within MaxDelay of their expiry since the last.
	Period time.Duration
}

// Outcome of one message.
const (
	OutcomeTimedOut   = "timed-out"    // this delivery committed the timeout
	OutcomeResolved   = "already-done" // another resolver (or an earlier delivery) committed first
	OutcomeRequeued   = "requeued"     // not due yet: the remainder was sent on
	OutcomeUnknown    = "unknown"      // no such spawn: acknowledged, nothing to do
	OutcomeFailed     = "failed"       // left for SQS to deliver again
	OutcomeMalformed  = "malformed"    // not a timeout message: left for the dead-letter queue
	defaultMaxWait    = time.Second
	defaultConcurrent = 10
	defaultPeriod     = time.Minute
)

// HandleSQS handles one batch as Lambda's SQS poller delivers it. It
// reports every record that failed in BatchItemFailures, so that only
// those are delivered again; a record that succeeded is deleted by the
// poller. A malformed body fails too, until the queue's redrive policy
// parks it in the dead-letter queue, whose alarm tells an operator.
func (s *Sweeper) HandleSQS(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	outcomes := make([]string, len(ev.Records))
	limit := s.Concurrency
	if limit <= 0 {
		limit = defaultConcurrent
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcomes[i] = s.handle(ctx, rec)
		}()
	}
	wg.Wait()
	for i, rec := range ev.Records {
		if outcomes[i] == OutcomeFailed || outcomes[i] == OutcomeMalformed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp
}

func (s *Sweeper) handle(ctx context.Context, rec events.SQSMessage) string {
	ctx = readmemo.With(ctx) // one message is one request: its spawn and entity are read once
	log := s.log().With("message_id", rec.MessageId)
	m, err := Decode(rec.Body)
	if err != nil {
		log.ErrorContext(ctx, "timeout message", "outcome", OutcomeMalformed, "err", err)
		return OutcomeMalformed
	}
	log = log.With("project", m.Project, "request_id", m.RequestID)
	out, err := s.Expire(ctx, m)
	switch {
	case err != nil:
		log.WarnContext(ctx, "timeout message", "outcome", out, "err", err)
	case out == OutcomeUnknown:
		log.WarnContext(ctx, "timeout message", "outcome", out)
	default:
		log.InfoContext(ctx, "timeout message", "outcome", out, "receive_count", rec.Attributes["ApproximateReceiveCount"])
	}
	return out
}

// Expire handles one timeout message: it ends the spawn or the approval
// question by timeout if it is due, does nothing if it has already ended,
// and sends the remainder on if it is not yet due. Due is decided by the
// stored expiry, never the message's: a message sent for an expiry a
// heartbeat has since moved re-checks, and is sent on for the new one. Any number of
// deliveries of the same message commit at most one timeout.
func (s *Sweeper) Expire(ctx context.Context, m Message) (string, error) {
	svc, err := s.Projects.Project(ctx, m.Project)
	if err != nil {
		return OutcomeFailed, err
	}
	if m.RequestID == DeliverRequest {
		return s.deliver(ctx, svc, m)
	}
	expire := expireSpawn
	if ids.Kind(m.RequestID) == ids.Approval {
		expire = expireApproval
	}
	for waited := false; ; waited = true {
		out, left, err := expire(ctx, svc, m.RequestID)
		if err != nil || left <= 0 {
			return out, err
		}
		if left <= s.maxWait() && !waited && s.fits(ctx, left) {
			if err := sleep(ctx, left); err != nil {
				return OutcomeFailed, err
			}
			continue
		}
		// Sent on for what is left of the expiry as the store has it now:
		// a heartbeat may have moved it since this message was sent, and
		// the message then carries the new one.
		m.ExpiresAt = s.Queue.now().Add(left).UTC()
		if err := s.Queue.Send(ctx, m); err != nil {
			return OutcomeFailed, err
		}
		return OutcomeRequeued, nil
	}
}

// OutcomeDelivered: a delivery message's pass ran (what it attempted is
// in the delivery log).
const OutcomeDelivered = "delivered"

// deliver runs one delivery pass for a delivery message; a full batch
// sends the message on, so a backlog drains without waiting for the
// scheduled sweep.
func (s *Sweeper) deliver(ctx context.Context, svc Timeouts, m Message) (string, error) {
	d, ok := svc.(Deliverer)
	if !ok {
		return OutcomeUnknown, nil
	}
	res, err := d.DeliverHooks(ctx, deliverBatch)
	if err != nil {
		return OutcomeFailed, err
	}
	if res.Attempted >= deliverBatch {
		if err := s.Queue.NudgeDelivery(ctx, m.Project); err != nil {
			return OutcomeFailed, err
		}
	}
	return OutcomeDelivered, nil
}

// expireSpawn is one attempt at a spawn's timeout: its outcome, or the
// time left if it is not yet due.
func expireSpawn(ctx context.Context, svc Timeouts, id string) (string, time.Duration, error) {
	res, left, err := svc.ExpireSpawn(ctx, id)
	switch {
	case errs.Is(err, errs.SpawnNotFound):
		return OutcomeUnknown, 0, nil
	case err != nil:
		return OutcomeFailed, 0, err
	case left > 0:
		return "", left, nil
	case res.Outcome == "":
		return OutcomeFailed, 0, fmt.Errorf("spawn %s: not resolved and not due", id)
	case res.Committed:
		return OutcomeTimedOut, 0, nil
	}
	return OutcomeResolved, 0, nil
}

// expireApproval is one attempt at a question's deadline: it ends as
// timed-out (announced like every ending) unless an answer, a cancel or
// an earlier delivery ended it first.
func expireApproval(ctx context.Context, svc Timeouts, id string) (string, time.Duration, error) {
	res, left, err := svc.ExpireApproval(ctx, id)
	switch {
	case errs.Is(err, service.ApprovalNotFound):
		return OutcomeUnknown, 0, nil
	case err != nil:
		return OutcomeFailed, 0, err
	case left > 0:
		return "", left, nil
	case res.Verdict == "":
		return OutcomeFailed, 0, fmt.Errorf("approval %s: not ended and not due", id)
	case res.Committed:
		return OutcomeTimedOut, 0, nil
	}
	return OutcomeResolved, 0, nil
}

// fits reports whether waiting d leaves time before the invocation's deadline.
func (s *Sweeper) fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d+5*time.Second
}

func (s *Sweeper) maxWait() time.Duration {
	switch {
	case s.MaxWait < 0:
		return 0
	case s.MaxWait == 0:
		return defaultMaxWait
	}
	return s.MaxWait
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SweepReport is what the scheduled sweep did, per project.
type SweepReport struct {
	Projects []ProjectSweep `json:"projects"`
}

// ProjectSweep is one project's part of a scheduled sweep.
type ProjectSweep struct {
	Project  string `json:"project"`
	TimedOut int    `json:"timed_out"`
	Lost     int    `json:"lost"`
	// ApprovalsTimedOut counts questions ended at their deadline,
	// Announced endings whose missing frame was appended.
	ApprovalsTimedOut int `json:"approvals_timed_out"`
	Announced         int `json:"announced"`
	// Scheduled counts the timeout messages sent for spawns and questions
	// that came within MaxDelay of their expiry since the last sweep.
	Scheduled int `json:"scheduled"`
	// Delivered counts the webhook and event-bus deliveries attempted.
	Delivered int    `json:"delivered,omitempty"`
	Error     string `json:"error,omitempty"`
}

// SweepAll runs the bounded sweeps of every project, the backstop for
// lost or parked messages: at most limit due approval questions (ended as
// timed-out, and missing ending frames appended), then at most limit due
// spawns. Then it sends the messages of the spawns and questions whose
// expiry came within MaxDelay since the last run (the horizon: a spawn
// issued further from its expiry got no message then; see
// Service.ScheduleComingDue). One project's failure does not stop the
// others; it is returned at the end so that the invocation counts as
// failed and EventBridge retries it.
func (s *Sweeper) SweepAll(ctx context.Context, limit int) (SweepReport, error) {
	rep := SweepReport{Projects: []ProjectSweep{}}
	names, err := s.Projects.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("list projects: %w", err)
	}
	var failed []error
	for _, name := range names {
		ps := ProjectSweep{Project: name}
		err := s.sweepProject(ctx, name, limit, &ps)
		if err != nil {
			ps.Error = err.Error()
			failed = append(failed, fmt.Errorf("project %s: %w", name, err))
			s.log().ErrorContext(ctx, "scheduled sweep", "project", name, "err", err)
		} else if ps.TimedOut > 0 || ps.Lost > 0 || ps.ApprovalsTimedOut > 0 || ps.Announced > 0 || ps.Scheduled > 0 {
			s.log().InfoContext(ctx, "scheduled sweep", "project", name, "timed_out", ps.TimedOut, "lost", ps.Lost,
				"approvals_timed_out", ps.ApprovalsTimedOut, "announced", ps.Announced, "scheduled", ps.Scheduled)
		}
		rep.Projects = append(rep.Projects, ps)
	}
	return rep, errors.Join(failed...)
}

// sweepProject sweeps one project. The approvals sweep runs on its own
// first, so that its failure fails the project (the spawn sweep runs one
// too, but only logs its errors); a project whose service keeps no
// approvals has nothing to sweep there. The horizon's messages come last,
// after the due sweeps, and even when the spawn sweep failed.
func (s *Sweeper) sweepProject(ctx context.Context, name string, limit int, ps *ProjectSweep) error {
	svc, err := s.Projects.Project(ctx, name)
	if err != nil {
		return err
	}
	a, err := svc.SweepApprovals(ctx, limit)
	if err != nil && !errs.Is(err, service.ApprovalsUnavailable) {
		return err
	}
	r, err := svc.Sweep(ctx, limit)
	ps.TimedOut, ps.Lost = len(r.TimedOut), len(r.Lost)
	ps.ApprovalsTimedOut, ps.Announced = len(a.TimedOut), len(a.Announced)
	if r.Approvals != nil { // anything that came due between the two
		ps.ApprovalsTimedOut += len(r.Approvals.TimedOut)
		ps.Announced += len(r.Approvals.Announced)
	}
	n, serr := svc.ScheduleComingDue(ctx, MaxDelay, s.period(), limit)
	ps.Scheduled = n
	// The backstop of the delivery messages: what is due, retries included.
	var derr error
	if d, ok := svc.(Deliverer); ok {
		var res service.DeliverResult
		res, derr = d.DeliverHooks(ctx, limit)
		ps.Delivered = res.Attempted
	}
	return errors.Join(err, serr, derr)
}

func (s *Sweeper) period() time.Duration {
	if s.Period > 0 {
		return s.Period
	}
	return defaultPeriod
}

func (s *Sweeper) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}
