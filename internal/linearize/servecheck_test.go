package linearize_test

import (
	"context"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/linearize"
	"github.com/dont-cli/dont/internal/store"
)

// A question whose deadline passed just before a batch's check is the
// check's to end when dont serve has not yet: a restarted server has no
// timer for a question asked before its kill, and its ticker runs once a
// second. The proof's serve-crash run once reported such a question,
// 10 ms past its deadline, as overdue: the checking service had no
// approvals store, so its sweep skipped questions.
func TestTheServeBackendsCheckEndsAQuestionDueBeforeTheServersTickerRuns(t *testing.T) {
	b, err := linearize.NewServe(t.TempDir(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	svc := b.Service()
	st, ok := svc.Store.(store.ApprovalStore)
	if !ok {
		t.Fatal("the serve backend's store keeps no questions")
	}
	ctx := context.Background()
	now := time.Now().UTC()
	ses := approvals.Session{ID: ids.New(ids.Session, now), Tier: approvals.ReadOnly, OpenedAt: now}
	if err := st.CreateSession(ctx, ses); err != nil {
		t.Fatal(err)
	}
	// Asked by a server that was killed since: due a moment ago.
	a := approvals.Approval{ID: ids.New(ids.Approval, now), SessionID: ses.ID, CallID: "call-1", From: approvals.ReadOnly,
		To: approvals.WorkspaceWrite, Preview: "make", Reason: "writes the build folder", Asked: true,
		State: approvals.Pending, CreatedAt: now.Add(-time.Second), Deadline: now.Add(-time.Millisecond)}
	f := approvals.RequestFrame(a)
	if err := st.CreateApproval(ctx, a, &f); err != nil {
		t.Fatal(err)
	}
	rep, err := invariants.Verify(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the check reported what its own sweep should have ended: %s", rep.Error())
	}
	got, err := st.GetApproval(ctx, a.ID)
	if err != nil || got.State != approvals.Resolved || got.Verdict != approvals.TimedOut {
		t.Fatalf("the question after the check: %+v, %v; want it timed out", got, err)
	}
}
