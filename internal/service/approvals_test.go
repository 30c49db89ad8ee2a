package service_test

// Tests named after the rules of tier escalation, docs/design.md §6. Every
// test's final state passes the frame-log guard (auditClean, registered by
// newApprovalEnv): the guard fails tests.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	_ "modernc.org/sqlite"
)

// faulty wraps an approval store and fails chosen operations.
type faulty struct {
	store.ApprovalStore
	failAsk      atomic.Bool  // CreateApproval of a question
	failRecord   atomic.Bool  // CreateApproval of a refusal record
	failLastRead atomic.Bool  // LastRead
	failAnnounce atomic.Bool  // AnnounceEnding
	failGets     atomic.Int32 // the next n GetApproval calls
	failDue      atomic.Bool  // DueApprovals
	failResolve  atomic.Bool  // ResolveApproval
}

func (f *faulty) DueApprovals(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error) {
	if f.failDue.Load() {
		return nil, errBroken
	}
	return f.ApprovalStore.DueApprovals(ctx, now, limit)
}

func (f *faulty) ResolveApproval(ctx context.Context, a approvals.Approval) error {
	if f.failResolve.Load() {
		return errBroken
	}
	return f.ApprovalStore.ResolveApproval(ctx, a)
}

var errBroken = errors.New("disk I/O error (injected)")

func (f *faulty) CreateApproval(ctx context.Context, a approvals.Approval, q *approvals.Frame) error {
	if (a.Asked && f.failAsk.Load()) || (!a.Asked && f.failRecord.Load()) {
		return errBroken
	}
	return f.ApprovalStore.CreateApproval(ctx, a, q)
}

func (f *faulty) LastRead(ctx context.Context, id string) (time.Time, error) {
	if f.failLastRead.Load() {
		return time.Time{}, errBroken
	}
	return f.ApprovalStore.LastRead(ctx, id)
}

func (f *faulty) AnnounceEnding(ctx context.Context, fr approvals.Frame) (approvals.Frame, error) {
	if f.failAnnounce.Load() {
		return fr, errBroken
	}
	return f.ApprovalStore.AnnounceEnding(ctx, fr)
}

func (f *faulty) GetApproval(ctx context.Context, id string) (approvals.Approval, error) {
	if f.failGets.Add(-1) >= 0 {
		return approvals.Approval{}, errBroken
	}
	return f.ApprovalStore.GetApproval(ctx, id)
}

type aenv struct {
	*env
	faults *faulty
}

// newApprovalEnv is a project on a real SQLite file with approvals on a
// fake clock. Its final state must pass the frame-log audit.
func newApprovalEnv(t *testing.T) *aenv {
	e := &aenv{env: newEnv(t)}
	e.faults = &faulty{ApprovalStore: e.store}
	e.faults.failGets.Store(-1 << 30)
	e.svc.Approvals = service.Approvals{Store: e.faults, Poll: time.Millisecond}
	t.Cleanup(func() { auditClean(t, e.svc) })
	return e
}

// auditClean is the guard every approvals test ends with.
// decision, escalation and shown present the approvals operations' typed
// results as the tool surface does (tools.Output): the assertions read
// the envelope's data and warnings.
func decision(d service.Decided, w []envelope.Warning, err error) (tools.Output, error) {
	if d.Note != nil {
		w = append(w, *d.Note)
	}
	if err != nil {
		return tools.Output{Warnings: w}, err
	}
	return tools.Output{Kind: envelope.KindApproval, Data: d.View, Warnings: w}, nil
}

func escalation(v service.ApprovalView, w []envelope.Warning, err error) (tools.Output, error) {
	if err != nil {
		return tools.Output{Warnings: w}, err
	}
	kind := envelope.KindApproval
	if v.GrantedTier != "" {
		kind = envelope.KindEscalation
	}
	return tools.Output{Kind: kind, Data: v, Warnings: w}, nil
}

func shown[T any](v T, err error) (tools.Output, error) {
	if err != nil {
		return tools.Output{}, err
	}
	return tools.Output{Data: v}, nil
}

func auditClean(t *testing.T, svc *service.Service) {
	t.Helper()
	rep, err := svc.Escalations.Audit(context.Background())
	if err != nil {
		t.Errorf("frame-log audit could not run: %v", err)
		return
	}
	if !rep.OK() {
		t.Errorf("frame-log audit of the final state: %v", rep.Findings)
	}
}

// other is a second service on its own connection to the same file (as
// another process), on the same clock unless one is given.
func (e *aenv) other(c *clock) *service.Service {
	svc := e.another()
	if c != nil {
		svc.Clock = c.Now
	}
	st := svc.Store.(*sqlite.Store)
	svc.Approvals = service.Approvals{Store: st, Poll: time.Millisecond}
	return svc
}

