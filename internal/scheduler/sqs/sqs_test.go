package sqs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

var ctx = context.Background()

func TestDelayRoundsUpAndStopsAtFifteenMinutes(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want int32
	}{
		{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2},
		{14*time.Minute + 59*time.Second + 1, 900}, {15 * time.Minute, 900}, {24 * time.Hour, 900},
	} {
		if got := sqs.Delay(c.in); got != c.want {
			t.Errorf("Delay(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestMessageBodyNamesProjectRequestAndExpiry(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC)
	m := sqs.Message{Project: "acme", RequestID: "spawn:01JDW0000000000000000000AA", ExpiresAt: at}
	body := m.Encode()
	if want := `{"v":1,"project":"acme","request_id":"spawn:01JDW0000000000000000000AA","expires_at":"2026-11-29T09:00:00.123456789Z"}`; body != want {
		t.Fatalf("body %s\nwant %s", body, want)
	}
	got, err := sqs.Decode(body)
	if err != nil || got.Project != "acme" || got.RequestID != m.RequestID || !got.ExpiresAt.Equal(at) {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"v":1}`, `{"v":2,"project":"a","request_id":"spawn:01JDW0000000000000000000AA","expires_at":"2026-11-29T09:00:00Z"}`,
		`{"v":1,"project":"","request_id":"spawn:01JDW0000000000000000000AA","expires_at":"2026-11-29T09:00:00Z"}`,
		`{"v":1,"project":"a","request_id":"claim:01JDW0000000000000000000AA","expires_at":"2026-11-29T09:00:00Z"}`,
		`{"v":1,"project":"a","request_id":"spawn:01JDW0000000000000000000AA"}`,
		`{"v":1,"project":"a","request_id":"ses:01JDW0000000000000000000AA","expires_at":"2026-11-29T09:00:00Z"}`,
	} {
		if _, err := sqs.Decode(bad); !errors.Is(err, sqs.ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// fakeSQS records sent messages; failing makes sends fail.
type fakeSQS struct {
	mu      sync.Mutex
	sent    []*awssqs.SendMessageInput
	failing atomic.Bool
}

func (f *fakeSQS) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	if f.failing.Load() {
		return nil, errors.New("queue unavailable")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &awssqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) take() []*awssqs.SendMessageInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sent
	f.sent = nil
	return s
}

// clock is a settable clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// world is a deployment: SQLite stores standing in for the project
// partitions of the table, one queue, one sweeper.
type world struct {
	t        *testing.T
	clock    *clock
	sqs      *fakeSQS
	queue    *sqs.Queue
	timeout  time.Duration
	mu       sync.Mutex
	services map[string]*service.Service
	stores   map[string]*sqlite.Store
	broken   map[string]bool
	sweeper  *sqs.Sweeper
}

func newWorld(t *testing.T, timeout time.Duration) *world {
	w := &world{t: t, clock: &clock{}, sqs: &fakeSQS{}, timeout: timeout,
		services: map[string]*service.Service{}, stores: map[string]*sqlite.Store{}, broken: map[string]bool{}}
	w.clock.ns.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	w.queue = &sqs.Queue{Client: w.sqs, URL: "http://127.0.0.1:1/000000000000/timeouts", Now: w.clock.Now}
	w.sweeper = &sqs.Sweeper{Queue: w.queue, Projects: w}
	return w
}

func (w *world) svc(project string) *service.Service {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.services[project]; ok {
		return s
	}
	st, err := sqlite.Create(ctx, filepath.Join(w.t.TempDir(), project+".db"))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { st.Close() })
	s := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Clock: w.clock.Now, SpawnTimeout: w.timeout, Author: "test", Scheduler: w.queue.For(project), ApprovalScheduler: w.queue.For(project),
		Approvals: service.Approvals{Store: st}})
	w.services[project], w.stores[project] = s, st
	return s
}

func (w *world) Project(_ context.Context, name string) (sqs.Timeouts, error) {
	w.mu.Lock()
	broken := w.broken[name]
	w.mu.Unlock()
	if broken {
		return nil, errors.New("store unavailable")
	}
	return w.svc(name), nil
}

func (w *world) List(context.Context) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for n := range w.services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// assume concludes and verifies a claim, then assumes it: the spawn's
// message is returned as SQS would deliver it.
func (w *world) assume(project string) (entityID, requestID string, msg events.SQSMessage) {
	w.t.Helper()
	entityID, req, sent := w.issue(project)
	if len(sent) != 1 {
		w.t.Fatalf("issuing a spawn sent %d messages, want 1", len(sent))
	}
	return entityID, req.RequestID, delivered(sent[0], req.RequestID)
}

// issue is issueFor with the project's spawn timeout.
func (w *world) issue(project string) (entityID string, req spawn.Request, sent []*awssqs.SendMessageInput) {
	w.t.Helper()
	return w.issueFor(project, w.svc(project).SpawnTimeout)
}

var msgSeq atomic.Int64

func delivered(in *awssqs.SendMessageInput, tag string) events.SQSMessage {
	return events.SQSMessage{MessageId: fmt.Sprintf("m-%d-%s", msgSeq.Add(1), tag), Body: *in.MessageBody, EventSource: "aws:sqs"}
}

func (w *world) timeouts(project, entityID string) []ledger.Event {
	w.t.Helper()
	evs, err := w.stores[project].Events(ctx, entityID)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []ledger.Event
	for _, e := range evs {
		if e.Kind == ledger.EvSpawnTimeout {
			out = append(out, e)
		}
	}
	return out
}

func (w *world) status(project, entityID string) ledger.Status {
	e, err := w.stores[project].GetEntity(ctx, entityID)
	if err != nil {
		w.t.Fatal(err)
	}
	return e.Status
}

func failures(r events.SQSEventResponse) []string {
	out := []string{}
	for _, f := range r.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func TestASpawnDueWithinFifteenMinutesSendsOneMessageDelayedUntilItsExpiry(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		delay   int32
	}{{90 * time.Second, 90}, {1500 * time.Millisecond, 2}, {2 * time.Minute, 120}, {15 * time.Minute, 900}} {
		w := newWorld(t, c.timeout)
		_, req, sent := w.issue("acme")
		if len(sent) != 1 {
			t.Fatalf("timeout %v: %d messages, want exactly 1", c.timeout, len(sent))
		}
		if sent[0].DelaySeconds != c.delay || *sent[0].QueueUrl != w.queue.URL {
			t.Errorf("timeout %v: DelaySeconds %d (want %d), queue %s", c.timeout, sent[0].DelaySeconds, c.delay, *sent[0].QueueUrl)
		}
		m, err := sqs.Decode(*sent[0].MessageBody)
		if err != nil || m.Project != "acme" || m.RequestID != req.RequestID || !m.ExpiresAt.Equal(req.ExpiresAt) {
			t.Errorf("message %+v %v, want acme %s %v", m, err, req.RequestID, req.ExpiresAt)
		}
	}
}

// Beyond the horizon a spawn costs no message when it is issued: the
// scheduled sweep sends it one when its expiry comes within 15 minutes
// (TestA24HourSpawnIsTimedOutByTheOneMessageTheScheduledSweepSends), and
// a callback before then means it never gets one.
func TestASpawnIssuedWithA24HourTimeoutSendsNoMessage(t *testing.T) {
	for _, timeout := range []time.Duration{24 * time.Hour, 15*time.Minute + time.Second} {
		w := newWorld(t, timeout)
		if _, req, sent := w.issue("acme"); len(sent) != 0 || req.ExpiresAt.Sub(req.IssuedAt) != timeout {
			t.Fatalf("timeout %v (expires_at %v): %d messages, want none", timeout, req.ExpiresAt, len(sent))
		}
	}
}

func TestADueMessageTimesOutTheSpawnAndRestoresItsStatus(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	eid, rid, msg := w.assume("acme")
	if st := w.status("acme", eid); st != ledger.Unverified {
		t.Fatalf("under review: %s", st)
	}
	w.clock.Advance(90 * time.Second)
	resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	to := w.timeouts("acme", eid)
	if len(to) != 1 || to[0].RequestID != rid || to[0].Outcome != string(spawn.TimeoutRestored) {
		t.Fatalf("timeouts %+v", to)
	}
	if st := w.status("acme", eid); st != ledger.Verified {
		t.Fatalf("status %s, want verified restored", st)
	}
}

func TestDuplicateDeliveryOfTheSameMessageIsANoOp(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	eid, _, msg := w.assume("acme")
	w.clock.Advance(2 * time.Minute)
	dup := msg
	dup.MessageId += "-again" // SQS redelivers with the same body
	// The same message twice in one batch, handled concurrently, then again later.
	resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg, dup}})
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	out, err := w.sweeper.Expire(ctx, mustDecode(t, msg.Body))
	if err != nil || out != sqs.OutcomeResolved {
		t.Fatalf("third delivery: %s %v, want %s", out, err, sqs.OutcomeResolved)
	}
	if to := w.timeouts("acme", eid); len(to) != 1 {
		t.Fatalf("%d spawn_timeout events, want exactly 1", len(to))
	}
	if n := len(w.sqs.take()); n != 0 {
		t.Fatalf("a duplicate sent %d messages", n)
	}
}

func TestAMessageAfterTheCallbackChangesNothing(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	eid, rid, msg := w.assume("acme")
	s := w.svc("acme")
	if _, _, err := s.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: eid, RequestID: rid, Reason: "the cited table gives 99.97 C at 1 atm"}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(2 * time.Minute)
	out, err := w.sweeper.Expire(ctx, mustDecode(t, msg.Body))
	if err != nil || out != sqs.OutcomeResolved {
		t.Fatalf("%s %v", out, err)
	}
	if st := w.status("acme", eid); st != ledger.Doubted {
		t.Fatalf("status %s, want doubted (the callback won)", st)
	}
	if to := w.timeouts("acme", eid); len(to) != 0 {
		t.Fatalf("spawn_timeout recorded after the callback: %+v", to)
	}
}

// A message can still arrive before its spawn is due: one an older build
// sent when the spawn was issued, a day ahead, or one a clock behind the
// queue's finds early. It is sent on for the remainder.
func TestAMessageThatIsNotYetDueIsSentOnForTheRemainder(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	eid, req, _ := w.issue("acme")
	rid := req.RequestID
	msg := delivered(&awssqs.SendMessageInput{MessageBody: aws.String(sqs.Message{Project: "acme", RequestID: rid, ExpiresAt: req.ExpiresAt}.Encode())}, rid)
	for i, left := range []time.Duration{24*time.Hour - 15*time.Minute, 24*time.Hour - 30*time.Minute} {
		w.clock.Advance(15 * time.Minute) // each delivery arrives after the maximum delay
		resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
		if f := failures(resp); len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
		sent := w.sqs.take()
		if len(sent) != 1 || sent[0].DelaySeconds != 900 {
			t.Fatalf("delivery %d (%v left): sent %d messages", i, left, len(sent))
		}
		if *sent[0].MessageBody != msg.Body {
			t.Fatalf("the remainder's body %s differs from %s", *sent[0].MessageBody, msg.Body)
		}
		msg = delivered(sent[0], rid)
	}
	// The last leg is shorter than 15 minutes: delayed by what is left.
	w.clock.Advance(24*time.Hour - 30*time.Minute - 100*time.Second)
	w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	sent := w.sqs.take()
	if len(sent) != 1 || sent[0].DelaySeconds != 100 {
		t.Fatalf("last leg: %d messages, delay %d, want 100", len(sent), sent[0].DelaySeconds)
	}
	if to := w.timeouts("acme", eid); len(to) != 0 {
		t.Fatal("timed out early")
	}
	w.clock.Advance(100 * time.Second)
	w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{delivered(sent[0], rid)}})
	if to := w.timeouts("acme", eid); len(to) != 1 {
		t.Fatalf("%d timeouts after the last leg", len(to))
	}
}

// SQS delays are whole seconds and clocks differ: a message a fraction of a
// second early is waited out in place rather than sent round again.
func TestAMessageMomentsEarlyIsWaitedOutInPlace(t *testing.T) {
	w := newWorld(t, 800*time.Millisecond)
	// Real time for this one: the sweeper really waits.
	realClock := func() time.Time { return time.Now().UTC() }
	w.queue.Now, w.svc("acme").Clock = realClock, realClock
	eid, _, msg := w.assume("acme")
	start := time.Now()
	resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if n := len(w.sqs.take()); n != 0 {
		t.Fatalf("sent %d messages instead of waiting", n)
	}
	if to := w.timeouts("acme", eid); len(to) != 1 {
		t.Fatalf("%d timeouts", len(to))
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("waited only %v", waited)
	}
}

func TestOnlyFailedRecordsAreReportedForRedelivery(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	eidOK, _, ok := w.assume("acme")
	_, _, broken := w.assume("globex")
	w.clock.Advance(90 * time.Second) // both due
	_, _, notYet := w.assumeWithTimeout("acme", 10*time.Minute)
	w.mu.Lock()
	w.broken["globex"] = true // its store fails: retry later
	w.mu.Unlock()
	w.sqs.failing.Store(true) // the not-due message cannot be sent on: it must be retried, not vanish
	malformed := events.SQSMessage{MessageId: "m-bad", Body: `{"hello":"world"}`}
	unknown := events.SQSMessage{MessageId: "m-unknown", Body: sqs.Message{Project: "acme", RequestID: "spawn:01JDW0000000000000000000AA", ExpiresAt: w.clock.Now()}.Encode()}

	resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{ok, broken, malformed, unknown, notYet}})
	got := strings.Join(failures(resp), " ")
	want := strings.Join([]string{broken.MessageId, malformed.MessageId, notYet.MessageId}, " ")
	if got != want {
		t.Fatalf("batchItemFailures %q, want %q", got, want)
	}
	if to := w.timeouts("acme", eidOK); len(to) != 1 {
		t.Fatalf("the good record was not applied: %d timeouts", len(to))
	}
}

// assumeWithTimeout issues a spawn with its own timeout; its message is
// returned as SQS would deliver it.
func (w *world) assumeWithTimeout(project string, timeout time.Duration) (string, string, events.SQSMessage) {
	w.t.Helper()
	s := w.svc(project)
	old := s.SpawnTimeout
	s.SpawnTimeout = timeout
	defer func() { s.SpawnTimeout = old }()
	return w.assume(project)
}

func TestTheScheduledSweepExpiresSpawnsWhoseMessageWasLostInEveryProject(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	a, _, _ := w.assume("acme") // messages dropped on the floor
	g, _, _ := w.assume("globex")
	w.svc("initech") // a project with nothing due
	w.clock.Advance(2 * time.Minute)
	rep, err := w.sweeper.SweepAll(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Projects) != 3 || rep.Projects[0].TimedOut != 1 || rep.Projects[1].TimedOut != 1 || rep.Projects[2].TimedOut != 0 {
		t.Fatalf("report %+v", rep)
	}
	if w.status("acme", a) != ledger.Verified || w.status("globex", g) != ledger.Verified {
		t.Fatal("status not restored")
	}
	// Idempotent: again, nothing to do.
	rep, err = w.sweeper.SweepAll(ctx, 100)
	if err != nil || rep.Projects[0].TimedOut+rep.Projects[1].TimedOut != 0 {
		t.Fatalf("second sweep %+v %v", rep, err)
	}
}

func TestOneProjectsFailureDoesNotStopTheScheduledSweepOfTheOthers(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	w.assume("acme")
	g, _, _ := w.assume("globex")
	w.clock.Advance(2 * time.Minute)
	w.mu.Lock()
	w.broken["acme"] = true
	w.mu.Unlock()
	rep, err := w.sweeper.SweepAll(ctx, 100)
	if err == nil || !strings.Contains(err.Error(), "acme") {
		t.Fatalf("err = %v, want acme's failure", err)
	}
	if rep.Projects[0].Error == "" || rep.Projects[1].TimedOut != 1 || w.status("globex", g) != ledger.Verified {
		t.Fatalf("report %+v", rep)
	}
}

func request(t *testing.T, res service.Spawned) spawn.Request {
	t.Helper()
	var req spawn.Request
	if err := json.Unmarshal(res.Request, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

func mustDecode(t *testing.T, body string) sqs.Message {
	t.Helper()
	m, err := sqs.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
