package integration_test

// Tier escalation through the functions: sessions, questions, answers and
// frames in DynamoDB, deadlines on the timeout queue. This file sorts
// after integration_test.go on purpose: a question asked through the api
// function (120 s deadline) leaves a delayed message on the queue, and
// TestAMessageThatIsNotYetDueIsReenqueued counts delayed messages.

import (
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
)

// approver makes an approver token of the project through the store, as
// an operator's bootstrap would.
func (p *project) approver() string {
	p.t.Helper()
	res, err := (service.New(service.Deps{ToolNames: tools.Names(), Store: p.store, Confirmations: p.store, Tokens: p.store, Project: p.store.Project()})).Credentials.Create(ctx, "approver", "integration-approver")
	if err != nil {
		p.t.Fatal(err)
	}
	return res.Secret
}

// framesPage is the data of an approvals.frames envelope.
type framesPage struct {
	Frames []approvals.Frame `json:"frames"`
	Cursor int64             `json:"cursor"`
}

// frames long-polls a session's frames through fn as the approver, for at
// most wait (kept short: the emulator serves one invoke at a time).
func (p *project) frames(fn *function, token, session string, after int64, wait string) framesPage {
	p.t.Helper()
	e := p.ok(fn, "approvals.frames", map[string]any{"session": session, "after": after, "wait": wait, "subscriber": "integration-page"}, token)
	b, _ := json.Marshal(e.data())
	var page framesPage
	if err := json.Unmarshal(b, &page); err != nil {
		p.t.Fatalf("frames page %s: %v", b, err)
	}
	return page
}

// answer sends an approver's answer the way the web page does: the click
// is the person's confirmation, from a client that declares cli-confirm-v1.
func (p *project) answer(fn *function, token, verb, id string) envelope {
	p.t.Helper()
	// An answer names the digest of the question it answers, as shown.
	show, _ := json.Marshal(map[string]any{"args": map[string]any{"id": id}})
	shown := p.s.request(p.t, fn, http.MethodPost, "/v1/tools/approvals.show", token, show, nil).str("shown_digest")
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"id": id, "shown_digest": shown}, "cli_confirmed": true})
	return p.s.request(p.t, fn, http.MethodPost, "/v1/tools/approvals."+verb, token, body, map[string]string{"X-Dont-CLI-Caps": "cli-confirm-v1"})
}

// escalation opens a read-only session through fn, lets the approver read
// its frames (a live subscriber) and asks for danger-full-access for one
// call without waiting. It returns the session and the question's id.
func (p *project) escalation(fn *function, approver string) (session, id string) {
	p.t.Helper()
	session = p.ok(fn, "sessions.open", map[string]any{"tier": "read-only", "name": "build-bot"}).str("session_id")
	if page := p.frames(fn, approver, session, 0, "1s"); len(page.Frames) != 0 || page.Cursor != 0 {
		p.t.Fatalf("a new session has frames: %+v", page)
	}
	e := p.ok(fn, "escalate", map[string]any{"session": session, "call": "c-17", "to": "danger-full-access",
		"reason": "installs into /usr/local", "preview": "make install", "no_wait": true})
	id = e.str("approval_id")
	if e.str("state") != string(approvals.Pending) || id == "" {
		p.t.Fatalf("escalate --no-wait answered %s", e.Raw)
	}
	return session, id
}

// storedFrames reads a session's whole frame log from DynamoDB.
func (p *project) storedFrames(session string) []approvals.Frame {
	p.t.Helper()
	frames, err := p.store.Frames(ctx, session, 0, 100)
	if err != nil {
		p.t.Fatal(err)
	}
	return frames
}

func (p *project) storedApproval(id string) approvals.Approval {
	p.t.Helper()
	a, err := p.store.GetApproval(ctx, id)
	if err != nil {
		p.t.Fatal(err)
	}
	return a
}

// scheduledEvent is EventBridge's "Scheduled Event" for the sweep rule.
func (s *suite) scheduledEvent() json.RawMessage {
	return json.RawMessage(`{"version":"0","id":"5a7d7f3c-7d3e-4a36-9f7a-3f5d3c6c2a12","detail-type":"Scheduled Event",
		"source":"aws.events","account":"000000000000","time":"` + time.Now().UTC().Format(time.RFC3339) + `","region":"` + s.region + `",
		"resources":["arn:aws:events:` + s.region + `:000000000000:rule/SweepSchedule"],"detail":{}}`)
}