func (e *aenv) open(tier approvals.Tier) string {
	e.t.Helper()
	res, err := shown(e.svc.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: string(tier), Name: "t"}))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Data.(service.SessionView).ID
}

// subscribe reads the session's frames once: a live subscriber for the lease.
func (e *aenv) subscribe(ses string) {
	e.t.Helper()
	if _, err := shown(e.svc.Escalations.Frames(ctx, service.FramesInput{SessionID: ses, Subscriber: "watcher"})); err != nil {
		e.t.Fatal(err)
	}
}

func (e *aenv) ask(ses, call string, to approvals.Tier) approvals.Approval {
	e.t.Helper()
	res, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: call, To: string(to),
		Reason: "the build writes outside the workspace", Preview: "make install", NoWait: true}))
	if err != nil {
		e.t.Fatalf("escalate %s %s -> %s: %v", ses, call, to, err)
	}
	return res.Data.(service.ApprovalView).Approval
}

func (e *aenv) frames(ses string) []approvals.Frame {
	e.t.Helper()
	fs, err := e.store.Frames(ctx, ses, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return fs
}

func (e *aenv) record(id string) approvals.Approval {
	e.t.Helper()
	a, err := e.store.GetApproval(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func endings(fs []approvals.Frame, id string) []approvals.Frame {
	var out []approvals.Frame
	for _, f := range fs {
		if f.Kind == approvals.FrameResolved && f.RequestID == id {
			out = append(out, f)
		}
	}
	return out
}

func wantCode(t *testing.T, err error, code errs.Code, exit int) *errs.Error {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
	if got := present.Exit(err); got != exit {
		t.Fatalf("%s exits %d, want %d", code, got, exit)
	}
	e := errs.As(err)
	if rem := present.Remediation(e); len(rem) == 0 || rem[0].Command == "" {
		t.Fatalf("%s without remediation", code)
	}
	return e
}

func TestHopRefusalsAreRefusedAtOnceWithNoQuestionAndRecorded(t *testing.T) {
	e := newApprovalEnv(t)
	ro, ww, dfa, other := e.open(approvals.ReadOnly), e.open(approvals.WorkspaceWrite), e.open(approvals.DangerFullAccess), e.open(approvals.ReadOnly)
	for _, s := range []string{ro, ww, dfa, other} {
		e.subscribe(s) // live subscribers everywhere: only the hop table can refuse
	}
	widened := e.ask(ro, "widened", approvals.WorkspaceWrite)
	if _, err := decision(e.svc.Escalations.Approve(ctx, widened.ID, "alice")); err != nil {
		t.Fatal(err)
	}
	open := e.ask(ro, "open", approvals.WorkspaceWrite)
	for _, tc := range []struct {
		name, ses, call, to string
		code                errs.Code
	}{
		{"an unknown tier", ro, "c1", "root", service.UnknownTier},
		{"a misspelt tier", ro, "c1", "Danger-Full-Access", service.UnknownTier},
		{"a non-widening target", ww, "w1", "read-only", service.HopNotAllowed},
		{"the same tier", ww, "w2", "workspace-write", service.HopNotAllowed},
		{"anything from danger-full-access", dfa, "d1", "danger-full-access", service.HopNotAllowed},
		{"a two-hop ratchet for one call", ro, "widened", "danger-full-access", service.HopRatchet},
		{"another session's call", other, "widened", "workspace-write", service.CallOfAnotherSession},
		{"a call with an open question", ro, "open", "danger-full-access", service.EscalationPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.frames(tc.ses))
			res, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: tc.ses, CallID: tc.call, To: tc.to, Reason: "needs it", Preview: "make install"}))
			ee := wantCode(t, err, tc.code, present.ExitRefusal)
			if res.Data != nil {
				t.Fatalf("a refusal carried data: %+v", res.Data)
			}
			if after := len(e.frames(tc.ses)); after != before {
				t.Fatalf("a refused hop reached the subscribers: %d frames, was %d", after, before)
			}
			rec := e.record(ee.EntityID)
			if rec.Asked || rec.State != approvals.Resolved || rec.Verdict != approvals.Refused || string(rec.Cause) != string(tc.code) {
				t.Fatalf("recorded refusal %+v", rec)
			}
			if _, ok := rec.Grant(); ok {
				t.Fatal("a recorded refusal yields a tier")
			}
		})
	}
	pending, _ := e.store.ListApprovals(ctx, store.ApprovalFilter{State: approvals.Pending})
	if len(pending) != 1 || pending[0].ID != open.ID {
		t.Fatalf("hop refusals created questions: %d pending", len(pending))
	}
}

func TestTheHopTableIsCheckedBeforeTheChannel(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.WorkspaceWrite) // nobody subscribed, and the channel is broken too
	e.faults.failLastRead.Store(true)
	_, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: "read-only", Reason: "r"}))
	wantCode(t, err, service.HopNotAllowed, present.ExitRefusal)
}

