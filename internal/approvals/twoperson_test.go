package approvals

import (
	"testing"
	"time"
)

func twoPersonQuestion() Approval {
	return Approval{ID: "apr:2p", SessionID: "ses:a", CallID: "c1", From: ReadOnly, To: DangerFullAccess, Asked: true, TwoPerson: true,
		State: Pending, CreatedAt: t0, Deadline: t0.Add(DefaultTimeout)}
}

func approveBy(by string) Decision { d := VerdictOf("approve"); d.By = by; return d }

func TestATwoPersonQuestionIsApprovedOnlyByTheSecondDifferentApprover(t *testing.T) {
	a := twoPersonQuestion()
	once, ok := Resolve(a, approveBy("alice"), t0.Add(time.Second))
	if !ok || once.State != Pending || once.FirstApproval == nil || once.FirstApproval.By != "alice" || AwaitsSecondApproval(a) || !AwaitsSecondApproval(once) {
		t.Fatalf("first approval: %+v %v", once, ok)
	}
	if _, granted := once.Grant(); granted {
		t.Fatal("one approval granted the tier")
	}
	twice, ok := Resolve(once, approveBy("bob"), t0.Add(2*time.Second))
	if tier, granted := twice.Grant(); !ok || !granted || tier != DangerFullAccess || twice.AnsweredBy != "bob" || twice.FirstApproval.By != "alice" {
		t.Fatalf("second approval: %+v %v", twice, ok)
	}
}

func TestTheSameApproverApprovingTwiceCountsOnce(t *testing.T) {
	once, _ := Resolve(twoPersonQuestion(), approveBy("alice"), t0.Add(time.Second))
	again, ok := Resolve(once, approveBy("alice"), t0.Add(2*time.Second))
	if ok || again.State != Pending || again.FirstApproval.At != t0.Add(time.Second) {
		t.Fatalf("alice approving again: %+v %v", again, ok)
	}
}

func TestAnyRefusalEndsATwoPersonQuestionBeforeOrAfterTheFirstApproval(t *testing.T) {
	for _, a := range []Approval{twoPersonQuestion(), func() Approval { o, _ := Resolve(twoPersonQuestion(), approveBy("alice"), t0); return o }()} {
		d := VerdictOf("refuse")
		d.By = "bob"
		ended, ok := Resolve(a, d, t0.Add(time.Second))
		if _, granted := ended.Grant(); !ok || ended.State != Resolved || ended.Verdict != Refused || granted {
			t.Fatalf("refusal: %+v %v", ended, ok)
		}
	}
	// One approval at the deadline is a timeout, not a grant.
	once, _ := Resolve(twoPersonQuestion(), approveBy("alice"), t0)
	late, _ := Resolve(once, approveBy("bob"), once.Deadline)
	if late.Verdict != TimedOut {
		t.Fatalf("a second approval at the deadline: %s", late.Verdict)
	}
}

func TestTheTwoPersonRuleCoversItsTierAndWider(t *testing.T) {
	r := TwoPersonFrom(WorkspaceWrite)
	if r.Covers(ReadOnly) || !r.Covers(WorkspaceWrite) || !r.Covers(DangerFullAccess) {
		t.Fatal("workspace-write and wider")
	}
	if TwoPersonFrom("").Covers(DangerFullAccess) || TwoPersonFrom(DangerFullAccess).Covers("root") {
		t.Fatal("no rule, or an unknown tier, covers nothing")
	}
}
