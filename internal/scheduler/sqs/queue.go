// Package sqs is the AWS adapter of the service's TimeoutScheduler and
// ApprovalTimeoutScheduler ports and their consumer. A spawn, or an
// approval question, becomes one SQS message delayed until the spawn's
// expires_at or the question's deadline, sent once that is within SQS's
// 15-minute delay limit (the horizon): at once if it already is when the
// spawn is issued, else by the scheduled sweep when it comes within the
// horizon. A spawn resolved before its expiry comes within the horizon
// costs no message. The sweeper function hands each delivered message to
// Sweeper, which ends the spawn or question by timeout or, if it is not
// yet due (clock skew, or a message sent by an older build for a later
// expiry), sends the remainder on again.
//
// The scheduled sweep is a fan-out (fanout.go): each run sends one
// "sweep project p" message per project to a work queue, ten to a
// SendMessageBatch, and the same consumer sweeps each message's project:
// its due questions and spawns, page by page, then the timeout messages
// of what expires in (scheduled_until, now + horizon], the mark the
// project's store keeps, so that no run's jitter leaves a gap.
//
// Delivery is at least once and messages may be lost; neither matters for
// correctness: ExpireSpawn and ExpireApproval are idempotent (exactly one
// resolver commits per request id) and the scheduled sweep is the
// backstop for lost messages.
package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
)

// MaxDelay is the longest delay SQS accepts on a message (DelaySeconds 900).
const MaxDelay = 15 * time.Minute

// MessageVersion is the body format written by this package.
const MessageVersion = 1