func TestReadOnlyToDangerFullAccessIsOneHopAndIsAsked(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.DangerFullAccess)
	fs := e.frames(ses)
	if a.State != approvals.Pending || len(fs) != 1 || fs[0].Kind != approvals.FrameRequested || fs[0].RequestID != a.ID ||
		fs[0].To != "danger-full-access" || fs[0].From != approvals.ReadOnly || fs[0].Preview != "make install" {
		t.Fatalf("question %+v, frames %+v", a, fs)
	}
	if !a.Deadline.Equal(a.CreatedAt.Add(120 * time.Second)) {
		t.Fatalf("deadline %s after creation, want 120 s", a.Deadline.Sub(a.CreatedAt))
	}
	res, err := decision(e.svc.Escalations.Approve(ctx, a.ID, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Data.(service.ApprovalView); v.GrantedTier != approvals.DangerFullAccess || !*v.Applied {
		t.Fatalf("approval %+v", v)
	}
}

func TestNoLiveSubscriberIsARefusal(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	try := func() *errs.Error {
		_, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: "workspace-write", Reason: "r"}))
		return wantCode(t, err, service.NoSubscriber, present.ExitRefusal)
	}
	never := try()
	e.subscribe(ses)
	e.clock.Advance(service.DefaultSubscriberLease) // the lease lapses: the reader went away
	lapsed := try()
	for _, ee := range []*errs.Error{never, lapsed} {
		if rec := e.record(ee.EntityID); rec.Asked || rec.Cause != approvals.CauseNoSubscriber || rec.Verdict != approvals.Refused {
			t.Fatalf("recorded %+v", rec)
		}
	}
	if fs := e.frames(ses); len(fs) != 0 {
		t.Fatalf("no subscriber, yet %d frames", len(fs))
	}
	e.subscribe(ses) // back within the lease: now it is asked
	e.ask(ses, "c1", approvals.WorkspaceWrite)
}

func TestADeadlinePassedIsTimedOut(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	// The requester's own wait ends the question at the deadline.
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	e.clock.Advance(approvals.DefaultTimeout)
	_, err := escalation(e.svc.Escalations.Wait(ctx, a.ID))
	wantCode(t, err, service.ApprovalTimedOut, present.ExitRefusal)
	// The sweep every invocation runs ends an unattended one.
	e.subscribe(ses)
	b := e.ask(ses, "c2", approvals.WorkspaceWrite)
	e.clock.Advance(approvals.DefaultTimeout + time.Second)
	rep, err := e.svc.Sweep(ctx, 10)
	if err != nil || rep.Approvals == nil || fmt.Sprint(rep.Approvals.TimedOut) != "["+b.ID+"]" {
		t.Fatalf("sweep: %+v %v", rep.Approvals, err)
	}
	// An answer after the deadline is not applied.
	e.subscribe(ses)
	c := e.ask(ses, "c3", approvals.WorkspaceWrite)
	e.clock.Advance(approvals.DefaultTimeout)
	res, err := decision(e.other(nil).Escalations.Approve(ctx, c.ID, "late"))
	if err != nil || !hasWarning(res, "approval-expired") {
		t.Fatalf("late approval: %v %v", warningCodes(res), err)
	}
	if v := res.Data.(service.ApprovalView); v.Verdict != approvals.TimedOut || *v.Applied || v.GrantedTier != "" {
		t.Fatalf("late approval applied: %+v", v)
	}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		if rec := e.record(id); rec.Verdict != approvals.TimedOut || len(endings(e.frames(ses), id)) != 1 {
			t.Fatalf("%s: %s with %d ending frames", id, rec.Verdict, len(endings(e.frames(ses), id)))
		}
	}
}

func TestTheDeadlineComesFromTheConfiguredTimeout(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.Timeout = 5 * time.Second
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	if a.Deadline.Sub(a.CreatedAt) != 5*time.Second {
		t.Fatalf("deadline %s", a.Deadline.Sub(a.CreatedAt))
	}
	decision(e.svc.Escalations.Cancel(ctx, a.ID, "done", ""))
}

func TestAnUnreadableAnswerIsARefusal(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	for i, answer := range []any{"maybe", map[string]any{"ok": true}, 1.0, nil, ""} {
		e.subscribe(ses)
		a := e.ask(ses, fmt.Sprint("c", i), approvals.WorkspaceWrite)
		res, err := decision(e.svc.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: a.ID, Answer: answer, By: "bob"}))
		if err != nil || !hasWarning(res, envelope.WarningCode(approvals.CauseUnreadable)) {
			t.Fatalf("%v: %v %v", answer, warningCodes(res), err)
		}
		_, err = escalation(e.svc.Escalations.Wait(ctx, a.ID))
		ee := wantCode(t, err, service.ApprovalRefused, present.ExitRefusal)
		if rec := e.record(ee.EntityID); rec.Cause != approvals.CauseUnreadable || rec.AnsweredBy != "bob" {
			t.Fatalf("%v: recorded %+v", answer, rec)
		}
	}
}

