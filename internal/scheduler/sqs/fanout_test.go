package sqs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// storedHorizons is the world with each project's scheduled_until kept,
// as the DynamoDB store keeps it.
type storedHorizons struct {
	*world
	mu    sync.Mutex
	marks map[string]time.Time
}

type mark struct {
	h       *storedHorizons
	project string
}

func (h *storedHorizons) Horizon(_ context.Context, project string) (sqs.Horizon, error) {
	return mark{h, project}, nil
}

func (m mark) ScheduledUntil(context.Context) (time.Time, error) {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	return m.h.marks[m.project], nil
}

func (m mark) AdvanceScheduledUntil(_ context.Context, t time.Time) (bool, error) {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	if !t.After(m.h.marks[m.project]) {
		return false, nil
	}
	m.h.marks[m.project] = t
	return true, nil
}

// The horizon under a schedule that runs early, late, twice (a retry) or
// not at all: with the stored scheduled_until every spawn gets its
// message before its expiry, never arriving early; the window of the
// last minute alone (no stored mark) leaves spawns without one.
func TestJitteredMissedAndRetriedRunsLeaveNoSpawnWithoutItsMessage(t *testing.T) {
	for _, stored := range []bool{true, false} {
		w := newWorld(t, 24*time.Hour)
		if stored {
			w.sweeper.Projects = &storedHorizons{world: w, marks: map[string]time.Time{}}
		}
		expiry := map[string]time.Time{}
		for i := range 60 { // one every 20 s, from 16 to 36 minutes out
			_, req, _ := w.issueFor("acme", 16*time.Minute+time.Duration(i)*20*time.Second)
			expiry[req.RequestID] = req.ExpiresAt
		}
		rng := rand.New(rand.NewPCG(7, 11))
		sent := map[string]time.Time{}
		for run := 0; run < 40; run++ {
			w.clock.Advance(time.Minute + time.Duration(rng.IntN(50)-20)*time.Second) // 40 s to 89 s apart
			times := 1
			switch run % 7 {
			case 3:
				continue // missed
			case 5:
				times = 2 // retried
			}
			for range times {
				if _, err := w.sweeper.SweepAll(ctx, 100); err != nil {
					t.Fatal(err)
				}
			}
			for _, in := range w.sqs.take() {
				m := mustDecode(t, *in.MessageBody)
				arrives := w.clock.Now().Add(time.Duration(in.DelaySeconds) * time.Second)
				if arrives.Before(m.ExpiresAt) || arrives.Sub(m.ExpiresAt) >= time.Second || in.DelaySeconds > 900 {
					t.Errorf("stored %v: %s sent with DelaySeconds %d arrives %v after its expiry", stored, m.RequestID, in.DelaySeconds, arrives.Sub(m.ExpiresAt))
				}
				if _, ok := sent[m.RequestID]; !ok {
					sent[m.RequestID] = w.clock.Now()
				}
			}
		}
		missing := 0
		for id, at := range expiry {
			if s, ok := sent[id]; !ok || !s.Before(at) {
				missing++
			}
		}
		switch {
		case stored && missing != 0:
			t.Errorf("with scheduled_until stored, %d of %d spawns had no message before their expiry", missing, len(expiry))
		case !stored && missing == 0:
			t.Errorf("with the last minute's window alone no spawn lacked a message: the schedule has no gap to show")
		}
		t.Logf("stored %v: %d of %d spawns without a message before expiry", stored, missing, len(expiry))
	}
}

// A project's sweep has no fixed cap: it pages through all that is due.
func TestAProjectSweepPagesThroughEverythingDue(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	for range 250 {
		w.issue("acme")
	}
	w.sqs.take()
	w.clock.Advance(2 * time.Minute)
	w.sweeper.Limit = 100
	ps, err := w.sweeper.SweepProject(ctx, "acme", 0)
	if err != nil || ps.TimedOut != 250 || ps.Requeued {
		t.Fatalf("%+v %v: want all 250 due spawns timed out by one sweep", ps, err)
	}
}

