package service_test

import (
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
)

func (e *aenv) askTwoPerson(ses, call string) approvals.Approval {
	e.t.Helper()
	a := e.ask(ses, call, approvals.DangerFullAccess)
	if !a.TwoPerson {
		e.t.Fatalf("%s is not a two-person question", a.ID)
	}
	return a
}

func answerAs(svc *service.Service, id, answer, by string) (service.Decided, error) {
	d, _, err := svc.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: id, Answer: answer, By: by})
	return d, err
}

func TestATwoPersonQuestionIsApprovedOnlyWhenTwoDifferentApproversApprove(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.TwoPersonFrom = approvals.TwoPersonFrom(approvals.DangerFullAccess)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.askTwoPerson(ses, "c1")
	d, err := answerAs(e.svc, a.ID, "approve", "alice")
	if err != nil || d.View.State != approvals.Pending || d.Note == nil || d.Note.Code != service.WarnSecondApprovalNeeded || d.View.FirstApproval == nil {
		t.Fatalf("alice's approval: %+v %v", d, err)
	}
	// The same approver again counts once.
	d, err = answerAs(e.svc, a.ID, "yes", "alice")
	if err != nil || d.View.State != approvals.Pending || d.Note == nil || d.Note.Code != service.WarnAlreadyApprovedByYou || *d.View.Applied {
		t.Fatalf("alice approving twice: %+v %v", d, err)
	}
	if fs := endings(e.frames(ses), a.ID); len(fs) != 0 {
		t.Fatalf("an ending frame before the second approval: %+v", fs)
	}
	d, err = answerAs(e.svc, a.ID, "approve", "bob")
	if tier, ok := d.View.Grant(); err != nil || !ok || tier != approvals.DangerFullAccess || d.View.AnsweredBy != "bob" {
		t.Fatalf("bob's approval: %+v %v", d, err)
	}
	if fs := endings(e.frames(ses), a.ID); len(fs) != 1 {
		t.Fatalf("%d ending frames, want 1", len(fs))
	}
	// Below the rule's tier one approval decides, as ever.
	b := e.ask(ses, "c2", approvals.WorkspaceWrite)
	if d, err := answerAs(e.svc, b.ID, "approve", "alice"); err != nil || d.View.Verdict != approvals.Approved {
		t.Fatalf("a workspace-write question: %+v %v", d, err)
	}
}

func TestARefusalAfterTheFirstApprovalEndsATwoPersonQuestion(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.TwoPersonFrom = approvals.TwoPersonFrom(approvals.DangerFullAccess)
	ses := e.open(approvals.ReadOnly)
	e.subscribe(ses)
	a := e.askTwoPerson(ses, "c1")
	if _, err := answerAs(e.svc, a.ID, "approve", "alice"); err != nil {
		t.Fatal(err)
	}
	d, err := answerAs(e.svc, a.ID, "refuse", "bob")
	if _, ok := d.View.Grant(); err != nil || ok || d.View.Verdict != approvals.Refused {
		t.Fatalf("bob's refusal: %+v %v", d, err)
	}
	if r := e.record(a.ID); r.FirstApproval == nil || r.FirstApproval.By != "alice" {
		t.Fatalf("the record lost the first approval: %+v", r)
	}
}

// Two approvers and a refuser answer at once, on separate connections to
// the file (as separate processes): exactly one ending, and it is an
// approval only if both approvals counted before the refusal.
func TestTwoApproversAndARefuserAnsweringAtOnceEndATwoPersonQuestionOnce(t *testing.T) {
	e := newApprovalEnv(t)
	e.svc.Approvals.TwoPersonFrom = approvals.TwoPersonFrom(approvals.DangerFullAccess)
	ses := e.open(approvals.ReadOnly)
	for round := 0; round < 8; round++ {
		e.subscribe(ses)
		a := e.askTwoPerson(ses, "c"+string(rune('a'+round)))
		svcs := []*service.Service{e.svc, e.other(nil), e.other(nil)}
		answers := []struct{ answer, by string }{{"approve", "alice"}, {"approve", "bob"}, {"refuse", "carol"}}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, ans := range answers {
			wg.Add(1)
			go func(svc *service.Service, answer, by string) {
				defer wg.Done()
				<-start
				if _, err := answerAs(svc, a.ID, answer, by); err != nil {
					t.Errorf("%s: %v", by, err)
				}
			}(svcs[i], ans.answer, ans.by)
		}
		close(start)
		wg.Wait()
		r := e.record(a.ID)
		if r.State != approvals.Resolved {
			t.Fatalf("round %d: the question is %s after all three answered", round, r.State)
		}
		if fs := endings(e.frames(ses), a.ID); len(fs) != 1 {
			t.Fatalf("round %d: %d ending frames, want 1", round, len(fs))
		}
		if r.Verdict == approvals.Approved && (r.FirstApproval == nil || r.FirstApproval.By == r.AnsweredBy || r.AnsweredBy == "carol") {
			t.Fatalf("round %d: approved without two different approvers: %+v", round, r)
		}
	}
}