func TestAStoreErrorWhileAskingIsARefusal(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	esc := func(call string) (tools.Output, error) {
		return escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: call, To: "workspace-write", Reason: "r"}))
	}
	e.faults.failAsk.Store(true)
	_, err := esc("c1")
	ee := wantCode(t, err, service.ApprovalChannelError, present.ExitRefusal)
	if rec := e.record(ee.EntityID); rec.Asked || rec.Cause != approvals.CauseChannelError {
		t.Fatalf("recorded %+v", rec)
	}
	e.faults.failAsk.Store(false)
	e.faults.failLastRead.Store(true)
	_, err = esc("c2")
	wantCode(t, err, service.ApprovalChannelError, present.ExitRefusal)
	// Even when the refusal cannot be recorded, it is a refusal.
	e.faults.failRecord.Store(true)
	_, err = esc("c3")
	if ee := wantCode(t, err, service.ApprovalChannelError, present.ExitRefusal); ee.EntityID != "" {
		t.Fatalf("names an unrecorded refusal %s", ee.EntityID)
	}
	if pending, _ := e.store.ListApprovals(ctx, store.ApprovalFilter{State: approvals.Pending}); len(pending) != 0 || len(e.frames(ses)) != 0 {
		t.Fatalf("a failed ask left %d questions and %d frames", len(pending), len(e.frames(ses)))
	}
}

func TestAStoreErrorWhileWaitingIsARefusal(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	var asked approvals.Approval
	// The question exists; then the requester's first read of it fails.
	_, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: "workspace-write", Reason: "r",
		Asked: func(a approvals.Approval) { asked = a; e.faults.failGets.Store(1) }}))
	wantCode(t, err, service.ApprovalChannelError, present.ExitRefusal)
	// The requester ended its question as refused, so nobody can approve a
	// request nobody waits for; the ending is announced like any other.
	rec := e.record(asked.ID)
	if rec.Verdict != approvals.Refused || rec.Cause != approvals.CauseChannelError {
		t.Fatalf("recorded %+v", rec)
	}
	if got := endings(e.frames(ses), asked.ID); len(got) != 1 || got[0].Verdict != approvals.Refused {
		t.Fatalf("ending frames %+v", got)
	}
	if res, _ := decision(e.svc.Escalations.Approve(ctx, asked.ID, "alice")); *res.Data.(service.ApprovalView).Applied {
		t.Fatal("a later approval was applied")
	}
}

