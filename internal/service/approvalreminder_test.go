package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
)

// secondLine subscribes a hook to approval.reminder and returns a count of
// the distinct reminders queued for it so far.
func (e *aenv) secondLine() func() int {
	e.t.Helper()
	h := hooks.Hook{ID: ids.New(ids.Hook, e.clock.Now()), URL: "https://second-line.example/in", Events: []hooks.EventType{hooks.ApprovalReminder},
		Format: hooks.FormatJSON, CreatedAt: e.clock.Now(), Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if err := e.store.PutHook(ctx, h); err != nil {
		e.t.Fatal(err)
	}
	seen := map[string]bool{} // a claimed delivery is due again after its lease
	return func() int {
		e.t.Helper()
		due, err := e.store.ClaimDue(ctx, e.clock.Now().Add(time.Hour), service.DeliveryLease, 100)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, d := range due {
			if d.Message.Type == hooks.ApprovalReminder && d.Delivery.HookID == h.ID {
				seen[d.Message.ID] = true
			}
		}
		return len(seen)
	}
}

func TestAnUnansweredQuestionIsRemindedOnceAtThePersonsShareOfItsDeadlineHoweverManySweep(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.RemindAt, e.svc.Approvals.TimeoutMax = 0.5, 10*time.Minute
	reminders := e.secondLine()
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	v, err := e.askWithin(ses, "c1", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v.RemindAt == nil || !v.RemindAt.Equal(v.CreatedAt.Add(5*time.Minute)) {
		t.Fatalf("remind_at %v, want halfway to the deadline", v.RemindAt)
	}
	e.clock.Advance(5*time.Minute - time.Millisecond)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.Reminded) != 0 || reminders() != 0 {
		t.Fatalf("reminded early: %+v %v", rep, err)
	}
	e.clock.Advance(time.Millisecond)
	// Eight sweepers at once, on four connections to the file (as
	// separate processes would be): one reminder.
	svcs := []*service.Service{e.svc, e.other(nil), e.other(nil), e.other(nil)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	start := make(chan struct{})
	for i := 0; i < 8; i++ {
		svc := svcs[i%len(svcs)]
		svc.Approvals.RemindAt = 0.5
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rep, err := svc.SweepApprovals(ctx, 10)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			sent += len(rep.Reminded)
		}()
	}
	close(start)
	wg.Wait()
	if sent != 1 || reminders() != 1 {
		t.Fatalf("%d sweeps reported a reminder, %d queued; want 1 and 1", sent, reminders())
	}
	// The question is still open and ends timed-out at its deadline, as
	// ever; no second reminder.
	e.clock.Advance(5 * time.Minute)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.TimedOut) != 1 || len(rep.Reminded) != 0 || reminders() != 1 {
		t.Fatalf("at the deadline: %+v %v", rep, err)
	}
}

func TestAnAnsweredQuestionIsNotReminded(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.RemindAt = 0.5
	reminders := e.secondLine()
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	if _, _, err := e.svc.Escalations.Refuse(ctx, a.ID, "not now", "person"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(approvals.DefaultTimeout / 2)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.Reminded) != 0 || reminders() != 0 {
		t.Fatalf("an answered question was reminded of: %+v %v", rep, err)
	}
}

func TestWithoutAPersonSetShareNoQuestionIsReminded(t *testing.T) {
	e := newApprovalEnv(t)
	reminders := e.secondLine()
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	if a := e.ask(ses, "c1", approvals.WorkspaceWrite); a.RemindAt != nil {
		t.Fatalf("remind_at %v without approval_remind_at", a.RemindAt)
	}
	e.clock.Advance(approvals.DefaultTimeout - time.Millisecond)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.Reminded) != 0 || reminders() != 0 {
		t.Fatalf("reminded without a share: %+v %v", rep, err)
	}
}

// The requester waiting for its verdict sends the reminder itself when
// nobody else sweeps (the embedded CLI's escalate, a blocking call on
// dont serve).
func TestTheWaitingRequesterSendsTheReminderWhenNobodySweeps(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.RemindAt = 0.5
	reminders := e.secondLine()
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := e.svc.Escalations.Escalate(wctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: string(approvals.WorkspaceWrite),
			Reason: "r", Preview: "make install"})
		done <- err
	}()
	// Wait for the question, then move the clock past its reminder.
	limit := time.Now().Add(30 * time.Second) // a bound, not a sleep: the test fails rather than hang
	var a approvals.Approval
	for a.ID == "" {
		if time.Now().After(limit) {
			t.Fatal("the question was never asked")
		}
		list, err := e.svc.Escalations.List(ctx, service.ApprovalQuery{SessionID: ses})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Approvals) == 1 {
			a = list.Approvals[0].Approval
		}
	}
	e.clock.Advance(approvals.DefaultTimeout / 2)
	for reminders() == 0 {
		if time.Now().After(limit) {
			t.Fatal("the waiting requester never sent the reminder")
		}
		select {
		case err := <-done:
			t.Fatalf("the requester stopped before reminding: %v", err)
		default:
		}
	}
	cancel()
	<-done
	if reminders() != 1 {
		t.Fatalf("%d reminders", reminders())
	}
}
