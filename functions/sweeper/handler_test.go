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

// ScheduleComingDue hands over one spawn per tick.
func (p *project) ScheduleComingDue(_ context.Context, horizon, period time.Duration, limit int) (int, error) {
	p.swept = append(p.swept, fmt.Sprintf("horizon %v every %v", horizon, period))
	return 1, nil
}

type projects map[string]*project

func (ps projects) Project(_ context.Context, name string) (sqssched.Timeouts, error) {
	return ps[name], nil
}

func (ps projects) List(context.Context) ([]string, error) { return []string{"acme", "globex"}, nil }

func newTestHandler() (handler, projects) {
	ps := projects{"acme": &project{}, "globex": &project{}}
	return handler{sweeper: &sqssched.Sweeper{Projects: ps}, limit: 10, log: slog.New(slog.DiscardHandler)}, ps
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
	want := []string{"approvals", "sweep", "horizon 15m0s every 1m0s"}
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

func TestAnUnknownEventIsAnError(t *testing.T) {
	h, _ := newTestHandler()
	for _, ev := range []string{`{}`, `{"source":"aws.s3"}`, `[1]`, `{"Records":[{"eventSource":"aws:sns"}]}`} {
		if _, err := h.invoke(context.Background(), json.RawMessage(ev)); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
}
