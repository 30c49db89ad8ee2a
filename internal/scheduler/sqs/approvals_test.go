package sqs_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
)

// ask opens a session in project, reads its frames (a live subscriber) and
// escalates without waiting. The question's message is returned as SQS
// would deliver it, with the DelaySeconds it was sent with noted in its
// attributes under "delay" (a note for the test, not an SQS attribute).
func (w *world) ask(project string) (session, id string, msg events.SQSMessage) {
	w.t.Helper()
	session, id, sent := w.asking(project)
	if len(sent) != 1 {
		w.t.Fatalf("asking a question sent %d messages, want 1", len(sent))
	}
	msg = delivered(sent[0], id)
	msg.Attributes = map[string]string{"delay": strconv.Itoa(int(sent[0].DelaySeconds))}
	return session, id, msg
}

// asking opens a session in project, reads its frames and escalates
// without waiting: the question and the messages asking it sent.
func (w *world) asking(project string) (session, id string, sent []*awssqs.SendMessageInput) {
	w.t.Helper()
	s := w.svc(project)
	res, err := s.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: string(approvals.ReadOnly)})
	if err != nil {
		w.t.Fatal(err)
	}
	session = res.ID
	if _, err := s.Escalations.Frames(ctx, service.FramesInput{SessionID: session, Subscriber: "approver"}); err != nil {
		w.t.Fatal(err)
	}
	res2, _, err := s.Escalations.Escalate(ctx, service.EscalateInput{SessionID: session, CallID: "c-" + session, To: string(approvals.DangerFullAccess),
		Reason: "installs into /usr/local", Preview: "make install", NoWait: true})
	if err != nil {
		w.t.Fatal(err)
	}
	return session, res2.ID, w.sqs.take()
}

func (w *world) approval(project, id string) approvals.Approval {
	w.t.Helper()
	a, err := w.stores[project].GetApproval(ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// endings counts the ending frames of a session's log.
func (w *world) endings(project, session string) []approvals.Frame {
	w.t.Helper()
	frames, err := w.stores[project].Frames(ctx, session, 0, 100)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []approvals.Frame
	for _, f := range frames {
		if f.Kind == approvals.FrameResolved {
			out = append(out, f)
		}
	}
	return out
}

func TestAQuestionDueWithinFifteenMinutesSendsOneMessageDelayedUntilItsDeadline(t *testing.T) {
	w := newWorld(t, time.Hour)
	s := w.svc("acme")
	s.Approvals.Timeout = 90 * time.Second
	_, id, msg := w.ask("acme")
	m := mustDecode(t, msg.Body)
	a := w.approval("acme", id)
	if m.Project != "acme" || m.RequestID != id || !m.ExpiresAt.Equal(a.Deadline) || !a.Deadline.Equal(a.CreatedAt.Add(90*time.Second)) {
		t.Fatalf("message %+v for %s due %v", m, id, a.Deadline)
	}
	if msg.Attributes["delay"] != "90" {
		t.Fatalf("DelaySeconds %s, want 90 (the question's deadline)", msg.Attributes["delay"])
	}
}

func TestADueApprovalMessageEndsTheQuestionTimedOutWithOneEndingFrame(t *testing.T) {
	w := newWorld(t, time.Hour)
	session, id, msg := w.ask("acme")
	w.clock.Advance(approvals.DefaultTimeout)
	dup := msg
	dup.MessageId += "-again"
	// The message twice in one batch, handled concurrently, then again later.
	resp := w.sweeper.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg, dup}})
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if out, err := w.sweeper.Expire(ctx, mustDecode(t, msg.Body)); err != nil || out != sqs.OutcomeResolved {
		t.Fatalf("third delivery: %s %v, want %s", out, err, sqs.OutcomeResolved)
	}
	a := w.approval("acme", id)
	if a.Verdict != approvals.TimedOut || a.Cause != approvals.CauseDeadline || !a.Announced {
		t.Fatalf("approval %+v", a)
	}
	if e := w.endings("acme", session); len(e) != 1 || e[0].RequestID != id || e[0].Verdict != approvals.TimedOut {
		t.Fatalf("ending frames %+v, want exactly one timed-out", e)
	}
	if n := len(w.sqs.take()); n != 0 {
		t.Fatalf("a due message sent %d more", n)
	}
}

func TestAnApprovalMessageAfterTheAnswerChangesNothing(t *testing.T) {
	w := newWorld(t, time.Hour)
	session, id, msg := w.ask("acme")
	if _, _, err := w.svc("acme").Escalations.Approve(ctx, id, "alice"); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(approvals.DefaultTimeout + time.Minute)
	out, err := w.sweeper.Expire(ctx, mustDecode(t, msg.Body))
	if err != nil || out != sqs.OutcomeResolved {
		t.Fatalf("%s %v", out, err)
	}
	if a := w.approval("acme", id); a.Verdict != approvals.Approved {
		t.Fatalf("verdict %s, want the answer's", a.Verdict)
	}
	if e := w.endings("acme", session); len(e) != 1 || e[0].Verdict != approvals.Approved {
		t.Fatalf("ending frames %+v", e)
	}
}

func TestAnApprovalMessageBeforeTheDeadlineIsSentOn(t *testing.T) {
	w := newWorld(t, time.Hour)
	_, id, msg := w.ask("acme")
	w.clock.Advance(approvals.DefaultTimeout - 30*time.Second) // a clock behind the queue's
	out, err := w.sweeper.Expire(ctx, mustDecode(t, msg.Body))
	if err != nil || out != sqs.OutcomeRequeued {
		t.Fatalf("%s %v", out, err)
	}
	sent := w.sqs.take()
	if len(sent) != 1 || sent[0].DelaySeconds != 30 || *sent[0].MessageBody != msg.Body {
		t.Fatalf("sent %+v", sent)
	}
	if a := w.approval("acme", id); a.State != approvals.Pending {
		t.Fatalf("ended early: %s", a.Verdict)
	}
	unknown := sqs.Message{Project: "acme", RequestID: "apr:01JDW0000000000000000000AA", ExpiresAt: w.clock.Now()}
	if out, err := w.sweeper.Expire(ctx, unknown); err != nil || out != sqs.OutcomeUnknown {
		t.Fatalf("unknown approval: %s %v", out, err)
	}
}

// The scheduled sweep also ends questions whose message was lost, in
// every project, and says so in its report.
func TestTheScheduledSweepTimesOutQuestionsWhoseMessageWasLost(t *testing.T) {
	w := newWorld(t, time.Hour)
	sa, a, _ := w.ask("acme") // messages dropped on the floor
	_, g, _ := w.ask("globex")
	w.svc("initech")
	w.clock.Advance(approvals.DefaultTimeout)
	rep, err := w.sweeper.SweepAll(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Projects) != 3 || rep.Projects[0].ApprovalsTimedOut != 1 || rep.Projects[1].ApprovalsTimedOut != 1 || rep.Projects[2].ApprovalsTimedOut != 0 {
		t.Fatalf("report %+v", rep)
	}
	if w.approval("acme", a).Verdict != approvals.TimedOut || w.approval("globex", g).Verdict != approvals.TimedOut {
		t.Fatal("not timed out")
	}
	if e := w.endings("acme", sa); len(e) != 1 {
		t.Fatalf("%d ending frames", len(e))
	}
	rep, err = w.sweeper.SweepAll(ctx, 100)
	if err != nil || rep.Projects[0].ApprovalsTimedOut+rep.Projects[1].ApprovalsTimedOut != 0 {
		t.Fatalf("second sweep %+v %v", rep, err)
	}
}
