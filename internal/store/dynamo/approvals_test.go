package dynamo_test

import (
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
	"github.com/dont-cli/dont/internal/storetest"
)

// The approval store's conformance suite against the DynamoDB server. The
// races spread their goroutines over separate clients of the same table
// and project, the way separate Lambda invocations reach it.
func TestApprovalConformance(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) (store.ApprovalStore, func() store.ApprovalStore) {
		s := newStore(t)
		return s, func() store.ApprovalStore { return dynamo.New(newClient(nil, nil), table, s.Project()) }
	})
}

// approvalService is a project's service over its own client of the
// shared table, as one Lambda invocation would have it.
func approvalService(project string, counter *capacity.Counter) (*service.Service, *dynamo.Store) {
	st := dynamo.New(newClient(nil, counter), table, project)
	return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "test", Approvals: service.Approvals{Store: st}}), st
}

// askedQuestion opens a session, reads its frames (a live subscriber) and
// escalates without waiting: the open question's id.
func askedQuestion(t *testing.T, svc *service.Service) (session, id string) {
	t.Helper()
	res, err := svc.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: string(approvals.ReadOnly)})
	if err != nil {
		t.Fatal(err)
	}
	session = res.ID
	if _, err := svc.Escalations.Frames(ctx, service.FramesInput{SessionID: session, Subscriber: "approver"}); err != nil {
		t.Fatal(err)
	}
	res2, _, err := svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: session, CallID: "c-17", To: string(approvals.DangerFullAccess),
		Reason: "installs into /usr/local", Preview: "make install", NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	return session, res2.ID
}