func endingFrames(frames []approvals.Frame) []approvals.Frame {
	var out []approvals.Frame
	for _, f := range frames {
		if f.Kind == approvals.FrameResolved {
			out = append(out, f)
		}
	}
	return out
}

// The approval path through the API function: a session, an approver
// reading its frames by long-poll, a question asked without waiting, the
// approver's answer, and the verdict and the ending frame in DynamoDB.
func TestAnEscalationIsApprovedThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	approver := p.approver()
	session, id := p.escalation(s.api, approver)

	a := p.storedApproval(id)
	if a.State != approvals.Pending || !a.Asked || a.SessionID != session || a.Deadline.Sub(a.CreatedAt) != approvals.DefaultTimeout {
		t.Fatalf("question in DynamoDB: %+v", a)
	}
	page := p.frames(s.api, approver, session, 0, "2s")
	if len(page.Frames) != 1 || page.Frames[0].Kind != approvals.FrameRequested || page.Frames[0].RequestID != id ||
		page.Frames[0].Preview != "make install" || page.Cursor != 1 {
		t.Fatalf("the approver's long-poll: %+v", page)
	}

	// Only approver tokens answer: the harness that asked cannot.
	if e := p.answer(s.api, p.token, "approve", id); e.Status != http.StatusForbidden {
		t.Fatalf("the requester approved its own request: %d %s", e.Status, e.Raw)
	}
	e := p.answer(s.api, approver, "approve", id)
	if e.Status != http.StatusOK || e.str("verdict") != string(approvals.Approved) || e.data()["applied"] != true || e.str("granted_tier") != "danger-full-access" {
		t.Fatalf("approve: %d %s", e.Status, e.Raw)
	}
	// The approver's next long-poll returns the ending at once.
	start := time.Now()
	page = p.frames(s.api, approver, session, page.Cursor, "20s")
	if len(page.Frames) != 1 || page.Frames[0].Kind != approvals.FrameResolved || page.Frames[0].Verdict != approvals.Approved ||
		page.Frames[0].GrantedTier != approvals.DangerFullAccess || page.Cursor != 2 || time.Since(start) > 10*time.Second {
		t.Fatalf("the ending frame after %v: %+v", time.Since(start), page)
	}

	// The requester resumes its wait: the grant, for this one call.
	w := p.ok(s.api, "approvals.wait", map[string]any{"id": id})
	if w.str("granted_tier") != "danger-full-access" || w.str("session_tier") != "read-only" {
		t.Fatalf("approvals wait: %s", w.Raw)
	}
	// A later answer changes nothing and is told the recorded verdict.
	late := p.answer(s.api, approver, "refuse", id)
	if late.Status != http.StatusOK || late.data()["applied"] != false || late.str("verdict") != string(approvals.Approved) ||
		!slices.Contains(late.warnings(), "approval-already-resolved") {
		t.Fatalf("a second answer: %d %s", late.Status, late.Raw)
	}

	// DynamoDB: the verdict, one ending frame after the question, the
	// session's default tier untouched, the audit clean.
	a = p.storedApproval(id)
	if a.Verdict != approvals.Approved || !a.Announced || a.AnsweredBy == "" {
		t.Fatalf("approval in DynamoDB: %+v", a)
	}
	frames := p.storedFrames(session)
	if len(frames) != 2 || frames[0].Cursor != 1 || frames[1].Cursor != 2 || len(endingFrames(frames)) != 1 || frames[1].RequestID != id {
		t.Fatalf("frames in DynamoDB: %+v", frames)
	}
	if ses, err := p.store.GetSession(ctx, session); err != nil || ses.Tier != approvals.ReadOnly {
		t.Fatalf("session %+v %v", ses, err)
	}
	audit := p.ok(s.api, "approvals.audit", map[string]any{})
	if audit.data()["questions"] != 1.0 || audit.data()["frames"] != 2.0 {
		t.Fatalf("audit through the API: %s", audit.Raw)
	}
}

