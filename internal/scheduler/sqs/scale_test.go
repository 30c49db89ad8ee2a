package sqs_test

import (
	"context"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// scaleDeployment is a deployment of many projects over one DynamoDB
// stand-in table: one service per project, each project's stored horizon.
type scaleDeployment struct {
	names    []string
	services map[string]*service.Service
	stores   map[string]*dynamo.Store
	// backstop counts the spawns a due sweep timed out (not a message).
	backstop atomic.Int64
}

func (d *scaleDeployment) Project(_ context.Context, name string) (sqs.Timeouts, error) {
	return countingTimeouts{d.services[name], &d.backstop}, nil
}
func (d *scaleDeployment) List(context.Context) ([]string, error) { return d.names, nil }
func (d *scaleDeployment) Horizon(_ context.Context, name string) (sqs.Horizon, error) {
	return d.stores[name], nil
}

type countingTimeouts struct {
	*service.Service
	backstop *atomic.Int64
}

func (c countingTimeouts) Sweep(ctx context.Context, limit int) (service.SweepReport, error) {
	r, err := c.Service.Sweep(ctx, limit)
	c.backstop.Add(int64(len(r.TimedOut)))
	return r, err
}

// countingTransport counts the HTTP requests it carries.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// recordingSQS counts requests and remembers, per request id, when its
// first timeout message was sent (by the simulated clock).
type recordingSQS struct {
	*awssqs.Client
	now      func() time.Time
	batches  atomic.Int64
	singles  atomic.Int64
	mu       sync.Mutex
	firstAt  map[string]time.Time
	messages int
}

func (r *recordingSQS) note(body string) {
	m, err := sqs.Decode(body)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages++
	if _, ok := r.firstAt[m.RequestID]; !ok {
		r.firstAt[m.RequestID] = r.now()
	}
}

func (r *recordingSQS) SendMessage(ctx context.Context, in *awssqs.SendMessageInput, o ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	r.singles.Add(1)
	r.note(aws.ToString(in.MessageBody))
	return r.Client.SendMessage(ctx, in, o...)
}

func (r *recordingSQS) SendMessageBatch(ctx context.Context, in *awssqs.SendMessageBatchInput, o ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	r.batches.Add(1)
	for _, e := range in.Entries {
		r.note(aws.ToString(e.MessageBody))
	}
	return r.Client.SendMessageBatch(ctx, in, o...)
}

// scaleParams are one run's sizes: the number of projects, of spawns
// (spread over the projects), and the shortest schedule period.
type scaleParams struct {
	projects, spawns int
	period           time.Duration
}

func scaleParamsFor(t *testing.T) scaleParams {
	p := scaleParams{projects: 1000, spawns: 100, period: 10 * time.Second}
	if testing.Short() {
		p = scaleParams{projects: 12, spawns: 12, period: time.Second}
	}
	if v, err := strconv.Atoi(os.Getenv("DONT_SCALE_PROJECTS")); err == nil && v > 0 {
		p.projects, p.spawns = v, min(p.spawns, v)
	}
	t.Logf("%d projects, %d spawns", p.projects, p.spawns)
	return p
}

// The scheduled sweep at scale, over the DynamoDB stand-in and fauxqs:
// every run fans out one sweep message per project (ten to a
// SendMessageBatch), consumers like Lambda's pollers (bounded
// concurrency, batches of ten) sweep each project, and the horizon sends
// each spawn's timeout message from the project's stored
// scheduled_until, so runs that come early, late or not at all leave no
// spawn without a message.
//
// The stand-in serialises every request and answers an index query by
// scanning the table, so a project's sweep costs it tens of
// milliseconds, where DynamoDB serves the sweeps in parallel. The first
// run calibrates: an idle project's sweep must be at most 7 requests, and
// the schedule's period is then 2.5 times what it took (the
// horizon 3.5 periods), so the rest runs in real time. Every later
// run's fan-out must be done within one period, every spawn's message
// must be sent before its expiry, and p99 of expires_at → committed
// timeout must be under 2 s.
func TestTheScheduledFanOutAtScaleTimesEverySpawnOutOnTime(t *testing.T) {
	sqsEndpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if sqsEndpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: eval \"$(bash localstack/standins.sh start)\" to run it")
	}
	p := scaleParamsFor(t)
	dynEndpoint, stop, err := standin.Dynamo()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())).UTC() }
	name := fmt.Sprintf("dont-scale-%d", time.Now().UnixNano())
	requests := &countingTransport{next: http.DefaultTransport}
	ddb := standin.Client(dynEndpoint, requests)
	if err := dynamo.CreateTable(ctx, ddb, name); err != nil {
		t.Fatal(err)
	}
	client := standin.SQSClient(sqsEndpoint, nil)
	queueURL := func(n string) string {
		q, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(n),
			Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "60"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
		return aws.ToString(q.QueueUrl)
	}
	timeoutsURL, workURL := queueURL(name+"-timeouts"), queueURL(name+"-sweeps")
	rec := &recordingSQS{Client: client, now: now, firstAt: map[string]time.Time{}}
	queue := &sqs.Queue{Client: rec, URL: timeoutsURL, Now: now, Horizon: time.Second}
	work := &sqs.Queue{Client: rec, URL: workURL, Now: now}

	d := &scaleDeployment{services: map[string]*service.Service{}, stores: map[string]*dynamo.Store{}}
	for i := range p.projects {
		pn := fmt.Sprintf("p%05d", i)
		st := dynamo.New(ddb, name, pn)
		d.names = append(d.names, pn)
		d.stores[pn] = st
		d.services[pn] = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: pn, Clock: now,
			SpawnTimeout: time.Hour, Author: "scale", Scheduler: queue.For(pn), ApprovalScheduler: queue.For(pn),
			Approvals: service.Approvals{Store: st, Scheduled: true}})
	}
	sweeper := &sqs.Sweeper{Queue: queue, Work: work, Projects: d, Limit: 100}

	// The spawns, an hour each (beyond the horizon: no message at issue),
	// issued four at a time into projects spread over the deployment.
	type issued struct{ project, id string }
	spawns := make([]issued, p.spawns)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	start := time.Now()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < p.spawns; i += 4 {
				pn := d.names[i*p.projects/p.spawns]
				svc := d.services[pn]
				c, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d", i)})
				if err == nil {
					_, _, err = svc.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: c.ID, Evidence: []string{"https://example.org/a"}})
				}
				var res service.Spawned
				if err == nil {
					res, _, err = svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: c.ID, Mode: spawn.ModeHarness})
				}
				if err != nil {
					errc <- err
					return
				}
				spawns[i] = issued{pn, request(t, res).RequestID}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Logf("issued %d spawns in %v", p.spawns, time.Since(start).Round(time.Millisecond))
	if n := rec.messages; n != 0 {
		t.Fatalf("issuing hour-long spawns sent %d messages, want none (beyond the horizon)", n)
	}
	// Lambda's pollers: long polls, batches of ten, at most conc batches
	// of each queue at once, each handled with a 60 s invocation deadline.
	var swept atomic.Int64
	pollCtx, stopPolling := context.WithCancel(ctx)
	var pollers sync.WaitGroup
	poll := func(url string, conc int, onDone func(events.SQSEvent, events.SQSEventResponse)) {
		for range conc {
			pollers.Add(1)
			go func() {
				defer pollers.Done()
				for pollCtx.Err() == nil {
					out, err := client.ReceiveMessage(pollCtx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
					if err != nil || len(out.Messages) == 0 {
						continue
					}
					ev := events.SQSEvent{}
					for _, m := range out.Messages {
						ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
					}
					ictx, done := context.WithTimeout(ctx, time.Minute)
					resp := sweeper.HandleSQS(ictx, ev)
					done()
					failed := map[string]bool{}
					for _, f := range resp.BatchItemFailures {
						failed[f.ItemIdentifier] = true
					}
					del := &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
					for i, r := range ev.Records {
						if !failed[r.MessageId] {
							del.Entries = append(del.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
						}
					}
					if len(del.Entries) > 0 {
						client.DeleteMessageBatch(ctx, del)
					}
					onDone(ev, resp)
				}
			}()
		}
	}
	var failures atomic.Int64
	poll(timeoutsURL, 10, func(_ events.SQSEvent, r events.SQSEventResponse) { failures.Add(int64(len(r.BatchItemFailures))) })
	poll(workURL, 5, func(ev events.SQSEvent, r events.SQSEventResponse) {
		failures.Add(int64(len(r.BatchItemFailures)))
		swept.Add(int64(len(ev.Records) - len(r.BatchItemFailures)))
	})
	defer func() { stopPolling(); pollers.Wait() }()

	// fanOut runs the schedule's run once and waits until every sweep
	// message it sent has been handled, up to limit.
	var enqueued int64
	fanOut := func(run int, limit time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		rep, err := sweeper.SweepAll(ctx, 0)
		if err != nil || rep.Enqueued != p.projects {
			t.Fatalf("run %d: %+v %v, want %d enqueued", run, rep, err, p.projects)
		}
		enqueued += int64(rep.Enqueued)
		for swept.Load() < enqueued {
			if time.Since(began) > limit {
				t.Fatalf("run %d: %d of %d sweep messages handled after %v", run, swept.Load()-(enqueued-int64(p.projects)), p.projects, time.Since(began))
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(began)
	}
	before := requests.n.Load()
	calibration := fanOut(-1, 5*time.Minute)
	perProject := float64(requests.n.Load()-before) / float64(p.projects)
	t.Logf("calibration run: %d idle projects swept in %v, %.1f DynamoDB requests each", p.projects, calibration.Round(time.Millisecond), perProject)
	// The budget that holds on DynamoDB, which serves the sweeps in
	// parallel: an idle project's sweep is at most 7 requests in sequence
	// (≈ 40 ms; the seventh is the due-reminders query, docs/approvals.md
	// "Reminders"), so 5 batches of 10 sweep 1,000 projects in about a
	// second. On the stand-in, which serialises them, the run must still
	// end within the sweep work queue's age alarm (5 minutes).
	if perProject > 7 {
		t.Errorf("an idle project's sweep made %.1f DynamoDB requests, want at most 7", perProject)
	}
	if calibration > 5*time.Minute {
		t.Errorf("the fan-out of %d projects took %v on the stand-in", p.projects, calibration)
	}
	// 2.5 times the calibration: a run that reads spawns from the horizon
	// costs more than an idle one. The horizon covers the longest gap between two
	// sweeps of one project: a missed run and the jitter (2.5 periods) plus
	// a fan-out's spread (up to a period).
	period := max(p.period, calibration*5/2).Round(100 * time.Millisecond)
	horizon := period * 7 / 2
	queue.Horizon, sweeper.IndexLag = horizon, horizon/20
	t.Logf("schedule period %v (jittered by ±25%%, every fourth run missed), horizon %v", period, horizon)

	// The first expiry.
	first := time.Time{}
	for _, s := range spawns {
		sp, err := d.stores[s.project].GetSpawn(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		if first.IsZero() || sp.ExpiresAt.Before(first) {
			first = sp.ExpiresAt
		}
	}
	// Skip ahead: the first run finds the first expiry 0.65 periods away,
	// inside its horizon (a horizon further out only makes the test wait;
	// the runs' jitter against the stored mark is
	// TestJitteredMissedAndRetriedRunsLeaveNoSpawnWithoutItsMessage's),
	// after its fan-out and before the next run can start. The stand-in
	// serialises every request: a timeout that lands during the fan-out
	// of 1,000 projects waits behind the sweeps' queued requests (p99
	// ≈ 3 s, measured), which DynamoDB, with no such lock, does not do.
	offset.Store(int64(time.Until(first.Add(-period * 65 / 100))))

	// The schedule: a run every period, jittered by ±25 %, every fourth
	// one missed (a gap of up to 2.5 periods), until every spawn has
	// ended. Each run must have fanned out and been consumed within one
	// period.
	resolved := func() (n int, lags []time.Duration) {
		for _, s := range spawns {
			sp, err := d.stores[s.project].GetSpawn(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			if sp.State == spawn.Resolved && sp.ResolvedAt != nil {
				n++
				lags = append(lags, sp.ResolvedAt.Sub(sp.ExpiresAt))
			}
		}
		return n, lags
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var fanouts []time.Duration
	deadline := time.Now().Add(horizon + 4*period + time.Duration(p.spawns)*100*time.Millisecond + 2*time.Minute)
	last := time.Now()
	for run := 0; ; run++ {
		jitter := time.Duration((rng.Float64()*0.5 - 0.25) * float64(period))
		if run > 0 {
			time.Sleep(time.Until(last.Add(period + jitter)))
		}
		last = time.Now()
		if run%4 == 3 {
			continue // missed
		}
		fanouts = append(fanouts, fanOut(run, 3*period))
		if n, _ := resolved(); n == p.spawns {
			break
		}
		if time.Now().After(deadline) {
			n, _ := resolved()
			t.Fatalf("after %d runs only %d of %d spawns ended", run+1, n, p.spawns)
		}
	}

	_, lags := resolved()
	slices.Sort(lags)
	slices.Sort(fanouts)
	q := func(s []time.Duration, f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
	t.Logf("fan-out per run (enqueue and sweep %d projects): median %v, max %v over %d runs; %d SendMessageBatch and %d SendMessage requests",
		p.projects, q(fanouts, 0.5).Round(time.Millisecond), fanouts[len(fanouts)-1].Round(time.Millisecond), len(fanouts), rec.batches.Load(), rec.singles.Load())
	t.Logf("timeout lag expires_at -> committed: p50 %v, p90 %v, p99 %v, max %v; %d by a due sweep, the rest by their message",
		q(lags, 0.5).Round(time.Millisecond), q(lags, 0.9).Round(time.Millisecond), q(lags, 0.99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond), d.backstop.Load())
	if m := fanouts[len(fanouts)-1]; m > period {
		t.Errorf("a run's fan-out took %v, more than the schedule's period (%v)", m, period)
	}
	if p99 := q(lags, 0.99); p99 > 2*time.Second || lags[0] < 0 {
		t.Errorf("timeout lag p99 %v (min %v), want within 2 s and never early", p99, lags[0])
	}
	if f := failures.Load(); f != 0 {
		t.Errorf("%d records failed", f)
	}
	// Gap-free: every spawn had its message, sent before its expiry.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range spawns {
		sp, _ := d.stores[s.project].GetSpawn(ctx, s.id)
		at, ok := rec.firstAt[s.id]
		if !ok || !at.Before(sp.ExpiresAt) {
			t.Errorf("spawn %s (expires %v): first message at %v (sent: %v), want one before its expiry", s.id, sp.ExpiresAt, at, ok)
		}
	}
	// A project whose horizon held a spawn stored its mark; an idle one
	// wrote nothing.
	idle := d.names[1]
	for _, s := range spawns {
		if s.project == idle {
			idle = ""
		}
	}
	for _, pn := range []string{spawns[0].project, spawns[len(spawns)-1].project, idle} {
		if pn == "" {
			continue
		}
		if su, err := d.stores[pn].ScheduledUntil(ctx); err != nil || su.IsZero() != (pn == idle) {
			t.Errorf("project %s: scheduled_until %v %v, want one stored for a project with spawns, none for an idle one", pn, su, err)
		}
	}
	t.Logf("%d timeout messages for %d spawns", rec.messages, p.spawns)
}
