package mcp_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// waiting is an MCP client on a store with an answerable session: the
// client that asks, the person's service on the same store (an approver's
// client, never over MCP), the session and the progress reports the
// client has received.
type waiting struct {
	cs       *sdk.ClientSession
	st       *sqlite.Store
	person   *service.Service
	session  string
	progress chan *sdk.ProgressNotificationParams
}

func newWaiting(t *testing.T) *waiting { t.Helper(); return newWaitingWith(t, nil, nil) }

// newWaitingWith is newWaiting with the client's options (its progress
// handler is the test's).
func newWaitingWith(t *testing.T, opts *sdk.ClientOptions, session *sdk.ClientSessionOptions) *waiting {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Create(ctx, t.TempDir()+"/dont.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	deps := func(author string) service.Deps {
		return service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Approvals: service.Approvals{Store: st}, Author: author}
	}
	srv := mcp.New("test", func(context.Context, *tools.Tool) (*service.Service, func(), error) {
		return service.New(deps("agent")), func() {}, nil
	})
	w := &waiting{st: st, person: service.New(deps("person")), progress: make(chan *sdk.ProgressNotificationParams, 64)}
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		w.progress <- r.Params
	}
	w.cs = connect(t, srv, opts, session)
	_, ses := call(t, w.cs, "sessions_open", map[string]any{"tier": "read-only"})
	w.session = data(ses)["session_id"].(string)
	// A person's client reads the session: a question can be answered.
	if err := st.TouchSubscriber(ctx, w.session, "approver", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	return w
}

// escalate starts a blocking escalate with a progress token; the result
// arrives on the returned channel.
func (w *waiting) escalate(ctx context.Context, t *testing.T, call string) chan *sdk.CallToolResult {
	t.Helper()
	p := &sdk.CallToolParams{Name: "escalate", Arguments: map[string]any{"session": w.session, "call": call, "to": "workspace-write", "reason": "writes the build output"}}
	p.SetProgressToken("tok-" + call)
	out := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := w.cs.CallTool(ctx, p)
		if err != nil {
			res = nil
		}
		out <- res
	}()
	return out
}

var approvalIDIn = regexp.MustCompile(`apr:[0-9A-Z]{26}`)

// next is the next progress report; none within 10 s fails the test.
func (w *waiting) next(t *testing.T) *sdk.ProgressNotificationParams {
	t.Helper()
	select {
	case p := <-w.progress:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no progress report within 10 s")
		return nil
	}
}

// asked reads progress reports until one names the question, and returns
// its id and that report.
func (w *waiting) asked(t *testing.T) (string, *sdk.ProgressNotificationParams) {
	t.Helper()
	for {
		p := w.next(t)
		if id := approvalIDIn.FindString(p.Message); id != "" {
			return id, p
		}
	}
}

// A blocking escalate reports progress at once, names the question and
// the time left as soon as it is asked, and keeps reporting while it
// waits, so that a host that resets its timeout on progress keeps
// waiting; the person's approval then comes back as the grant.
func TestABlockingEscalateOverMCPReportsProgressUntilThePersonAnswers(t *testing.T) {
	defer mcp.SetProgressEvery(20 * time.Millisecond)()
	w := newWaiting(t)
	res := w.escalate(context.Background(), t, "c1")
	first := w.next(t)
	if first.ProgressToken != "tok-c1" || !strings.HasPrefix(first.Message, "waiting for ") {
		t.Fatalf("the first report: %+v", first)
	}
	id, p := w.asked(t)
	if !regexp.MustCompile(`; \d+(m\d+)?s left \(until `).MatchString(p.Message) || p.Total <= p.Progress {
		t.Fatalf("a report on the asked question: %+v", p)
	}
	// Reports go on while the question is open, progress growing.
	last := p.Progress
	for range 3 {
		q := w.next(t)
		if q.Progress <= last || !strings.Contains(q.Message, id) {
			t.Fatalf("a later report: %+v after progress %v", q, last)
		}
		last = q.Progress
	}
	if _, _, err := w.person.Escalations.Approve(context.Background(), id, "person"); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r == nil || r.IsError {
		t.Fatalf("escalate after the approval: %+v", r)
	}
	if env := envelopeOf(t, r); data(env)["granted_tier"] != "workspace-write" {
		t.Fatalf("escalate after the approval: %v", env)
	}
}

