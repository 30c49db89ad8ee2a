package sqs

import (
	"context"
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
	ComingDue(ctx context.Context, after, until time.Time, limit int) (service.ComingDuePage, error)
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
	// rule's rate(1 minute)). It matters only to projects that store no
	// horizon (see Horizons): each run then sends the messages of what came
	// within the horizon in the last Period.
	Period time.Duration
	// Work is the sweep work queue: SweepAll enqueues one "sweep project p"
	// message per project there, and HandleSQS sweeps the project of each
	// such message. Nil: SweepAll sweeps every project itself, in turn.
	Work *Queue
	// Limit bounds one read of a project's sweep (a page; default
	// store.SweepBatch); a project's sweep pages on until done.
	Limit int
	// Reserve: a project's sweep stops paging when less than this is left
	// of the invocation (default 10 s) and sends its project's sweep
	// message again, so the rest is done by the next invocation.
	Reserve time.Duration
	// IndexLag is how far behind the stored horizon is kept from the end
	// of what was read (default 2 s), so that a spawn the index did not yet
	// show is read again by the next run (the index is eventually
	// consistent); what lies in that slice may be sent twice.
	IndexLag time.Duration
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
	if sm, ok := DecodeSweep(rec.Body); ok {
		return s.handleSweep(ctx, rec, sm.Sweep)
	}
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

func (s *Sweeper) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}