func TestTheFirstAnswerWinsAcrossConnections(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	for round := 0; round < 3; round++ {
		e.subscribe(ses)
		a := e.ask(ses, fmt.Sprint("c", round), approvals.DangerFullAccess)
		svcs := make([]*service.Service, 12)
		for i := range svcs {
			svcs[i] = e.other(nil) // its own connection to the file, as another process
		}
		results := make([]tools.Output, len(svcs))
		errors := make([]error, len(svcs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, svc := range svcs {
			wg.Add(1)
			go func(i int, svc *service.Service) {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					results[i], errors[i] = decision(svc.Escalations.Approve(ctx, a.ID, fmt.Sprint("approver-", i)))
				} else {
					results[i], errors[i] = decision(svc.Escalations.Refuse(ctx, a.ID, "no", fmt.Sprint("approver-", i)))
				}
			}(i, svc)
		}
		close(start)
		wg.Wait()
		applied := 0
		rec := e.record(a.ID)
		for i, r := range results {
			if errors[i] != nil {
				t.Fatalf("answer %d: %v", i, errors[i])
			}
			v := r.Data.(service.ApprovalView)
			if *v.Applied {
				applied++
				if v.AnsweredBy != fmt.Sprint("approver-", i) {
					t.Fatalf("the applied answer is %s's, recorded %s", fmt.Sprint("approver-", i), v.AnsweredBy)
				}
			} else if !hasWarning(r, "approval-already-resolved") {
				t.Fatalf("a losing answer carried %v", warningCodes(r))
			}
			if v.Verdict != rec.Verdict {
				t.Fatalf("answer %d was told %s, the recorded verdict is %s", i, v.Verdict, rec.Verdict)
			}
		}
		if applied != 1 || len(endings(e.frames(ses), a.ID)) != 1 {
			t.Fatalf("round %d: %d answers applied, %d ending frames", round, applied, len(endings(e.frames(ses), a.ID)))
		}
	}
}

func TestTheFirstAnswerWinsAgainstTheDeadlineSweep(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	for round := 0; round < 3; round++ {
		e.subscribe(ses)
		a := e.ask(ses, fmt.Sprint("c", round), approvals.WorkspaceWrite)
		// Answerers' clocks still read before the deadline; sweepers' clocks are past it.
		late := newClock()
		late.ns.Store(a.Deadline.UnixNano())
		var wg sync.WaitGroup
		start := make(chan struct{})
		var won atomic.Int32
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if i%2 == 0 {
					svc := e.other(nil)
					<-start
					if r, err := decision(svc.Escalations.Approve(ctx, a.ID, "alice")); err == nil && *r.Data.(service.ApprovalView).Applied {
						won.Add(1)
					}
				} else {
					svc := e.other(late)
					<-start
					if rep, err := svc.SweepApprovals(ctx, 10); err == nil {
						won.Add(int32(len(rep.TimedOut)))
					}
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if won.Load() != 1 || len(endings(e.frames(ses), a.ID)) != 1 {
			t.Fatalf("round %d: %d resolvers won, %d ending frames", round, won.Load(), len(endings(e.frames(ses), a.ID)))
		}
	}
}

func TestASecondAnswerGetsTheRecordedVerdictAndChangesNothing(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	if _, err := decision(e.svc.Escalations.Approve(ctx, a.ID, "alice")); err != nil {
		t.Fatal(err)
	}
	before, frames := e.record(a.ID), len(e.frames(ses))
	for _, second := range []func() (tools.Output, error){
		func() (tools.Output, error) { return decision(e.svc.Escalations.Refuse(ctx, a.ID, "contrary", "bob")) },
		func() (tools.Output, error) { return decision(e.svc.Escalations.Approve(ctx, a.ID, "carol")) },
		func() (tools.Output, error) { return decision(e.svc.Escalations.Cancel(ctx, a.ID, "", "requester")) },
		func() (tools.Output, error) {
			return decision(e.svc.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: a.ID, Answer: "garbage", By: "dave"}))
		},
	} {
		res, err := second()
		if err != nil || !hasWarning(res, "approval-already-resolved") {
			t.Fatalf("second answer: %v %v", warningCodes(res), err)
		}
		if v := res.Data.(service.ApprovalView); v.Verdict != approvals.Approved || *v.Applied || v.AnsweredBy != "alice" {
			t.Fatalf("second answer told %+v", v)
		}
	}
	if after := e.record(a.ID); after.AnsweredBy != before.AnsweredBy || after.Verdict != before.Verdict || len(e.frames(ses)) != frames {
		t.Fatalf("a second answer changed something: %+v, %d frames", after, len(e.frames(ses)))
	}
}

func TestEveryEndingEmitsExactlyOneFrameCarryingTheRequestID(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	end := map[approvals.Verdict]func(id string){
		approvals.Approved:  func(id string) { decision(e.svc.Escalations.Approve(ctx, id, "alice")) },
		approvals.Refused:   func(id string) { decision(e.svc.Escalations.Refuse(ctx, id, "not today", "alice")) },
		approvals.Cancelled: func(id string) { decision(e.svc.Escalations.Cancel(ctx, id, "", "requester")) },
		approvals.TimedOut: func(id string) {
			e.clock.Advance(approvals.DefaultTimeout)
			e.svc.SweepApprovals(ctx, 10)
		},
	}
	for _, v := range []approvals.Verdict{approvals.Approved, approvals.Refused, approvals.Cancelled, approvals.TimedOut} {
		e.subscribe(ses)
		a := e.ask(ses, "call-"+string(v), approvals.WorkspaceWrite)
		end[v](a.ID)
		end[v](a.ID) // a repeat ending changes nothing and announces nothing
		got := endings(e.frames(ses), a.ID)
		if len(got) != 1 || got[0].Verdict != v || got[0].RequestID != a.ID || got[0].SessionID != ses {
			t.Fatalf("%s: ending frames %+v", v, got)
		}
		if (v == approvals.Approved) != (got[0].GrantedTier == approvals.WorkspaceWrite) {
			t.Fatalf("%s: granted tier %q on the frame", v, got[0].GrantedTier)
		}
	}
}