// Many approvers answer one request at once, each through its own client:
// the conditional write lets exactly one decide; every other answer
// changes nothing and is told the recorded verdict; the log has one
// ending frame and passes the audit.
func TestManyApproversAnsweringOneRequestExactlyOneWins(t *testing.T) {
	needServer(t)
	project := "test-" + randomName()
	svc, st := approvalService(project, nil)
	session, id := askedQuestion(t, svc)

	const n = 24
	answers := []any{"approve", "refuse", "yes", "no", "maybe", true}
	results := make([]service.Decided, n)
	errs := make([]error, n)
	warns := make([][]envelope.Warning, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		other, _ := approvalService(project, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], warns[i], errs[i] = other.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: id, Answer: answers[i%len(answers)], By: fmt.Sprintf("approver-%d", i)})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("answer %d: %v", i, errs[i])
		}
		v := results[i].View
		switch {
		case *v.Applied && winner >= 0:
			t.Fatalf("answers %d and %d both applied", winner, i)
		case *v.Applied:
			winner = i
		case !hasWarning(results[i], "approval-already-resolved"):
			t.Fatalf("answer %d lost without being told: %+v", i, results[i].Note)
		}
	}
	if winner < 0 {
		t.Fatal("no answer applied")
	}
	// The announcement is best-effort and time-bound: under load an
	// answer may be told it failed (announce-failed), and then the next
	// sweep appends the ending. Either way there is exactly one.
	for i := range n {
		if slices.ContainsFunc(warns[i], func(w envelope.Warning) bool { return w.Code == envelope.WarnAnnounceFailed }) {
			if _, err := svc.Escalations.SweepApprovals(ctx, 0); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	got, err := st.GetApproval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := approvals.VerdictOf(answers[winner%len(answers)]).Verdict
	if got.Verdict != want || got.AnsweredBy != fmt.Sprintf("approver-%d", winner) || !got.Announced {
		t.Fatalf("stored %s by %s (announced %v); the winner, approver-%d, said %s", got.Verdict, got.AnsweredBy, got.Announced, winner, want)
	}
	for i := range n {
		if v := results[i].View; v.Verdict != want {
			t.Fatalf("answer %d was told %s, the recorded verdict is %s", i, v.Verdict, want)
		}
	}
	frames, err := st.Frames(ctx, session, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 2 || frames[1].Kind != approvals.FrameResolved || frames[1].Verdict != want || frames[1].Cursor != 2 {
		t.Fatalf("frames %+v: want the question and exactly one ending", frames)
	}
	if rep, err := svc.Escalations.Audit(ctx); err != nil || !rep.OK() {
		t.Fatalf("audit: %+v %v", rep, err)
	}
}

func hasWarning(r service.Decided, code envelope.WarningCode) bool {
	return r.Note != nil && r.Note.Code == code
}

// The deadline sweep reads the index range of due questions, and the
// announcement repair the range of unannounced endings: what they read
// follows what is due or missing, not what is stored.
func TestDueAndUnannouncedApprovalsReadOnlyTheirIndexRange(t *testing.T) {
	needServer(t)
	counter := newCounter()
	st := dynamo.New(newClient(nil, counter), table, "test-"+randomName())
	ses := approvals.Session{ID: ids.New(ids.Session, t0), Tier: approvals.ReadOnly, OpenedAt: t0}
	if err := st.CreateSession(ctx, ses); err != nil {
		t.Fatal(err)
	}
	ask := func(call string, deadline time.Time) approvals.Approval {
		a := approvals.Approval{ID: ids.New(ids.Approval, t0), SessionID: ses.ID, CallID: call, From: approvals.ReadOnly,
			To: approvals.WorkspaceWrite, Reason: "r", Asked: true, State: approvals.Pending, CreatedAt: t0, Deadline: deadline}
		q := approvals.RequestFrame(a)
		if err := st.CreateApproval(ctx, a, &q); err != nil {
			t.Fatal(err)
		}
		return a
	}
	var ended []approvals.Approval
	for i := range 40 {
		a := ask(fmt.Sprintf("open-%d", i), t0.Add(time.Hour))
		if i < 30 { // resolved and announced: out of the index
			r, _ := approvals.Resolve(a, approvals.VerdictOf("no"), t0.Add(time.Second))
			f, _ := approvals.EndingFrame(r)
			if err := st.ResolveApproval(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AnnounceEnding(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		ask(fmt.Sprintf("due-%d", i), t0.Add(time.Duration(i)*time.Second))
	}
	for i := range 2 { // resolved, announce pending
		r, _ := approvals.Resolve(ask(fmt.Sprintf("quiet-%d", i), t0.Add(time.Hour)), approvals.VerdictOf("yes"), t0.Add(time.Second))
		if err := st.ResolveApproval(ctx, r); err != nil {
			t.Fatal(err)
		}
		ended = append(ended, r)
	}

	counter.Reset()
	due, err := st.DueApprovals(ctx, t0.Add(time.Minute), 100)
	if err != nil || len(due) != 3 {
		t.Fatalf("due %d, %v; want 3", len(due), err)
	}
	if q := counter.Usage()["Query"]; q.Requests != 1 || q.ItemsRead != 3 {
		t.Fatalf("the due sweep made %d queries reading %d items; want 1 reading the 3 due of 45 stored", q.Requests, q.ItemsRead)
	}
	counter.Reset()
	missing, err := st.Unannounced(ctx, 100)
	if err != nil || len(missing) != 2 || missing[0].ID != ended[0].ID || missing[1].ID != ended[1].ID {
		t.Fatalf("unannounced %v, %v; want the two resolved and not announced, oldest first", missing, err)
	}
	if q := counter.Usage()["Query"]; q.Requests != 1 || q.ItemsRead != 2 {
		t.Fatalf("the repair made %d queries reading %d items; want 1 reading 2", q.Requests, q.ItemsRead)
	}
}

// Frames carry ttl only when the store keeps them for a limited time, and
// nothing else in the approvals' keys does: a deadline is never a TTL. A
// question's frame counts the retention from its deadline, so that an
// open question's frame outlives the question.
func TestOnlyFramesCarryTTLAndOnlyWhenRetentionIsSet(t *testing.T) {
	needServer(t)
	client := newClient(nil, nil)
	project := "test-" + randomName()
	for _, keep := range []time.Duration{0, 30 * 24 * time.Hour} {
		st := dynamo.New(client, table, project)
		st.SetFrameRetention(keep)
		ses := approvals.Session{ID: ids.New(ids.Session, t0), Tier: approvals.ReadOnly, OpenedAt: t0}
		if err := st.CreateSession(ctx, ses); err != nil {
			t.Fatal(err)
		}
		a := approvals.Approval{ID: ids.New(ids.Approval, t0), SessionID: ses.ID, CallID: "c-" + ses.ID, To: approvals.WorkspaceWrite,
			Asked: true, State: approvals.Pending, CreatedAt: t0, Deadline: t0.Add(2 * time.Minute)}
		q := approvals.RequestFrame(a)
		if err := st.CreateApproval(ctx, a, &q); err != nil {
			t.Fatal(err)
		}
		// A scan reads at most 1 MB per page and the table is shared by
		// every test: follow the pages to the end.
		var items []map[string]types.AttributeValue
		pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), FilterExpression: aws.String("begins_with(pk, :p)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "P#" + project + "#"}}})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, out.Items...)
		}
		frames := 0
		for _, it := range items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			ttl, has := it[dynamo.TTLAttribute]
			isFrame := strings.Contains(pk, "#FR#"+ses.ID)
			if isFrame {
				frames++
			}
			switch {
			case has && !isFrame:
				t.Errorf("%s carries ttl", pk)
			case isFrame && keep == 0 && has:
				t.Errorf("frame %s carries ttl without a retention", pk)
			case isFrame && keep > 0:
				n, _ := ttl.(*types.AttributeValueMemberN)
				if n == nil || n.Value != fmt.Sprint(a.Deadline.Add(keep).Unix()) {
					t.Errorf("frame ttl %v, want %d (its question's deadline + the retention)", ttl, a.Deadline.Add(keep).Unix())
				}
			}
		}
		if frames != 1 {
			t.Fatalf("retention %v: %d frames of the session, want 1", keep, frames)
		}
	}
}

// A question whose transaction committed but whose answer was lost is
// retried with its ClientRequestToken: one question, one frame, cursor 1.
// A transaction cancelled because another frame took the counter first
// is retried with the new cursor.
func TestALostResponseAndACounterConflictStillGiveGapFreeCursors(t *testing.T) {
	f := &faults{op: "TransactWriteItems"}
	st := faultyStore(t, f)
	ses := approvals.Session{ID: ids.New(ids.Session, t0), Tier: approvals.ReadOnly, OpenedAt: t0}
	if err := st.CreateSession(ctx, ses); err != nil {
		t.Fatal(err)
	}
	question := func(call string) (approvals.Approval, *approvals.Frame) {
		a := approvals.Approval{ID: ids.New(ids.Approval, t0), SessionID: ses.ID, CallID: call, To: approvals.WorkspaceWrite,
			Asked: true, State: approvals.Pending, CreatedAt: t0, Deadline: t0.Add(2 * time.Minute)}
		q := approvals.RequestFrame(a)
		return a, &q
	}
	f.mu.Lock()
	f.dropOnSuccess = 1
	f.mu.Unlock()
	a, q := question("c1")
	if err := st.CreateApproval(ctx, a, q); err != nil {
		t.Fatalf("the retry of a committed question must succeed: %v", err)
	}
	if q.Cursor != 1 {
		t.Fatalf("cursor %d", q.Cursor)
	}
	// Items: approval, pointer, call lock, counter, frame. The counter's
	// condition fails once: another frame got there first.
	f.mu.Lock()
	f.queue = []fault{cancelled("None", "None", "None", "ConditionalCheckFailed", "None")}
	f.mu.Unlock()
	before := f.count()
	b, qb := question("c2")
	if err := st.CreateApproval(ctx, b, qb); err != nil {
		t.Fatal(err)
	}
	if n := f.count() - before; n != 2 || qb.Cursor != 2 {
		t.Fatalf("%d attempts, cursor %d; want a second attempt and cursor 2", n, qb.Cursor)
	}
	frames, err := st.Frames(ctx, ses.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 2 || frames[0].RequestID != a.ID || frames[1].RequestID != b.ID || frames[1].Cursor != 2 {
		t.Fatalf("frames %+v", frames)
	}
	// A failed condition on the approval itself is not retried.
	f.mu.Lock()
	f.queue = []fault{cancelled("ConditionalCheckFailed", "None", "None", "ConditionalCheckFailed", "None")}
	f.mu.Unlock()
	before = f.count()
	c, qc := question("c3")
	if err := st.CreateApproval(ctx, c, qc); !store.FailedOn(err, c.ID) || f.count()-before != 1 {
		t.Fatalf("want one attempt and ConditionFailed on %s, got %v after %d", c.ID, err, f.count()-before)
	}
}