// A question nobody answers ends timed-out through the sweeper function
// when its delayed message comes due, with exactly one ending frame, even
// when SQS delivers the message twice.
func TestAnUnansweredEscalationEndsTimedOutThroughTheSweeper(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	approver := p.approver()
	session, id := p.escalation(s.apiShort, approver)
	a := p.storedApproval(id)
	if left := a.Deadline.Sub(a.CreatedAt); left != s.short {
		t.Fatalf("the short function asked with a deadline of %v, want %v", left, s.short)
	}

	// Poll the queue as Lambda's poller would, until the question's
	// message comes due; nothing calls the API meanwhile (its own sweep
	// would end the question first).
	var mine []sqstypes.Message
	deadline := time.Now().Add(s.short + 15*time.Second)
	for len(mine) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the question's timeout message never came due")
		}
		var others []sqstypes.Message
		for _, m := range s.receive(t, time.Second) {
			if messageFor(m, id) {
				mine = append(mine, m)
			} else {
				others = append(others, m)
			}
		}
		s.sweep(t, others)
	}
	if a := p.storedApproval(id); a.State != approvals.Pending {
		t.Fatalf("ended before the sweeper had its message: %s", a.Verdict)
	}
	again := mine[0]
	again.MessageId = aws.String(aws.ToString(mine[0].MessageId) + "-redelivered")
	if failed := s.sweep(t, []sqstypes.Message{mine[0], again}); len(failed) != 0 {
		t.Fatalf("the sweeper failed %v", failed)
	}

	a = p.storedApproval(id)
	if a.Verdict != approvals.TimedOut || a.Cause != approvals.CauseDeadline || !a.Announced || a.ResolvedAt == nil || a.ResolvedAt.Before(a.Deadline) {
		t.Fatalf("approval in DynamoDB: %+v", a)
	}
	t.Logf("deadline lag %v (deadline -> committed timed-out)", a.ResolvedAt.Sub(a.Deadline))
	endings := endingFrames(p.storedFrames(session))
	if len(endings) != 1 || endings[0].RequestID != id || endings[0].Verdict != approvals.TimedOut || endings[0].Cursor != 2 {
		t.Fatalf("ending frames %+v, want exactly one timed-out", endings)
	}
	// The requester's resumed wait is a refusal (exit 1): no tier.
	w := p.call(s.apiShort, "approvals.wait", map[string]any{"id": id})
	if w.Body["ok"] != false || w.code() != "approval-timed-out" || w.str("granted_tier") != "" {
		t.Fatalf("approvals wait after the deadline: %d %s", w.Status, w.Raw)
	}
	// The approver's page sees the ending on its next read.
	if page := p.frames(s.apiShort, approver, session, 1, "1s"); len(page.Frames) != 1 || page.Frames[0].Verdict != approvals.TimedOut {
		t.Fatalf("frames after the question: %+v", page)
	}
}

// The scheduled sweep is the backstop for questions too: one whose message
// was lost is ended timed-out in its project, which its first question
// registered.
func TestTheScheduledSweepEndsAQuestionWhoseMessageWasLost(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	approver := p.approver()
	session, id := p.escalation(s.apiShort, approver)

	lost := false
	deadline := time.Now().Add(s.short + 15*time.Second)
	for !lost {
		if time.Now().After(deadline) {
			t.Fatal("the question's timeout message never came due")
		}
		var others []sqstypes.Message
		for _, m := range s.receive(t, time.Second) {
			if messageFor(m, id) {
				s.delete(t, []sqstypes.Message{m})
				lost = true
			} else {
				others = append(others, m)
			}
		}
		s.sweep(t, others)
	}
	if a := p.storedApproval(id); a.State != approvals.Pending {
		t.Fatalf("ended without its message: %s", a.Verdict)
	}
	if _, swept := s.scheduledSweep(t); swept[p.name] != 1 {
		t.Fatalf("the scheduled sweep did not visit %s (registered by its question): %v", p.name, swept)
	}
	if a := p.storedApproval(id); a.Verdict != approvals.TimedOut || !a.Announced {
		t.Fatalf("approval %+v", a)
	}
	if endings := endingFrames(p.storedFrames(session)); len(endings) != 1 {
		t.Fatalf("%d ending frames", len(endings))
	}
}