func TestAFailedAnnounceNeverTurnsAVerdictIntoAnError(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	e.faults.failAnnounce.Store(true)
	res, err := decision(e.svc.Escalations.Approve(ctx, a.ID, "alice"))
	if err != nil || !hasWarning(res, "announce-failed") || !*res.Data.(service.ApprovalView).Applied {
		t.Fatalf("approve with a broken announce: %v %v", warningCodes(res), err)
	}
	got, err := escalation(e.svc.Escalations.Wait(ctx, a.ID))
	if err != nil || got.Data.(service.ApprovalView).GrantedTier != approvals.WorkspaceWrite {
		t.Fatalf("the requester lost its verdict to a failed announce: %v", err)
	}
	// The guard sees the missing frame ...
	if rep, _ := e.svc.Escalations.Audit(ctx); rep.OK() {
		t.Fatal("the audit missed a missing ending frame")
	}
	// ... and the next sweep repairs it, exactly once.
	e.faults.failAnnounce.Store(false)
	rep, err := e.svc.SweepApprovals(ctx, 10)
	if err != nil || fmt.Sprint(rep.Announced) != "["+a.ID+"]" {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, _ := e.svc.SweepApprovals(ctx, 10); len(rep.Announced) != 0 {
		t.Fatalf("announced twice: %+v", rep)
	}
	if n := len(endings(e.frames(ses), a.ID)); n != 1 {
		t.Fatalf("%d ending frames after the repair", n)
	}
}

func TestTheSessionsDefaultTierIsNeverChangedByAGrant(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.DangerFullAccess)
	if _, err := decision(e.svc.Escalations.Approve(ctx, a.ID, "alice")); err != nil {
		t.Fatal(err)
	}
	res, err := shown(e.svc.Escalations.ShowSession(ctx, ses))
	if err != nil || res.Data.(service.SessionView).Tier != approvals.ReadOnly {
		t.Fatalf("session after a grant: %+v %v", res.Data, err)
	}
	// The next call stands at the default again: read-only's row applies.
	b := e.ask(ses, "c2", approvals.WorkspaceWrite)
	if b.From != approvals.ReadOnly {
		t.Fatalf("the next call stands at %s", b.From)
	}
	decision(e.svc.Escalations.Cancel(ctx, b.ID, "", ""))
}

func TestARefusalNeverYieldsATier(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	res, err := decision(e.svc.Escalations.Refuse(ctx, a.ID, "no", "alice"))
	if err != nil || res.Data.(service.ApprovalView).GrantedTier != "" {
		t.Fatalf("refusal: %+v %v", res.Data, err)
	}
	w, err := escalation(e.svc.Escalations.Wait(ctx, a.ID))
	wantCode(t, err, service.ApprovalRefused, present.ExitRefusal)
	if w.Data != nil {
		t.Fatalf("a refused requester got data %+v", w.Data)
	}
	show, _ := shown(e.svc.Escalations.Show(ctx, a.ID))
	if show.Data.(service.ApprovalView).GrantedTier != "" {
		t.Fatal("show reports a tier for a refusal")
	}
}

// watchOnce long-polls the session's frames until the question for call
// appears, then returns it: the test's events are ordered by the stream,
// not by sleeps.
func (e *aenv) watchOnce(svc *service.Service, ses, call string) approvals.Frame {
	after := int64(0)
	for {
		res, err := shown(svc.Escalations.Frames(ctx, service.FramesInput{SessionID: ses, After: after, Wait: 10 * time.Second, Subscriber: "watcher"}))
		if err != nil {
			e.t.Error(err)
			return approvals.Frame{}
		}
		page := res.Data.(service.FramesPage)
		for _, f := range page.Frames {
			if f.Kind == approvals.FrameRequested && f.CallID == call {
				return f
			}
		}
		after = page.Cursor
	}
}

func TestEscalateBlocksUntilTheAnswer(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	approver := e.other(nil)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		f := e.watchOnce(approver, ses, "c1")
		decision(approver.Escalations.Approve(ctx, f.RequestID, "alice"))
	}()
	res, err := escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: "danger-full-access", Reason: "r", Preview: "make install"}))
	if err != nil || res.Kind != "escalation" {
		t.Fatalf("escalate: %v %v", res.Kind, err)
	}
	v := res.Data.(service.ApprovalView)
	if v.GrantedTier != approvals.DangerFullAccess || v.SessionTier != approvals.ReadOnly || v.CallID != "c1" {
		t.Fatalf("escalation %+v", v)
	}
	<-answered
	// And a refusal from another connection ends the wait with exit 1.
	refused := make(chan struct{})
	go func() {
		defer close(refused)
		f := e.watchOnce(approver, ses, "c2")
		decision(approver.Escalations.Refuse(ctx, f.RequestID, "no", "alice"))
	}()
	_, err = escalation(e.svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: "c2", To: "workspace-write", Reason: "r"}))
	wantCode(t, err, service.ApprovalRefused, present.ExitRefusal)
	<-refused // the audit reads the final, quiescent state
}

func TestAnInterruptedRequesterCancelsItsQuestion(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	cctx, cancel := context.WithCancel(ctx)
	var asked approvals.Approval
	// Ctrl-C arrives once the question exists.
	_, err := escalation(e.svc.Escalations.Escalate(cctx, service.EscalateInput{SessionID: ses, CallID: "c1", To: "workspace-write", Reason: "r",
		Asked: func(a approvals.Approval) { asked = a; cancel() }}))
	wantCode(t, err, service.ApprovalCancelled, present.ExitRefusal)
	if rec := e.record(asked.ID); rec.Verdict != approvals.Cancelled || rec.Cause != approvals.CauseRequester {
		t.Fatalf("recorded %+v", rec)
	}
	if got := endings(e.frames(ses), asked.ID); len(got) != 1 || got[0].Verdict != approvals.Cancelled {
		t.Fatalf("cancel announced as %+v", got)
	}
	// A resumed wait that is interrupted leaves the question open.
	e.subscribe(ses)
	b := e.ask(ses, "c2", approvals.WorkspaceWrite)
	stopped, stop := context.WithCancel(ctx)
	stop()
	_, err = escalation(e.svc.Escalations.Wait(stopped, b.ID))
	wantCode(t, err, errs.Interrupted, present.ExitInterrupt)
	if e.record(b.ID).State != approvals.Pending {
		t.Fatal("an interrupted resumed wait ended the question")
	}
	decision(e.svc.Escalations.Cancel(ctx, b.ID, "", ""))
}