// Message is the body of one timeout message. It names the project
// because one queue serves every project of a deployment. RequestID is a
// spawn id (spawn:…) or an approval id (apr:…); ExpiresAt is the spawn's
// expiry or the question's deadline.
type Message struct {
	Version   int       `json:"v"`
	Project   string    `json:"project"`
	RequestID string    `json:"request_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Encode returns the message body.
func (m Message) Encode() string {
	m.Version = MessageVersion
	b, _ := json.Marshal(m)
	return string(b)
}

// DeliverRequest is the request id of a delivery message: the project
// has webhook deliveries (or event-bus entries) due now (docs/hooks.md).
const DeliverRequest = "hook:deliver"

// NudgeDelivery sends project's delivery message, due at once: the API
// function sends it after a write that queued deliveries, so that they go
// out in seconds rather than at the next scheduled sweep.
func (q *Queue) NudgeDelivery(ctx context.Context, project string) error {
	return q.Send(ctx, Message{Project: project, RequestID: DeliverRequest, ExpiresAt: q.now()})
}

// ErrMalformed marks a body that is not a timeout message; retrying it
// cannot help.
var ErrMalformed = errors.New("malformed timeout message")

// Decode parses a message body written by Encode (any version up to ours).
func Decode(body string) (Message, error) {
	var m Message
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case m.Version < 1 || m.Version > MessageVersion:
		return m, fmt.Errorf("%w: version %d", ErrMalformed, m.Version)
	case m.Project == "":
		return m, fmt.Errorf("%w: no project", ErrMalformed)
	case m.RequestID == DeliverRequest:
	case ids.Kind(m.RequestID) != ids.Spawn && ids.Kind(m.RequestID) != ids.Approval:
		return m, fmt.Errorf("%w: %q is neither a spawn nor an approval request id", ErrMalformed, m.RequestID)
	case m.ExpiresAt.IsZero():
		return m, fmt.Errorf("%w: no expires_at", ErrMalformed)
	}
	return m, nil
}

// Delay is the DelaySeconds for a message that should become visible
// after remaining: rounded up (never early by a fraction of a second),
// within SQS's 0..900 seconds. A spawn due later than 15 minutes gets the
// maximum and is sent on again when it arrives.
func Delay(remaining time.Duration) int32 {
	if remaining <= 0 {
		return 0
	}
	if remaining >= MaxDelay {
		return int32(MaxDelay / time.Second)
	}
	return int32((remaining + time.Second - 1) / time.Second)
}

// SendAPI is the part of the SQS client the queue uses.
type SendAPI interface {
	SendMessage(ctx context.Context, in *awssqs.SendMessageInput, optFns ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
}

// Queue sends timeout messages to one SQS queue.
type Queue struct {
	Client SendAPI
	URL    string
	// Now is the clock the delay is computed with (default time.Now).
	Now func() time.Time
	// Horizon is how far ahead a message is sent (default MaxDelay, the
	// longest SQS delay): a spawn due further away gets its message from
	// the scheduled sweep. Tests shorten it to run the horizon in real time.
	Horizon time.Duration
}

// horizon is Horizon or its default.
func (q *Queue) horizon() time.Duration {
	if q.Horizon > 0 && q.Horizon < MaxDelay {
		return q.Horizon
	}
	return MaxDelay
}

func (q *Queue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// within reports whether at is at most the horizon away by the queue's
// clock: whether one message can wait until then.
func (q *Queue) within(at time.Time) bool {
	return at.Sub(q.now()) <= q.horizon()
}

// Send enqueues m, delayed until its expires_at or by MaxDelay, whichever
// is sooner.
func (q *Queue) Send(ctx context.Context, m Message) error {
	_, err := q.Client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:     aws.String(q.URL),
		MessageBody:  aws.String(m.Encode()),
		DelaySeconds: Delay(m.ExpiresAt.Sub(q.now())),
	})
	if err != nil {
		return fmt.Errorf("send timeout message for %s: %w", m.RequestID, err)
	}
	return nil
}

// Scheduler is a project's scheduler of spawn timeouts and question
// deadlines: a service is built with it as both its Scheduler and its
// ApprovalScheduler.
type Scheduler interface {
	service.TimeoutScheduler
	service.ApprovalTimeoutScheduler
}

// For returns the project's Scheduler: the service calls it after each
// spawn it issues and each question it asks.
func (q *Queue) For(project string) Scheduler {
	return projectScheduler{q: q, project: project}
}

type projectScheduler struct {
	q       *Queue
	project string
}

// ScheduleTimeout sends the spawn's message if it expires within the
// horizon, so that one message carries it to its expiry. A spawn due
// later gets nothing now: the scheduled sweep sends its message once its
// expiry comes within the horizon (Sweeper.SweepProject), and a spawn
// resolved before then never costs a message.
func (p projectScheduler) ScheduleTimeout(ctx context.Context, requestID string, expiresAt time.Time) error {
	return p.sendWithin(ctx, requestID, expiresAt)
}

// ScheduleApprovalTimeout is ScheduleTimeout for a question's deadline.
func (p projectScheduler) ScheduleApprovalTimeout(ctx context.Context, approvalID string, deadline time.Time) error {
	return p.sendWithin(ctx, approvalID, deadline)
}

func (p projectScheduler) sendWithin(ctx context.Context, requestID string, at time.Time) error {
	if !p.q.within(at) {
		return nil
	}
	return p.q.Send(ctx, Message{Project: p.project, RequestID: requestID, ExpiresAt: at.UTC()})
}

var _ service.ApprovalTimeoutScheduler = projectScheduler{}

// BatchAPI is SQS's SendMessageBatch. A Queue whose Client has it sends
// many messages ten to a request; otherwise one SendMessage each.
type BatchAPI interface {
	SendMessageBatch(ctx context.Context, in *awssqs.SendMessageBatchInput, optFns ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error)
}

// MaxBatch is the most messages one SendMessageBatch carries.
const MaxBatch = 10

// batchRequests is how many SendMessageBatch requests one SendBatch has in
// flight at once.
const batchRequests = 8

// outgoing is one message of a batch: its body, its delay and what the
// error names when it fails.
type outgoing struct {
	body  string
	delay int32
	name  string
}

// SendBatch enqueues every message, delayed like Send, ten to a request.
// It returns an error naming each message that was not sent (every other
// one was).
func (q *Queue) SendBatch(ctx context.Context, ms []Message) error {
	_, err := q.sendAll(ctx, outgoingOf(q, ms))
	return err
}

// sendAll sends out and returns how many were sent.
func (q *Queue) sendAll(ctx context.Context, out []outgoing) (int, error) {
	batch, ok := q.Client.(BatchAPI)
	if !ok {
		var failed []error
		for _, o := range out {
			_, err := q.Client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(o.body), DelaySeconds: o.delay})
			if err != nil {
				failed = append(failed, fmt.Errorf("send message for %s: %w", o.name, err))
			}
		}
		return len(out) - len(failed), errors.Join(failed...)
	}
	var (
		mu     sync.Mutex
		failed []error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, batchRequests)
	)
	fail := func(err error) {
		mu.Lock()
		failed = append(failed, err)
		mu.Unlock()
	}
	for start := 0; start < len(out); start += MaxBatch {
		chunk := out[start:min(start+MaxBatch, len(out))]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			in := &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL)}
			for i, o := range chunk {
				in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{
					Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(o.body), DelaySeconds: o.delay})
			}
			res, err := batch.SendMessageBatch(ctx, in)
			if err != nil {
				for _, o := range chunk {
					fail(fmt.Errorf("send message for %s: %w", o.name, err))
				}
				return
			}
			for _, f := range res.Failed {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				if i < 0 || i >= len(chunk) {
					i = 0
				}
				fail(fmt.Errorf("send message for %s: %s: %s", chunk[i].name, aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}()
	}
	wg.Wait()
	return len(out) - len(failed), errors.Join(failed...)
}

// SweepMessage is the body of one message of the sweep work queue: "sweep
// this project" (the scheduled sweep's fan-out, Sweeper.SweepAll).
type SweepMessage struct {
	Version int    `json:"v"`
	Sweep   string `json:"sweep"`
}

// Encode returns the message body.
func (m SweepMessage) Encode() string {
	m.Version = MessageVersion
	b, _ := json.Marshal(m)
	return string(b)
}

// DecodeSweep reports whether body is a sweep message, and its project.
// A body that names no project is not one (it is left to Decode).
func DecodeSweep(body string) (SweepMessage, bool) {
	var m SweepMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Sweep == "" || m.Version < 1 || m.Version > MessageVersion {
		return m, false
	}
	return m, true
}

// CountAPI is the part of the SQS client that reads a queue's message
// counts (GetQueueAttributes; granted with sqs:SendMessage).
type CountAPI interface {
	GetQueueAttributes(ctx context.Context, in *awssqs.GetQueueAttributesInput, optFns ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
}

// Waiting returns how many messages wait in the queue for a consumer,
// visible or delayed (not those being handled), as SQS approximates it;
// ok is false when the client cannot say.
func (q *Queue) Waiting(ctx context.Context) (n int, ok bool, err error) {
	c, ok := q.Client.(CountAPI)
	if !ok {
		return 0, false, nil
	}
	out, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return 0, false, fmt.Errorf("read the queue's message counts: %w", err)
	}
	for _, a := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
		v, err := strconv.Atoi(out.Attributes[string(a)])
		if err != nil {
			return 0, false, fmt.Errorf("read the queue's message counts: %s is %q", a, out.Attributes[string(a)])
		}
		n += v
	}
	return n, true, nil
}

// SendSweeps enqueues one sweep message per project, ten to a request,
// and returns how many were sent.
func (q *Queue) SendSweeps(ctx context.Context, projects []string) (int, error) {
	out := make([]outgoing, len(projects))
	for i, p := range projects {
		out[i] = outgoing{body: SweepMessage{Sweep: p}.Encode(), name: "project " + p}
	}
	return q.sendAll(ctx, out)
}
