package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/approvals"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// project is a fake project whose every spawn and question is due and times out.
// A batch's records are handled concurrently: mu guards expired.
type project struct {
	mu             sync.Mutex
	expired, swept []string
}

func (p *project) ExpireApproval(_ context.Context, id string) (service.ApprovalExpiry, time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expired = append(p.expired, id)
	return service.ApprovalExpiry{ApprovalID: id, Verdict: approvals.TimedOut, Committed: true}, 0, nil
}

func (p *project) SweepApprovals(_ context.Context, limit int) (service.ApprovalSweep, error) {
	p.swept = append(p.swept, "approvals")
	return service.ApprovalSweep{TimedOut: []string{"apr:x"}}, nil
}

func (p *project) ExpireSpawn(_ context.Context, id string) (service.TimeoutResult, time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expired = append(p.expired, id)
	return service.TimeoutResult{RequestID: id, Outcome: spawn.TimeoutRestored, Committed: true}, 0, nil
}

func (p *project) Sweep(_ context.Context, limit int) (service.SweepReport, error) {
	p.swept = append(p.swept, "sweep")
	return service.SweepReport{TimedOut: []service.TimeoutResult{{RequestID: "spawn:x"}}}, nil
}

// ComingDue hands over one spawn per tick.
func (p *project) ComingDue(_ context.Context, after, until time.Time, limit int) (service.ComingDuePage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swept = append(p.swept, fmt.Sprintf("horizon of %v", until.Sub(after)))
	return service.ComingDuePage{Due: []service.DueTimeout{{ID: "spawn:01JDW0000000000000000000AC", At: until}}, Through: until}, nil
}

type projects map[string]*project

func (ps projects) Project(_ context.Context, name string) (sqssched.Timeouts, error) {
	return ps[name], nil
}

func (ps projects) List(context.Context) ([]string, error) { return []string{"acme", "globex"}, nil }

// batchSQS records the batches sent to it, by queue URL.
type batchSQS struct {
	mu      sync.Mutex
	batches map[string][][]string
}

func (b *batchSQS) SendMessage(ctx context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	_, err := b.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: in.QueueUrl, Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: in.MessageBody}}})
	return &awssqs.SendMessageOutput{}, err
}

func (b *batchSQS) SendMessageBatch(_ context.Context, in *awssqs.SendMessageBatchInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var bodies []string
	for _, e := range in.Entries {
		bodies = append(bodies, aws.ToString(e.MessageBody))
	}
	if b.batches == nil {
		b.batches = map[string][][]string{}
	}
	b.batches[aws.ToString(in.QueueUrl)] = append(b.batches[aws.ToString(in.QueueUrl)], bodies)
	return &awssqs.SendMessageBatchOutput{}, nil
}

const timeoutsURL, workURL = "http://127.0.0.1:1/000000000000/timeouts", "http://127.0.0.1:1/000000000000/sweeps"

func newTestHandler() (handler, projects) {
	ps := projects{"acme": &project{}, "globex": &project{}}
	q := &sqssched.Queue{Client: &batchSQS{}, URL: timeoutsURL}
	return handler{sweeper: &sqssched.Sweeper{Projects: ps, Queue: q}, limit: 10, log: slog.New(slog.DiscardHandler)}, ps
}

// Events as Lambda delivers them (abridged from the AWS documentation's samples).
const sqsEvent = `{"Records":[
 {"messageId":"m1","receiptHandle":"h1","body":"{\"v\":1,\"project\":\"acme\",\"request_id\":\"spawn:01JDW0000000000000000000AA\",\"expires_at\":\"2026-11-29T09:00:00Z\"}",
  "attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1764406800000"},"messageAttributes":{},"md5OfBody":"x",
  "eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:000000000000:timeouts","awsRegion":"us-east-1"},
 {"messageId":"m3","receiptHandle":"h3","body":"{\"v\":1,\"project\":\"acme\",\"request_id\":\"apr:01JDW0000000000000000000AB\",\"expires_at\":\"2026-11-29T09:02:00Z\"}",
  "attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1764406800000"},"messageAttributes":{},"md5OfBody":"x",
  "eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:000000000000:timeouts","awsRegion":"us-east-1"},
 {"messageId":"m2","receiptHandle":"h2","body":"not json","attributes":{},"messageAttributes":{},"md5OfBody":"x",
  "eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:000000000000:timeouts","awsRegion":"us-east-1"}]}`

const scheduledEvent = `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event","source":"aws.events",
 "account":"123456789012","time":"2026-11-29T09:00:00Z","region":"us-east-1","resources":["arn:aws:events:us-east-1:123456789012:rule/SweepSchedule"],"detail":{}}`