func TestFramesLongPollReturnsOnTheFirstFrameAndRenewsTheLease(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	if res, _ := shown(e.svc.Escalations.ShowSession(ctx, ses)); res.Data.(service.SessionView).LiveSubscriber {
		t.Fatal("live before anyone read")
	}
	e.subscribe(ses)
	if res, _ := shown(e.svc.Escalations.ShowSession(ctx, ses)); !res.Data.(service.SessionView).LiveSubscriber {
		t.Fatal("a read did not renew the lease")
	}
	watcher := e.other(nil)
	got := make(chan approvals.Frame, 1)
	go func() { got <- e.watchOnce(watcher, ses, "c1") }()
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	if f := <-got; f.RequestID != a.ID || f.Cursor != 1 {
		t.Fatalf("frame %+v", f)
	}
	decision(e.svc.Escalations.Cancel(ctx, a.ID, "", ""))
	res, err := shown(e.svc.Escalations.Frames(ctx, service.FramesInput{SessionID: ses, After: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if page := res.Data.(service.FramesPage); page.Count != 1 || page.Cursor != 2 || page.Frames[0].Verdict != approvals.Cancelled {
		t.Fatalf("page after 1: %+v", page)
	}
	if _, err := shown(e.svc.Escalations.Frames(ctx, service.FramesInput{SessionID: ses, Wait: time.Hour})); !errs.Is(err, errs.InvalidArgument) {
		t.Fatalf("an unbounded wait: %v", err)
	}
	if _, err := shown(e.svc.Escalations.Frames(ctx, service.FramesInput{SessionID: "ses:01HX05A9K8VP0000000000000A"})); !errs.Is(err, service.SessionNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestApprovalErrorCodesExplainThemselves(t *testing.T) {
	for _, c := range []struct {
		code errs.Code
		exit int
	}{
		{service.UnknownTier, 1}, {service.HopNotAllowed, 1}, {service.HopRatchet, 1}, {service.CallOfAnotherSession, 1},
		{service.EscalationPending, 1}, {service.NoSubscriber, 1}, {service.ApprovalRefused, 1}, {service.ApprovalTimedOut, 1},
		{service.ApprovalCancelled, 1}, {service.ApprovalChannelError, 1},
		{service.SessionNotFound, 3}, {service.ApprovalNotFound, 3}, {service.ApprovalsUnavailable, 3}, {service.FrameLogInconsistent, 3},
	} {
		e := present.Explain(errs.E(c.code, "x"))
		if present.Exit(e) != c.exit || len(e.Remediation) == 0 || e.Remediation[0].Description == "" || present.Status(e) < 400 {
			t.Errorf("%s: exit %d, remediation %v, status %d", c.code, present.Exit(e), e.Remediation, present.Status(e))
		}
	}
}

// The guard fails on a bad log: a frame naming no known request, injected
// behind the service's back.
func TestTheFrameLogGuardFailsABadLog(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	decision(e.svc.Escalations.Approve(ctx, a.ID, "alice"))
	if _, err := e.svc.Escalations.Audit(ctx); err != nil {
		t.Fatalf("a clean log: %v", err)
	}
	db, err := sql.Open("sqlite", e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO approval_frames(session_id, cursor, request_id, kind, doc) VALUES(?, 3, 'apr:ghost', 'approval_resolved',
		'{"session_id":"`+ses+`","cursor":3,"kind":"approval_resolved","request_id":"apr:ghost","verdict":"approved"}')`, ses); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Escalations.Audit(ctx)
	ee := wantCode(t, err, service.FrameLogInconsistent, present.ExitState)
	if len(ee.UnmetClauses) != 1 || ee.UnmetClauses[0] != "apr:ghost: frame names an unknown request (frame "+ses+"#3)" {
		t.Fatalf("findings %q", ee.UnmetClauses)
	}
	if _, err := db.Exec("DELETE FROM approval_frames WHERE request_id = 'apr:ghost'"); err != nil {
		t.Fatal(err)
	}
}

// Where a scheduled sweep ends due questions (AWS), a call's sweep-first
// covers spawns only; the scheduled sweep ends the question. Elsewhere
// the call's sweep-first ends it.
func TestAScheduledDeploymentLeavesDueQuestionsToItsSweep(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	for i, scheduled := range []bool{true, false} {
		a := e.ask(ses, fmt.Sprint("c", i), approvals.WorkspaceWrite)
		late := newClock()
		late.ns.Store(a.Deadline.Add(time.Second).UnixNano())
		svc := e.other(late)
		svc.Approvals.Scheduled = scheduled
		if _, err := call(svc, "list", nil); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.GetApproval(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if open := got.State == approvals.Pending; open != scheduled {
			t.Fatalf("scheduled=%v: after a call's sweep-first the question is %s", scheduled, got.State)
		}
		if scheduled {
			if rep, err := svc.SweepApprovals(ctx, 10); err != nil || len(rep.TimedOut) != 1 {
				t.Fatalf("the scheduled sweep: %+v %v", rep, err)
			}
		}
	}
}

// A sweep that could not look at the due questions, or could not end one,
// says so on its envelope (sweep-failed; approval-channel-error naming
// the question) rather than report that nothing was due; the question
// stays pending, and the next sweep that can ends it.
func TestASweepThatCouldNotEndADueQuestionSaysSoRatherThanNothingWasDue(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.ask(ses, "c1", approvals.WorkspaceWrite)
	late := newClock()
	late.ns.Store(a.Deadline.Add(time.Second).UnixNano())
	svc := e.other(late)
	svc.Approvals = service.Approvals{Store: e.faults, Poll: time.Millisecond}
	warned := func(out tools.Output, code envelope.WarningCode, id string) bool {
		for _, w := range out.Warnings {
			if w.Code == code && w.RequestID == id && w.Message != "" {
				return true
			}
		}
		return false
	}
	e.faults.failDue.Store(true)
	out, err := call(svc, "sweep", nil)
	if err != nil || !warned(out, envelope.WarnSweepFailed, "") || out.Data.(service.SweepReport).Approvals != nil {
		t.Fatalf("a sweep that could not read the due questions: %+v %v, want a sweep-failed warning", out, err)
	}
	e.faults.failDue.Store(false)
	e.faults.failResolve.Store(true)
	for _, tool := range []string{"sweep", "approvals.sweep"} {
		out, err = call(svc, tool, nil)
		if err != nil || !warned(out, envelope.CodeOf(service.ApprovalChannelError), a.ID) {
			t.Fatalf("%s that could not end %s: %+v %v, want a warning naming it", tool, a.ID, out, err)
		}
	}
	if got := e.record(a.ID); got.State != approvals.Pending {
		t.Fatalf("after the failed sweeps the question is %s", got.State)
	}
	e.faults.failResolve.Store(false)
	out, err = call(svc, "sweep", nil)
	if rep, _ := out.Data.(service.SweepReport); err != nil || len(out.Warnings) != 0 || rep.Approvals == nil || fmt.Sprint(rep.Approvals.TimedOut) != "["+a.ID+"]" {
		t.Fatalf("the sweep after the store recovered: %+v %v", out, err)
	}
}

// A log broken everywhere fails the audit with an error that names the
// first findings and counts the rest: one response carries it, and a
// Lambda's is at most 6 MB.
func TestAFailedAuditNamesItsFirstFindingsAndCountsTheRest(t *testing.T) {
	e := newApprovalEnv(t)
	ses := e.open(approvals.ReadOnly)
	db, err := sql.Open("sqlite", e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const ghosts = service.AuditFindingsShown + 50
	for i := 1; i <= ghosts; i++ {
		if _, err := db.Exec(`INSERT INTO approval_frames(session_id, cursor, request_id, kind, doc) VALUES(?, ?, ?, 'approval_resolved',
			'{"session_id":"`+ses+`","cursor":`+fmt.Sprint(i)+`,"kind":"approval_resolved","request_id":"apr:ghost`+fmt.Sprint(i)+`","verdict":"approved"}')`, ses, i, fmt.Sprint("apr:ghost", i)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := e.svc.Escalations.Audit(ctx)
	ee := wantCode(t, err, service.FrameLogInconsistent, present.ExitState)
	if len(rep.Findings) < ghosts {
		t.Fatalf("the report has %d findings, want at least %d", len(rep.Findings), ghosts)
	}
	last := ee.UnmetClauses[len(ee.UnmetClauses)-1]
	if len(ee.UnmetClauses) != service.AuditFindingsShown+1 || last != fmt.Sprintf("and %d more finding(s)", len(rep.Findings)-service.AuditFindingsShown) {
		t.Fatalf("%d clauses, the last %q", len(ee.UnmetClauses), last)
	}
	if _, err := db.Exec("DELETE FROM approval_frames WHERE request_id LIKE 'apr:ghost%'"); err != nil {
		t.Fatal(err)
	}
}
