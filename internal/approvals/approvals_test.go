package approvals

// Tests named after the rules of tier escalation, docs/design.md §6.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func TestTheHopTableIsTheSeedsTable(t *testing.T) {
	want := map[Tier][]Tier{
		ReadOnly:         {WorkspaceWrite, DangerFullAccess},
		WorkspaceWrite:   {DangerFullAccess},
		DangerFullAccess: {},
	}
	for _, from := range Tiers {
		if got := Hops(from); !reflect.DeepEqual(append([]Tier{}, got...), want[from]) {
			t.Errorf("row %s = %v, want %v", from, got, want[from])
		}
	}
	if len(hops) != 3 {
		t.Fatalf("the table has %d rows, want 3", len(hops))
	}
	if Hops("root") != nil {
		t.Fatal("an unknown tier has a row")
	}
	// Every pair, against the table as docs/design.md §6.1 prints it.
	for _, from := range Tiers {
		for _, to := range Tiers {
			in := false
			for _, x := range want[from] {
				in = in || x == to
			}
			if Reachable(from, to) != in {
				t.Errorf("Reachable(%s, %s) = %v", from, to, !in)
			}
		}
	}
}

func TestTheSchemaAdvertisesTheReachableInPrincipleSet(t *testing.T) {
	if got := Targets(); !reflect.DeepEqual(got, []Tier{WorkspaceWrite, DangerFullAccess}) {
		t.Fatalf("Targets() = %v", got)
	}
}

func TestReadOnlyToDangerFullAccessIsOneHopAndMayBeAsked(t *testing.T) {
	c := CallOf("ses:a", ReadOnly, "c1", nil)
	if r := ValidateHop("ses:a", c, DangerFullAccess); r != nil {
		t.Fatalf("read-only -> danger-full-access refused: %v", r)
	}
}

func TestTargetMustBeInTheRowOfTheCallsCurrentTier(t *testing.T) {
	for _, from := range Tiers {
		for _, to := range Tiers {
			r := ValidateHop("ses:a", CallOf("ses:a", from, "c1", nil), to)
			if Reachable(from, to) != (r == nil) {
				t.Errorf("%s -> %s: refusal %v", from, to, r)
			}
			if r != nil && r.Rule != RuleNotInRow {
				t.Errorf("%s -> %s: rule %s, want %s", from, to, r.Rule, RuleNotInRow)
			}
		}
	}
}

func TestANonWideningTargetIsRefused(t *testing.T) {
	// docs/design.md §6.1: a call running at workspace-write that asks for
	// read-only passes a name-shape check and is still nonsense.
	r := ValidateHop("ses:a", CallOf("ses:a", WorkspaceWrite, "c1", nil), ReadOnly)
	if r == nil || r.Rule != RuleNotInRow || !strings.Contains(r.Message, "workspace-write") {
		t.Fatalf("workspace-write -> read-only: %v", r)
	}
}

func approved(session, call string, from, to Tier, at time.Time) Approval {
	a := Approval{ID: "apr:" + call + "-" + string(to), SessionID: session, CallID: call, From: from, To: to,
		Asked: true, State: Pending, CreatedAt: at, Deadline: at.Add(DefaultTimeout)}
	a, _ = Resolve(a, VerdictOf("approve"), at.Add(time.Second))
	return a
}

func TestATwoHopRatchetForOneCallIsRefused(t *testing.T) {
	first := approved("ses:a", "c1", ReadOnly, WorkspaceWrite, t0)
	c := CallOf("ses:a", ReadOnly, "c1", []Approval{first})
	if c.Current != WorkspaceWrite || c.Widened != first.ID {
		t.Fatalf("call state %+v", c)
	}
	// danger-full-access is in workspace-write's row, and still refused:
	// two consecutive widenings for one call is the ratchet.
	r := ValidateHop("ses:a", c, DangerFullAccess)
	if r == nil || r.Rule != RuleRatchet {
		t.Fatalf("second widening: %v", r)
	}
	// Another call of the same session stands at the default again.
	if r := ValidateHop("ses:a", CallOf("ses:a", ReadOnly, "c2", []Approval{first}), WorkspaceWrite); r != nil {
		t.Fatalf("the grant leaked to another call: %v", r)
	}
}