func TestAnSQSBatchAnswersOnlyItsFailedRecords(t *testing.T) {
	h, ps := newTestHandler()
	out, err := h.invoke(context.Background(), json.RawMessage(sqsEvent))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if string(b) != `{"batchItemFailures":[{"itemIdentifier":"m2"}]}` {
		t.Fatalf("response %s", b)
	}
	if got := ps["acme"].expired; len(got) != 2 || !slices.Contains(got, "spawn:01JDW0000000000000000000AA") || !slices.Contains(got, "apr:01JDW0000000000000000000AB") {
		t.Fatalf("expired %v, want the spawn and the approval question", got)
	}
}

func TestTheScheduledEventSweepsEveryProjectThenSendsWhatCameWithinTheHorizon(t *testing.T) {
	h, ps := newTestHandler()
	var logged bytes.Buffer
	h.log = slog.New(slog.NewJSONHandler(&logged, nil))
	out, err := h.invoke(context.Background(), json.RawMessage(scheduledEvent))
	if err != nil {
		t.Fatal(err)
	}
	rep := out.(sqssched.SweepReport)
	want := []string{"approvals", "sweep", "horizon of 1m0s"}
	if len(rep.Projects) != 2 || !slices.Equal(ps["acme"].swept, want) || !slices.Equal(ps["globex"].swept, want) ||
		rep.Projects[0].ApprovalsTimedOut != 1 || rep.Projects[0].Scheduled != 1 || rep.Projects[1].Scheduled != 1 {
		t.Fatalf("report %+v, sweeps %q %q: want %q in each project", rep, ps["acme"].swept, ps["globex"].swept, want)
	}
	var line struct {
		Msg       string `json:"msg"`
		TimedOut  int    `json:"timed_out"`
		Scheduled *int   `json:"scheduled"`
	}
	if err := json.Unmarshal(logged.Bytes(), &line); err != nil || line.Msg != "scheduled sweep" || line.TimedOut != 2 || line.Scheduled == nil || *line.Scheduled != 2 {
		t.Fatalf("log line %s (%v): want the sweep's totals, scheduled 2", logged.Bytes(), err)
	}
}

// With a work queue the scheduled event only enqueues: one sweep message
// per project, ten to a batch; each delivered message sweeps its project.
func TestTheScheduledEventFansOutOneSweepMessagePerProject(t *testing.T) {
	h, ps := newTestHandler()
	fake := &batchSQS{}
	h.sweeper.Queue.Client = fake
	h.sweeper.Work = &sqssched.Queue{Client: fake, URL: workURL}
	out, err := h.invoke(context.Background(), json.RawMessage(scheduledEvent))
	if err != nil {
		t.Fatal(err)
	}
	if rep := out.(sqssched.SweepReport); rep.Enqueued != 2 || len(rep.Projects) != 0 || len(ps["acme"].swept) != 0 {
		t.Fatalf("report %+v, acme swept %q: want 2 enqueued and no project swept by the scheduled run", rep, ps["acme"].swept)
	}
	batches := fake.batches[workURL]
	if len(batches) != 1 || !slices.Equal(batches[0], []string{`{"v":1,"sweep":"acme"}`, `{"v":1,"sweep":"globex"}`}) {
		t.Fatalf("work queue batches %q", batches)
	}
	ev := `{"Records":[{"messageId":"w1","body":"{\"v\":1,\"sweep\":\"globex\"}","eventSource":"aws:sqs"}]}`
	out, err = h.invoke(context.Background(), json.RawMessage(ev))
	if b, _ := json.Marshal(out); err != nil || string(b) != `{"batchItemFailures":[]}` {
		t.Fatalf("sweep message: %s %v", b, err)
	}
	if want := []string{"approvals", "sweep", "horizon of 1m0s"}; !slices.Equal(ps["globex"].swept, want) || len(ps["acme"].swept) != 0 {
		t.Fatalf("globex swept %q (want %q), acme %q (want nothing)", ps["globex"].swept, want, ps["acme"].swept)
	}
	if sent := fake.batches[timeoutsURL]; len(sent) != 1 || len(sent[0]) != 1 {
		t.Fatalf("timeout queue batches %q, want globex's one coming-due spawn", sent)
	}
}

func TestAnUnknownEventIsAnError(t *testing.T) {
	h, _ := newTestHandler()
	for _, ev := range []string{`{}`, `{"source":"aws.s3"}`, `[1]`, `{"Records":[{"eventSource":"aws:sns"}]}`} {
		if _, err := h.invoke(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
}