// A sweep that runs short of the invocation's time stops between pages and
// sends its project's sweep message again; the next delivery does the rest.
func TestASweepShortOfTimeSendsItsProjectAgain(t *testing.T) {
	w := newWorld(t, 90*time.Second)
	for range 150 {
		w.issue("acme")
	}
	w.sqs.take()
	w.clock.Advance(2 * time.Minute)
	const workURL = "http://127.0.0.1:1/000000000000/sweeps"
	w.sweeper.Work = &sqs.Queue{Client: w.sqs, URL: workURL}
	w.sweeper.Limit, w.sweeper.Reserve = 100, time.Minute
	msg := events.SQSMessage{MessageId: "w1", Body: sqs.SweepMessage{Sweep: "acme"}.Encode(), EventSource: "aws:sqs"}
	short, cancel := context.WithTimeout(ctx, 30*time.Second) // less than Reserve is left
	defer cancel()
	if f := failures(w.sweeper.HandleSQS(short, events.SQSEvent{Records: []events.SQSMessage{msg}})); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	again := w.sqs.take()
	if len(again) != 1 || *again[0].QueueUrl != workURL || *again[0].MessageBody != `{"v":1,"sweep":"acme"}` {
		t.Fatalf("sent %v, want acme's sweep message again", again)
	}
	pending := func() int {
		list, err := w.stores["acme"].ListSpawns(ctx, store.SpawnFilter{State: spawn.Pending})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	if n := pending(); n != 50 {
		t.Fatalf("%d spawns pending after the short sweep, want 50 (one page of 100 done)", n)
	}
	if f := failures(w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})); len(f) != 0 || pending() != 0 || len(w.sqs.take()) != 0 {
		t.Fatalf("failures %v, %d pending: want the rest done and nothing sent again", f, pending())
	}
}

// A malformed or foreign body on the work queue is not a sweep message: it
// fails like any malformed timeout message, for the dead-letter queue.
func TestAMalformedSweepMessageIsLeftForTheDeadLetterQueue(t *testing.T) {
	w := newWorld(t, time.Hour)
	for _, body := range []string{`{"v":1,"sweep":""}`, `{"v":9,"sweep":"acme"}`, `{"sweep":"acme"}`} {
		if f := failures(w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "x", Body: body}}})); len(f) != 1 {
			t.Errorf("%s: failures %v, want the record failed", body, f)
		}
	}
}

// batchSQS records SendMessageBatch calls; a body containing "refuse" is
// answered as a failed entry.
type batchSQS struct {
	mu      sync.Mutex
	batches [][]string
}

func (b *batchSQS) SendMessage(context.Context, *awssqs.SendMessageInput, ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	return nil, errors.New("SendMessage called: batches expected")
}

func (b *batchSQS) SendMessageBatch(_ context.Context, in *awssqs.SendMessageBatchInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := &awssqs.SendMessageBatchOutput{}
	var bodies []string
	for _, e := range in.Entries {
		bodies = append(bodies, *e.MessageBody)
		if strings.Contains(*e.MessageBody, "refuse") {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
		}
	}
	b.batches = append(b.batches, bodies)
	return out, nil
}

func TestSweepMessagesGoOutTenToABatchAndFailuresAreNamed(t *testing.T) {
	b := &batchSQS{}
	q := &sqs.Queue{Client: b, URL: "http://127.0.0.1:1/000000000000/sweeps"}
	var names []string
	for i := range 25 {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	names[17] = "refuse-me"
	n, err := q.SendSweeps(ctx, names)
	if n != 24 || err == nil || !strings.Contains(err.Error(), "project refuse-me") {
		t.Fatalf("sent %d, %v: want 24 sent and the refused project named", n, err)
	}
	sizes := map[int]int{}
	for _, bb := range b.batches {
		sizes[len(bb)]++
	}
	if len(b.batches) != 3 || sizes[10] != 2 || sizes[5] != 1 {
		t.Fatalf("batches of sizes %v, want 10, 10 and 5", sizes)
	}
}