func TestAnotherSessionsCallIsRefused(t *testing.T) {
	first := approved("ses:a", "c1", ReadOnly, WorkspaceWrite, t0)
	r := ValidateHop("ses:b", CallOf("ses:b", ReadOnly, "c1", []Approval{first}), WorkspaceWrite)
	if r == nil || r.Rule != RuleOtherSession {
		t.Fatalf("another session's call: %v", r)
	}
	// A record refused for naming another session's call does not take the call over.
	stray := Approval{ID: "apr:stray", SessionID: "ses:b", CallID: "c9", State: Resolved, Verdict: Refused, Cause: RuleOtherSession, CreatedAt: t0}
	if c := CallOf("ses:a", ReadOnly, "c9", []Approval{stray}); c.Owner != "" {
		t.Fatalf("owner %s from a refused cross-session record", c.Owner)
	}
	// Even a refused record binds the call to its session.
	refused := Approval{ID: "apr:r", SessionID: "ses:a", CallID: "c3", State: Resolved, Verdict: Refused, Cause: CauseAnswer, CreatedAt: t0}
	if r := ValidateHop("ses:b", CallOf("ses:b", ReadOnly, "c3", []Approval{refused}), WorkspaceWrite); r == nil || r.Rule != RuleOtherSession {
		t.Fatalf("call bound by a refused record: %v", r)
	}
}

func TestAnUnknownTierIsRefused(t *testing.T) {
	for _, to := range []Tier{"", "root", "Read-Only", "danger_full_access", " workspace-write"} {
		r := ValidateHop("ses:a", CallOf("ses:a", ReadOnly, "c1", nil), to)
		if r == nil || r.Rule != RuleUnknownTier {
			t.Errorf("%q: %v", to, r)
		}
	}
}

func TestAnOpenQuestionBlocksASecondQuestionForTheSameCall(t *testing.T) {
	open := Approval{ID: "apr:open", SessionID: "ses:a", CallID: "c1", Asked: true, State: Pending, CreatedAt: t0, Deadline: t0.Add(DefaultTimeout)}
	r := ValidateHop("ses:a", CallOf("ses:a", ReadOnly, "c1", []Approval{open}), WorkspaceWrite)
	if r == nil || r.Rule != RulePending || !strings.Contains(r.Message, "apr:open") {
		t.Fatalf("second question: %v", r)
	}
	// After a non-grant ending the call stands at its default and may ask again.
	ended, _ := Resolve(open, VerdictOf("no"), t0.Add(time.Second))
	if r := ValidateHop("ses:a", CallOf("ses:a", ReadOnly, "c1", []Approval{ended}), WorkspaceWrite); r != nil {
		t.Fatalf("after a refusal: %v", r)
	}
}

func TestTheAnswerIsMappedToAVerdictBeforeAnythingActs(t *testing.T) {
	for _, tc := range []struct {
		answer any
		want   Verdict
		cause  Cause
	}{
		{"approve", Approved, CauseAnswer}, {"Y", Approved, CauseAnswer}, {" yes\n", Approved, CauseAnswer}, {true, Approved, CauseAnswer},
		{"refuse", Refused, CauseAnswer}, {"n", Refused, CauseAnswer}, {false, Refused, CauseAnswer},
		{"maybe", Refused, CauseUnreadable}, {"", Refused, CauseUnreadable}, {nil, Refused, CauseUnreadable},
		{1.0, Refused, CauseUnreadable}, {map[string]any{"approve": true}, Refused, CauseUnreadable},
		{"yes please", Refused, CauseUnreadable}, {strings.Repeat("y", 1000), Refused, CauseUnreadable},
	} {
		d := VerdictOf(tc.answer)
		if d.Verdict != tc.want || d.Cause != tc.cause {
			t.Errorf("%v: %s/%s, want %s/%s", tc.answer, d.Verdict, d.Cause, tc.want, tc.cause)
		}
		if len(d.Answer) > maxAnswer+len("…") {
			t.Errorf("raw answer kept unbounded: %d bytes", len(d.Answer))
		}
	}
}

