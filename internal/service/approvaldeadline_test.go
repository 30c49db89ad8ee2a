package service_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
)

func (e *aenv) askWithin(ses, call string, deadline time.Duration) (service.ApprovalView, error) {
	v, _, err := e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: call, To: string(approvals.WorkspaceWrite),
		Reason: "the build writes outside the workspace", Preview: "make install", NoWait: true, Deadline: deadline})
	return v, err
}

func TestARequesterGetsTheDeadlineItAskedForWithinThePersonsRange(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.TimeoutMax = 15 * time.Minute
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	asked := e.clock.Now()
	v, err := e.askWithin(ses, "c1", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Deadline.Sub(asked); got != 10*time.Minute {
		t.Fatalf("deadline %v after asking, want 10m", got)
	}
	// The question frame every medium shows carries it.
	q := e.frames(ses)[0]
	if q.Deadline == nil || !q.Deadline.Equal(v.Deadline) {
		t.Fatalf("question frame deadline %v, want %v", q.Deadline, v.Deadline)
	}
	// Past it the verdict is timed-out, as with the default.
	e.clock.Advance(10*time.Minute - time.Millisecond)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.TimedOut) != 0 {
		t.Fatalf("swept before the deadline: %+v %v", rep, err)
	}
	e.clock.Advance(time.Millisecond)
	if rep, err := e.svc.SweepApprovals(ctx, 10); err != nil || len(rep.TimedOut) != 1 {
		t.Fatalf("sweep at the deadline: %+v %v", rep, err)
	}
	if a := e.record(v.ID); a.Verdict != approvals.TimedOut {
		t.Fatalf("verdict %s, want timed-out", a.Verdict)
	}
}

func TestARequesterThatAsksForNoDeadlineGetsTheDefault(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.Timeout, e.svc.Approvals.TimeoutMax = 3*time.Minute, time.Hour
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	asked := e.clock.Now()
	v, err := e.askWithin(ses, "c1", 0)
	if err != nil || v.Deadline.Sub(asked) != 3*time.Minute {
		t.Fatalf("deadline %v, %v; want the person's 3m", v.Deadline.Sub(asked), err)
	}
}

func TestAnAgentThatAsksForADeadlineOutsideThePersonsRangeIsRefusedAndNothingIsAsked(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.TimeoutMax = 15 * time.Minute
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	for _, asked := range []time.Duration{15*time.Minute + time.Second, 876000 * time.Hour, time.Second} {
		_, err := e.askWithin(ses, "c1", asked)
		if !errs.Is(err, service.DeadlineOutOfRange) {
			t.Fatalf("asked %v: want deadline-out-of-range, got %v", asked, err)
		}
		ee := present.Explain(err)
		if ee.Args["min"] != "30s" || ee.Args["max"] != "15m" || !strings.Contains(ee.Message, "30s to 15m") {
			t.Fatalf("asked %v: the error must name the range: %+v", asked, ee)
		}
		if len(ee.Remediation) == 0 || !strings.Contains(ee.Remediation[0].Description, "from 30s to 15m") || !strings.Contains(ee.Remediation[0].Command, "--deadline 15m") {
			t.Fatalf("asked %v: remediation %+v must name the range", asked, ee.Remediation)
		}
		if present.Exit(err) != present.ExitUsage {
			t.Fatalf("asked %v: exit %d", asked, present.Exit(err))
		}
	}
	// Nothing was asked or recorded: no question, no refusal record, no frame.
	if list, err := e.svc.Escalations.List(ctx, service.ApprovalQuery{SessionID: ses}); err != nil || len(list.Approvals) != 0 {
		t.Fatalf("records after refused deadlines: %+v %v", list, err)
	}
	if fs := e.frames(ses); len(fs) != 0 {
		t.Fatalf("frames after refused deadlines: %+v", fs)
	}
	// Without a person-set maximum, nothing longer than the default.
	e.svc.Approvals.TimeoutMax = 0
	if _, err := e.askWithin(ses, "c1", approvals.DefaultTimeout+time.Second); !errs.Is(err, service.DeadlineOutOfRange) {
		t.Fatalf("past the default without a maximum: %v", err)
	}
}
