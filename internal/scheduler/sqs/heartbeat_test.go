package sqs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/tools"
)

// A heartbeat moves a spawn's expiry after its message was sent: the
// message that arrives at the old expiry must not time the spawn out; it
// re-checks the stored expiry and is sent on for the new one, whose
// delivery then times it out.
func TestAMessageForAnExpiryAHeartbeatMovedIsSentOnForTheNewExpiry(t *testing.T) {
	w := newWorld(t, 10*time.Minute)
	eid, rid, msg := w.assume("acme")
	w.clock.Advance(8 * time.Minute)
	if _, err := tools.Call(ctx, w.svc("acme"), "spawns.heartbeat", map[string]any{"request_id": rid, "extend": "20m"}); err != nil {
		t.Fatal(err)
	}
	newExpiry := w.clock.Now().Add(20 * time.Minute)
	w.sqs.take()                     // the heartbeat's own message for the new expiry (within the horizon)
	w.clock.Advance(2 * time.Minute) // the old expiry
	w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if to := w.timeouts("acme", eid); len(to) != 0 {
		t.Fatal("a message for the old expiry timed out a spawn whose expiry moved")
	}
	sent := w.sqs.take()
	if len(sent) != 1 || sent[0].DelaySeconds != 900 {
		t.Fatalf("the old message was not sent on for the remainder: %d messages", len(sent))
	}
	m, err := sqs.Decode(*sent[0].MessageBody)
	if err != nil || !m.ExpiresAt.Equal(newExpiry) || !strings.Contains(*sent[0].MessageBody, rid) {
		t.Fatalf("sent on with expiry %v, want %v (%v)", m.ExpiresAt, newExpiry, err)
	}
	w.clock.Advance(15 * time.Minute)
	w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{delivered(sent[0], rid)}})
	last := w.sqs.take()
	if len(last) != 1 || last[0].DelaySeconds != 180 {
		t.Fatalf("last leg: %d messages", len(last))
	}
	w.clock.Advance(3 * time.Minute)
	w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{delivered(last[0], rid)}})
	if to := w.timeouts("acme", eid); len(to) != 1 {
		t.Fatalf("%d timeouts at the new expiry, want 1", len(to))
	}
}
