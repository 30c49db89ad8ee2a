package sqs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// issueFor concludes and verifies a claim, then assumes it with its own
// timeout: the request and the messages issuing it sent.
func (w *world) issueFor(project string, timeout time.Duration) (entityID string, req spawn.Request, sent []*awssqs.SendMessageInput) {
	w.t.Helper()
	s := w.svc(project)
	old := s.SpawnTimeout
	s.SpawnTimeout = timeout
	defer func() { s.SpawnTimeout = old }()
	res, err := s.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim under a %v spawn", timeout)})
	if err != nil {
		w.t.Fatal(err)
	}
	entityID = res.ID
	if _, _, err := s.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: entityID, Evidence: []string{"https://example.org/a"}}); err != nil {
		w.t.Fatal(err)
	}
	res2, _, err := s.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: entityID})
	if err != nil {
		w.t.Fatal(err)
	}
	return entityID, request(w.t, res2), w.sqs.take()
}

// sentFor decodes sent messages by request id, failing on anything that
// is not a timeout message.
func sentFor(t *testing.T, sent []*awssqs.SendMessageInput) map[string][]*awssqs.SendMessageInput {
	t.Helper()
	out := map[string][]*awssqs.SendMessageInput{}
	for _, in := range sent {
		m := mustDecode(t, *in.MessageBody)
		out[m.RequestID] = append(out[m.RequestID], in)
	}
	return out
}

func TestTheScheduledSweepSendsEachSpawnOneMessageOnceItsExpiryIsWithinFifteenMinutes(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	// The minute (scheduled sweep) that must send each spawn its message; 0: none.
	cases := []struct {
		timeout time.Duration
		minute  int
	}{
		{16 * time.Minute, 1},                // the upper end of minute 1's window (15m, 16m]
		{17*time.Minute + 30*time.Second, 3}, // in (17m, 18m]
		{20 * time.Minute, 5},
		{24 * time.Hour, 0},   // a day away
		{25 * time.Minute, 0}, // resolved by its callback at minute 2
		{90 * time.Second, 0}, // sent its message when issued; due, swept at minute 2
	}
	ids := make([]string, len(cases))
	entities := make([]string, len(cases))
	for i, c := range cases {
		e, req, _ := w.issueFor("acme", c.timeout)
		ids[i], entities[i] = req.RequestID, e
	}
	sentAt := map[string][]int{}
	for minute := 1; minute <= 30; minute++ {
		w.clock.Advance(time.Minute)
		if minute == 2 {
			if _, _, err := w.svc("acme").Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: entities[4], RequestID: ids[4],
				Reason: "the cited table gives 99.97 C at 1 atm"}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := w.sweeper.SweepAll(ctx, 100)
		if err != nil {
			t.Fatalf("minute %d: %v", minute, err)
		}
		sent := w.sqs.take()
		if rep.Projects[0].Scheduled != len(sent) {
			t.Fatalf("minute %d: report says %d scheduled, %d sent", minute, rep.Projects[0].Scheduled, len(sent))
		}
		for id, ins := range sentFor(t, sent) {
			for _, in := range ins {
				sentAt[id] = append(sentAt[id], minute)
				if in.DelaySeconds <= 14*60 || in.DelaySeconds > 900 {
					t.Errorf("minute %d: %s sent with DelaySeconds %d, want in (840, 900]", minute, id, in.DelaySeconds)
				}
			}
		}
	}
	for i, c := range cases {
		want := []int{}
		if c.minute > 0 {
			want = []int{c.minute}
		}
		if got := sentAt[ids[i]]; !slices.Equal(got, want) {
			t.Errorf("timeout %v: messages sent at minutes %v, want %v", c.timeout, got, want)
		}
	}

	// A spawn already due is the due sweep's, never the horizon's, however
	// far back the window reaches: only the spawn still to come is sent.
	_, due, _ := w.issueFor("acme", 2*time.Minute)
	_, soon, _ := w.issueFor("acme", 3*time.Minute+30*time.Second)
	w.clock.Advance(3 * time.Minute)
	n, err := w.svc("acme").ScheduleComingDue(ctx, time.Minute, time.Hour, 100)
	sent := sentFor(t, w.sqs.take())
	if err != nil || n != 1 || len(sent) != 1 || len(sent[soon.RequestID]) != 1 || sent[soon.RequestID][0].DelaySeconds != 30 {
		t.Fatalf("sent %v (%d, %v): want one message, for %s with DelaySeconds 30, none for the due %s", sent, n, err, soon.RequestID, due.RequestID)
	}
}