// A client that cancels its waiting escalate (notifications/cancelled)
// leaves a question nobody waits for: it ends cancelled, and its record,
// its ending frame and every display say the asking client went away —
// not a bare withdrawal.
func TestAnMCPClientThatCancelsItsWaitingEscalateEndsTheQuestionAsGone(t *testing.T) {
	w := newWaiting(t)
	ctx, cancel := context.WithCancel(context.Background())
	res := w.escalate(ctx, t, "c1")
	id, _ := w.asked(t)
	cancel() // the SDK sends notifications/cancelled
	<-res
	// The person's wait ends with the question's ending.
	_, _, err := w.person.Escalations.Wait(context.Background(), id)
	if !errs.Is(err, service.ApprovalCancelled) {
		t.Fatalf("the question after the client cancelled: %v", err)
	}
	a, err := w.st.GetApproval(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict != approvals.Cancelled || a.Cause != approvals.CauseClientGone || !strings.Contains(a.Detail, "the asking client went away") {
		t.Fatalf("the record: verdict %s, cause %s, detail %q", a.Verdict, a.Cause, a.Detail)
	}
	page, err := w.person.Escalations.Frames(context.Background(), service.FramesInput{SessionID: w.session})
	if err != nil {
		t.Fatal(err)
	}
	var ending *approvals.Frame
	for i, f := range page.Frames {
		if f.Kind == approvals.FrameResolved && f.RequestID == id {
			ending = &page.Frames[i]
		}
	}
	if ending == nil || ending.Verdict != approvals.Cancelled || ending.Cause != approvals.CauseClientGone {
		t.Fatalf("the ending frame: %+v", ending)
	}
	if rep, err := w.person.Escalations.Audit(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("audit: %+v %v", rep, err)
	}
}

// The pattern for hosts that do not reset their timeout on progress: ask
// with no_wait, then approvals_wait in calls bounded by max_wait, each
// failing approval-still-open until the verdict comes.
func TestEscalateWithoutWaitThenBoundedWaitsOverMCPReachTheVerdict(t *testing.T) {
	w := newWaiting(t)
	res, q := call(t, w.cs, "escalate", map[string]any{"session": w.session, "call": "c1", "to": "workspace-write", "reason": "writes", "no_wait": true})
	id, _ := data(q)["approval_id"].(string)
	if res.IsError || id == "" || data(q)["state"] != "pending" {
		t.Fatalf("escalate no_wait: %v", q)
	}
	// Still open: an error (never read as a grant) whose remediation is
	// the next bounded call, as an MCP tool call.
	res, env := call(t, w.cs, "approvals_wait", map[string]any{"id": id, "max_wait": "50ms"})
	refusedWith(t, res, env, "approval-still-open", "a bounded wait on an open question")
	if next := data(env)["remediation"].([]any)[0].(map[string]any)["command"]; next != `approvals_wait {"id":"`+id+`","max_wait":"30s"}` {
		t.Fatalf("the next step: %v", next)
	}
	if _, show := call(t, w.cs, "approvals_show", map[string]any{"id": id}); data(show)["state"] != "pending" {
		t.Fatalf("the bounded wait changed the question: %v", show)
	}
	if _, _, err := w.person.Escalations.Approve(context.Background(), id, "person"); err != nil {
		t.Fatal(err)
	}
	res, env = call(t, w.cs, "approvals_wait", map[string]any{"id": id, "max_wait": "30s"})
	if res.IsError || data(env)["granted_tier"] != "workspace-write" {
		t.Fatalf("a bounded wait after the approval: %v", env)
	}
	// A bound that is not a duration is refused.
	res, env = call(t, w.cs, "approvals_wait", map[string]any{"id": id, "max_wait": "forever"})
	refusedWith(t, res, env, "usage", "max_wait forever")
}

// approvals_wait reports progress the same way, naming the question and
// its time left from the first report.
func TestApprovalsWaitOverMCPReportsProgressOnTheQuestion(t *testing.T) {
	w := newWaiting(t)
	_, q := call(t, w.cs, "escalate", map[string]any{"session": w.session, "call": "c1", "to": "workspace-write", "reason": "writes", "no_wait": true})
	id := data(q)["approval_id"].(string)
	p := &sdk.CallToolParams{Name: "approvals_wait", Arguments: map[string]any{"id": id}}
	p.SetProgressToken(7)
	res := make(chan *sdk.CallToolResult, 1)
	go func() { r, _ := w.cs.CallTool(context.Background(), p); res <- r }()
	first := w.next(t)
	if !strings.Contains(first.Message, "a person to answer "+id) || !strings.Contains(first.Message, " left (until ") {
		t.Fatalf("the first report: %+v", first)
	}
	if _, _, err := w.person.Escalations.Refuse(context.Background(), id, "not now", "person"); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r == nil || !r.IsError || data(envelopeOf(t, r))["code"] != "approval-refused" {
		t.Fatalf("approvals_wait after the refusal: %+v", r)
	}
}