func question() Approval {
	return Approval{ID: "apr:q", SessionID: "ses:a", CallID: "c1", From: ReadOnly, To: WorkspaceWrite,
		Asked: true, State: Pending, CreatedAt: t0, Deadline: t0.Add(DefaultTimeout)}
}

func TestTheFirstAnswerWins(t *testing.T) {
	a, ok := Resolve(question(), VerdictOf("approve"), t0.Add(time.Second))
	if !ok || a.Verdict != Approved {
		t.Fatalf("first answer: %v %+v", ok, a)
	}
	for _, later := range []any{"approve", "refuse", "maybe"} {
		b, ok := Resolve(a, VerdictOf(later), t0.Add(2*time.Second))
		if ok || !reflect.DeepEqual(a, b) {
			t.Fatalf("a later %v changed the record: %+v", later, b)
		}
	}
}

func TestAnAnswerAtOrAfterTheDeadlineIsATimeout(t *testing.T) {
	q := question()
	if Expired(q, q.Deadline.Add(-time.Nanosecond)) || !Expired(q, q.Deadline) {
		t.Fatal("the deadline itself must count as passed")
	}
	a, ok := Resolve(q, VerdictOf("approve"), q.Deadline)
	if !ok || a.Verdict != TimedOut || a.Cause != CauseDeadline {
		t.Fatalf("approval at the deadline: %+v", a)
	}
	if _, granted := a.Grant(); granted {
		t.Fatal("a late approval granted a tier")
	}
	if Remaining(q, q.Deadline.Add(time.Hour)) != 0 || Remaining(q, t0) != DefaultTimeout {
		t.Fatal("Remaining")
	}
	if DefaultTimeout != 120*time.Second {
		t.Fatalf("default deadline %s, want 120 s", DefaultTimeout)
	}
}

func TestARefusalNeverYieldsATier(t *testing.T) {
	for _, d := range []Decision{VerdictOf("no"), VerdictOf("???"), {Verdict: TimedOut}, {Verdict: Cancelled, Cause: CauseRequester}} {
		a, _ := Resolve(question(), d, t0.Add(time.Second))
		if tier, ok := a.Grant(); ok || tier != "" {
			t.Errorf("%s yielded %q", a.Verdict, tier)
		}
	}
	if _, ok := question().Grant(); ok {
		t.Error("a pending question yielded a tier")
	}
	a, _ := Resolve(question(), VerdictOf("yes"), t0.Add(time.Second))
	if tier, ok := a.Grant(); !ok || tier != WorkspaceWrite {
		t.Errorf("approval granted %q %v", tier, ok)
	}
}

func TestEveryEndingHasOneFrameCarryingTheRequestID(t *testing.T) {
	for _, d := range []Decision{VerdictOf("yes"), VerdictOf("no"), {Verdict: TimedOut}, {Verdict: Cancelled, Cause: CauseRequester}} {
		a, _ := Resolve(question(), d, t0.Add(time.Second))
		f, ok := EndingFrame(a)
		if !ok || f.RequestID != a.ID || f.Kind != FrameResolved || f.Verdict != d.Verdict || f.SessionID != a.SessionID {
			t.Errorf("%s: %v %+v", d.Verdict, ok, f)
		}
		if !NeedsAnnouncement(a) {
			t.Errorf("%s: not announced yet, yet needs no announcement", d.Verdict)
		}
		a.Announced = true
		if NeedsAnnouncement(a) {
			t.Errorf("%s: announced twice", d.Verdict)
		}
	}
	if _, ok := EndingFrame(question()); ok {
		t.Error("a pending question has an ending frame")
	}
	never := question()
	never.Asked = false
	never, _ = Resolve(never, Decision{Verdict: Refused, Cause: RuleRatchet}, t0)
	if _, ok := EndingFrame(never); ok {
		t.Error("a request refused before it was asked is announced")
	}
}