// The horizon's messages are sent after the due sweeps, and a failed send
// fails the project like a failed sweep, so that EventBridge retries.
func TestAFailedHorizonSendFailsTheProjectsScheduledSweep(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	w.issueFor("acme", 16*time.Minute)
	w.clock.Advance(time.Minute)
	w.sqs.failing.Store(true)
	rep, err := w.sweeper.SweepAll(ctx, 100)
	if err == nil || !slices.ContainsFunc(rep.Projects, func(ps sqs.ProjectSweep) bool { return ps.Project == "acme" && ps.Error != "" && ps.Scheduled == 0 }) {
		t.Fatalf("report %+v, err %v: want acme failed with nothing scheduled", rep, err)
	}
}

// inFlight is a sent message as SQS holds it: visible from at.
type inFlight struct {
	at  time.Time
	msg events.SQSMessage
}

// lifecycle is what a simulated deployment did.
type lifecycle struct {
	sweeps, sends, deliveries int
	// sweptTimedOut counts what the scheduled sweep's due sweeps ended
	// (spawns and questions), sentAt when each message was sent.
	sweptTimedOut int
	sentAt        []time.Time
}

// simulate runs the deployment on the world's clock until end, as AWS
// would: the scheduled sweep every minute from now on (EventBridge's
// rate(1 minute)), and every message sent, then or by the sweeper,
// handed to the sweeper as soon as its DelaySeconds have passed (Lambda's
// SQS poller, in batches of up to 10). sent are the messages already in
// flight, sent now. Nothing sleeps: the clock jumps from event to event.
func (w *world) simulate(end time.Time, sent []*awssqs.SendMessageInput) lifecycle {
	w.t.Helper()
	var run lifecycle
	var queue []inFlight
	enqueue := func(sent []*awssqs.SendMessageInput) {
		for _, in := range sent {
			run.sends++
			run.sentAt = append(run.sentAt, w.clock.Now())
			queue = append(queue, inFlight{at: w.clock.Now().Add(time.Duration(in.DelaySeconds) * time.Second), msg: delivered(in, "sim")})
		}
		slices.SortStableFunc(queue, func(a, b inFlight) int { return a.at.Compare(b.at) })
	}
	enqueue(sent)
	nextSweep := w.clock.Now().Add(time.Minute)
	for {
		next := nextSweep
		if len(queue) > 0 && queue[0].at.Before(next) {
			next = queue[0].at
		}
		if next.After(end) {
			return run
		}
		w.clock.Advance(next.Sub(w.clock.Now()))
		var batch []events.SQSMessage
		for len(queue) > 0 && !queue[0].at.After(next) && len(batch) < 10 {
			batch, queue = append(batch, queue[0].msg), queue[1:]
		}
		if len(batch) > 0 {
			run.deliveries += len(batch)
			if f := failures(w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: batch})); len(f) != 0 {
				w.t.Fatalf("%v: failed records %v", next, f)
			}
			enqueue(w.sqs.take())
			continue // the sweep due at this instant runs on the next turn
		}
		rep, err := w.sweeper.SweepAll(ctx, 100)
		if err != nil {
			w.t.Fatalf("%v: scheduled sweep: %v", next, err)
		}
		run.sweeps++
		for _, ps := range rep.Projects {
			run.sweptTimedOut += ps.TimedOut + ps.ApprovalsTimedOut
		}
		enqueue(w.sqs.take())
		nextSweep = nextSweep.Add(time.Minute)
	}
}

