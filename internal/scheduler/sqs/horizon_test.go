package sqs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

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
	res, err := s.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim under a %v spawn", timeout)})
	if err != nil {
		w.t.Fatal(err)
	}
	entityID = res.Data.(service.EntityView).ID
	if _, err := s.Transition(ctx, service.TransitionInput{Action: ledger.Dismiss, EntityID: entityID, Evidence: []string{"https://example.org/a"}}); err != nil {
		w.t.Fatal(err)
	}
	res, err = s.RequestSpawn(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: entityID})
	if err != nil {
		w.t.Fatal(err)
	}
	return entityID, request(w.t, res), w.sqs.take()
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
			if _, err := w.svc("acme").Transition(ctx, service.TransitionInput{Action: ledger.Trust, EntityID: entities[4], RequestID: ids[4],
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