// goodLog is a consistent log: one question per verdict, each announced.
func goodLog() ([]Approval, []Frame) {
	var recs []Approval
	var frames []Frame
	cursor := int64(0)
	for i, d := range []Decision{VerdictOf("yes"), VerdictOf("no"), {Verdict: TimedOut}, {Verdict: Cancelled, Cause: CauseRequester}} {
		q := question()
		q.ID = fmt.Sprintf("apr:%d", i)
		cursor++
		rf := RequestFrame(q)
		rf.Cursor = cursor
		a, _ := Resolve(q, d, t0.Add(time.Second))
		a.Announced = true
		ef, _ := EndingFrame(a)
		cursor++
		ef.Cursor = cursor
		recs = append(recs, a)
		frames = append(frames, rf, ef)
	}
	open := question()
	open.ID = "apr:open"
	cursor++
	of := RequestFrame(open)
	of.Cursor = cursor
	refused := Approval{ID: "apr:hop", SessionID: "ses:a", CallID: "c2", State: Resolved, Verdict: Refused, Cause: RuleRatchet}
	return append(recs, open, refused), append(frames, of)
}

func TestTheAuditPassesAConsistentLog(t *testing.T) {
	recs, frames := goodLog()
	rep := Audit(recs, frames)
	if !rep.OK() || rep.Frames != 9 || rep.Requests != 6 || rep.Questions != 5 || rep.Sessions != 1 {
		t.Fatalf("%+v", rep)
	}
}

func TestTheAuditFailsABadLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(recs []Approval, frames []Frame) ([]Approval, []Frame)
		want  string
	}{
		{"an ending announced twice", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			dup := f[1]
			dup.Cursor = 10
			return r, append(f, dup)
		}, "2 ending frames"},
		{"an ending never announced", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			return r, append(f[:1:1], f[2:]...)
		}, "0 ending frames"},
		{"a frame naming an unknown request", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			x := f[0]
			x.RequestID, x.Cursor = "apr:ghost", 10
			return r, append(f, x)
		}, "unknown request"},
		{"an ending for a pending request", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			x := f[1]
			x.RequestID, x.Cursor, x.Verdict = "apr:open", 10, ""
			return r, append(f, x)
		}, "still pending"},
		{"an ending that contradicts the verdict", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			f[1].Verdict = Refused
			return r, f
		}, "recorded verdict"},
		{"a frame for a request refused before it was asked", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			x := f[0]
			x.RequestID, x.Cursor = "apr:hop", 10
			return r, append(f, x)
		}, "before it was asked"},
		{"a repeated cursor", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			f[2].Cursor = 2
			return r, f
		}, "cursor 2 follows 2"},
		{"a question without its question frame", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			return r, f[:len(f)-1]
		}, "0 question frames"},
		{"a frame naming no request", func(r []Approval, f []Frame) ([]Approval, []Frame) {
			x := f[0]
			x.RequestID, x.Cursor = "", 10
			return r, append(f, x)
		}, "names no request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, frames := tc.spoil(goodLog())
			rep := Audit(recs, frames)
			if rep.OK() {
				t.Fatal("the audit passed a bad log")
			}
			if s := fmt.Sprint(rep.Findings); !strings.Contains(s, tc.want) {
				t.Fatalf("findings %s do not mention %q", s, tc.want)
			}
		})
	}
}