func TestA24HourSpawnIsTimedOutByTheOneMessageTheScheduledSweepSends(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	eid, req, sent := w.issue("acme")
	if len(sent) != 0 {
		t.Fatalf("issuing sent %d messages", len(sent))
	}
	run := w.simulate(req.ExpiresAt.Add(2*time.Minute), sent)
	if run.sends != 1 || run.deliveries != 1 || run.sweptTimedOut != 0 {
		t.Fatalf("%+v: want one message, sent by the scheduled sweep, delivered once, and no due sweep needed", run)
	}
	if ahead := req.ExpiresAt.Sub(run.sentAt[0]); ahead <= 14*time.Minute || ahead > sqs.MaxDelay {
		t.Fatalf("the message was sent %v before expiry, want within the last 15 minutes but not the last 14", ahead)
	}
	to := w.timeouts("acme", eid)
	if len(to) != 1 || to[0].RequestID != req.RequestID || to[0].Outcome != string(spawn.TimeoutRestored) {
		t.Fatalf("timeouts %+v", to)
	}
	if at, _ := time.Parse(time.RFC3339Nano, to[0].Detail["timed_out_at"].(string)); at.Before(req.ExpiresAt) || at.Sub(req.ExpiresAt) >= time.Second {
		t.Fatalf("timed out at %v, want at expires_at %v (within the second SQS rounds up to)", at, req.ExpiresAt)
	}
	if st := w.status("acme", eid); st != ledger.Verified {
		t.Fatalf("status %s, want verified restored", st)
	}
	t.Logf("a 24 h spawn: %d scheduled sweeps, %d message, %d delivery", run.sweeps, run.sends, run.deliveries)
}

// The message is what the horizon saves: a spawn resolved by its callback
// more than 15 minutes before expiry costs none, over its whole life.
func TestA24HourSpawnResolvedByItsCallbackNeverSendsAMessage(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	eid, req, sent := w.issue("acme")
	w.simulate(w.clock.Now().Add(time.Hour), sent)
	if _, _, err := w.svc("acme").Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Doubt, EntityID: eid, RequestID: req.RequestID,
		Reason: "the cited table gives 99.97 C at 1 atm"}); err != nil {
		t.Fatal(err)
	}
	run := w.simulate(req.ExpiresAt.Add(2*time.Minute), nil)
	if run.sends != 0 || run.deliveries != 0 || len(w.timeouts("acme", eid)) != 0 {
		t.Fatalf("%+v: want no message, no delivery and no timeout", run)
	}
}

func TestAQuestionWithAnHourToAnswerIsTimedOutByTheOneMessageTheScheduledSweepSends(t *testing.T) {
	w := newWorld(t, 24*time.Hour)
	w.svc("acme").Approvals.Timeout = time.Hour
	session, id, sent := w.asking("acme")
	if len(sent) != 0 {
		t.Fatalf("asking sent %d messages, want none an hour ahead", len(sent))
	}
	deadline := w.approval("acme", id).Deadline
	run := w.simulate(deadline.Add(2*time.Minute), sent)
	if run.sends != 1 || run.deliveries != 1 || run.sweptTimedOut != 0 {
		t.Fatalf("%+v: want one message, sent by the scheduled sweep, delivered once, and no due sweep needed", run)
	}
	a := w.approval("acme", id)
	if a.Verdict != approvals.TimedOut || a.Cause != approvals.CauseDeadline || a.ResolvedAt == nil || a.ResolvedAt.Before(deadline) || a.ResolvedAt.Sub(deadline) >= time.Second {
		t.Fatalf("approval %+v, want timed out at its deadline %v", a, deadline)
	}
	if e := w.endings("acme", session); len(e) != 1 {
		t.Fatalf("%d ending frames", len(e))
	}
}
