package watchscreen

import (
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
)

var w0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func question(id string, at time.Time, timeout time.Duration) approvals.Frame {
	d := at.Add(timeout)
	return approvals.Frame{SessionID: "ses:x", Kind: approvals.FrameRequested, RequestID: id, At: at, CallID: "c-" + id,
		From: approvals.ReadOnly, To: "workspace-write", Preview: "make", Deadline: &d}
}

func TestWatchClearsARequestAtItsDeadlineOnItsOwnClock(t *testing.T) {
	m := NewModel()
	m.Frame(question("apr:1", w0, 120*time.Second), w0)
	if act, _ := m.Key("y", w0.Add(119*time.Second)); act == nil || act.RequestID != "apr:1" || !act.Approve {
		t.Fatalf("a keystroke before the deadline: %+v", act)
	}
	m = NewModel()
	m.Frame(question("apr:1", w0, 120*time.Second), w0)
	// No ending frame ever arrives; the client's own clock passes the deadline.
	act, said := m.Key("y", w0.Add(120*time.Second))
	if act != nil {
		t.Fatalf("a keystroke after the deadline was sent as an answer: %+v", act)
	}
	if got := strings.Join(said, "|"); !strings.Contains(got, "apr:1: deadline passed; cleared") || !strings.Contains(got, "not sent") {
		t.Fatalf("said %q", got)
	}
	if m.Prompt(w0.Add(121*time.Second)) != "" || len(m.pending) != 0 {
		t.Fatal("the dead request is still pending")
	}
}

func TestWatchClearsARequestWhenItsEndingFrameArrives(t *testing.T) {
	m := NewModel()
	m.Frame(question("apr:1", w0, 120*time.Second), w0)
	said := m.Frame(approvals.Frame{Kind: approvals.FrameResolved, RequestID: "apr:1", Verdict: approvals.Refused, By: "bob"}, w0.Add(time.Second))
	if len(said) != 1 || !strings.Contains(said[0], "refused by bob (cleared)") {
		t.Fatalf("said %q", said)
	}
	if act, _ := m.Key("y", w0.Add(2*time.Second)); act != nil {
		t.Fatalf("a keystroke after the ending frame was sent: %+v", act)
	}
}

func TestWatchBoundsADeadlineByItsOwnClock(t *testing.T) {
	m := NewModel()
	// The server's clock runs an hour ahead: its deadline is far in this
	// client's future, but the question only has 120 s.
	m.Frame(question("apr:1", w0.Add(time.Hour), 120*time.Second), w0)
	if act, _ := m.Key("y", w0.Add(121*time.Second)); act != nil {
		t.Fatalf("a skewed deadline kept a dead request alive: %+v", act)
	}
	// A question delivered late (already dead by its own deadline) is never shown.
	if said := m.Frame(question("apr:2", w0, 120*time.Second), w0.Add(3*time.Minute)); said != nil || m.Current(w0.Add(3*time.Minute)) != nil {
		t.Fatalf("a dead question was shown: %q", said)
	}
}

func TestWatchAnswersTheOldestOpenRequestOnceAndSendsNothingForOtherKeys(t *testing.T) {
	m := NewModel()
	m.Frame(question("apr:1", w0, 120*time.Second), w0)
	m.Frame(question("apr:2", w0, 120*time.Second), w0.Add(time.Second))
	now := w0.Add(2 * time.Second)
	if !strings.HasPrefix(m.Prompt(now), "apr:1 [1 min 58 s left] approve workspace-write for call c-apr:1? [y/n] (+1 waiting)") {
		t.Fatalf("prompt %q", m.Prompt(now))
	}
	for _, key := range []string{"", "maybe", "yes please", "1"} {
		if act, said := m.Key(key, now); act != nil || !strings.Contains(strings.Join(said, ""), "type y to approve or n to refuse apr:1") {
			t.Fatalf("%q: %+v %q", key, act, said)
		}
	}
	if act, _ := m.Key("n", now); act == nil || act.RequestID != "apr:1" || act.Approve {
		t.Fatalf("n: %+v", act)
	}
	if act, _ := m.Key("Y", now); act == nil || act.RequestID != "apr:2" || !act.Approve {
		t.Fatalf("the next keystroke answers the next request: %+v", act)
	}
	if act, _ := m.Key("y", now); act != nil {
		t.Fatalf("a request was answered twice: %+v", act)
	}
}

// The attack: the person reads question A at the watch prompt and types
// y; meanwhile the agent cancels A and asks B, whose prompt takes A's
// place. The y answers nothing: the person is told the question they
// answered ended, and B is answered only by a later keystroke, bound to
// B's digest.
func TestAYTypedForOneQuestionNeverAnswersTheNextInWatch(t *testing.T) {
	m := NewModel()
	a := question("apr:A", w0, 120*time.Second)
	a.ShownDigest = "sha256:a"
	m.Frame(a, w0)
	if p := m.Prompt(w0.Add(time.Second)); !strings.HasPrefix(p, "apr:A ") {
		t.Fatalf("prompt %q", p)
	}
	m.Frame(approvals.Frame{Kind: approvals.FrameResolved, RequestID: "apr:A", Verdict: approvals.Cancelled}, w0.Add(2*time.Second))
	b := question("apr:B", w0.Add(2*time.Second), 120*time.Second)
	b.ShownDigest = "sha256:b"
	m.Frame(b, w0.Add(2*time.Second))
	m.Prompt(w0.Add(3 * time.Second)) // B is drawn before the line typed for A arrives
	act, said := m.Key("y", w0.Add(3*time.Second))
	if act != nil {
		t.Fatalf("a y typed for the cancelled question answered %+v", act)
	}
	if got := strings.Join(said, "|"); !strings.Contains(got, "apr:A ended before your answer") || !strings.Contains(got, "nothing was answered") {
		t.Fatalf("said %q", got)
	}
	act, _ = m.Key("y", w0.Add(4*time.Second))
	if act == nil || act.RequestID != "apr:B" || act.ShownDigest != "sha256:b" || !act.Approve {
		t.Fatalf("the next keystroke, for what is shown: %+v", act)
	}
}

// A question whose asking client went away (an MCP client cancelled or
// disconnected) is cleared from the terminal with that reason, not as a
// bare cancel.
func TestWatchSaysTheAskingClientWentAwayWhenItCancelledOverMCP(t *testing.T) {
	m := NewModel()
	m.Frame(question("apr:1", w0, 120*time.Second), w0)
	said := m.Frame(approvals.Frame{Kind: approvals.FrameResolved, RequestID: "apr:1", Verdict: approvals.Cancelled,
		Cause: approvals.CauseClientGone, By: "mcp:agent"}, w0.Add(time.Second))
	if len(said) != 1 || !strings.Contains(said[0], "apr:1: cancelled: the asking client went away (cleared)") {
		t.Fatalf("said %q", said)
	}
}
