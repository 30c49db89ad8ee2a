package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/store"
)

// RetentionFixture opens an empty store that keeps approval frames and
// finished webhook deliveries for frames and deliveries (settings.
// FrameRetention, settings.DeliveryRetention), and the store's way of
// applying that retention at now: SQLite's Prune, or on DynamoDB the
// deletion its TTL makes of every item whose ttl has passed.
type RetentionFixture func(t *testing.T, frames, deliveries time.Duration) (HookStores, func(t *testing.T, now time.Time))

// RunRetention is the conformance suite of retention (docs/design.md,
// "Storage health"): what it removes once its time has passed, and what
// it never removes — an open question's frames, a pending delivery.
func RunRetention(t *testing.T, open RetentionFixture) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open RetentionFixture)
	}{
		{"a finished delivery and its log are kept for the retention, then removed", retentionDeliveries},
		{"a pending delivery is never removed", retentionPendingDelivery},
		{"an open question's frames are kept past the retention until it has ended", retentionOpenQuestion},
		{"an ended question's frames are removed after the retention", retentionEndedQuestion},
		{"without a retention nothing is removed", retentionNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

const keep = time.Hour

func deliveriesOf(t *testing.T, s store.HookStore, hookID string) ([]hooks.Delivery, []hooks.Attempt) {
	t.Helper()
	pg, err := s.Deliveries(context.Background(), hookID, store.DeliveryFilter{Deliveries: 100, Attempts: 100})
	must(t, err)
	return pg.Deliveries, pg.Attempts
}

// deliverOnce claims the one due delivery at at and records its attempt
// with outcome; it returns the delivery as written.
func deliverOnce(t *testing.T, s store.HookStore, at time.Time, outcome hooks.Outcome) hooks.Delivery {
	t.Helper()
	due := claimAll(t, s, at)
	if len(due) != 1 {
		t.Fatalf("%d deliveries due at %s, want 1", len(due), at)
	}
	d := due[0].Delivery
	a := hooks.Attempt{MessageID: d.MessageID, HookID: d.HookID, N: d.Attempts + 1, At: at, Status: 200, Outcome: outcome}
	if outcome != hooks.Delivered {
		a.Status = 500
	}
	d = hooks.Next(d, a, 0, 0)
	must(t, s.RecordAttempt(context.Background(), a, d))
	return d
}

func retentionDeliveries(t *testing.T, open RetentionFixture) {
	s, apply := open(t, 0, keep)
	h := newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	done := base.Add(time.Minute)
	deliverOnce(t, s.Hooks, done, hooks.Delivered)
	apply(t, done.Add(keep-time.Second))
	if ds, as := deliveriesOf(t, s.Hooks, h.ID); len(ds) != 1 || len(as) != 1 {
		t.Fatalf("within the retention: %d deliveries, %d attempts; want 1 and 1", len(ds), len(as))
	}
	apply(t, done.Add(keep+time.Second))
	if ds, as := deliveriesOf(t, s.Hooks, h.ID); len(ds) != 0 || len(as) != 0 {
		t.Fatalf("past the retention: %+v, %+v; want none", ds, as)
	}
}

func retentionPendingDelivery(t *testing.T, open RetentionFixture) {
	s, apply := open(t, 0, keep)
	h := newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	d := deliverOnce(t, s.Hooks, base.Add(time.Minute), hooks.Retry)
	if d.State != hooks.StatePending {
		t.Fatalf("a retried delivery is %s", d.State)
	}
	apply(t, base.Add(keep+time.Hour))
	ds, _ := deliveriesOf(t, s.Hooks, h.ID)
	if len(ds) != 1 || ds[0].State != hooks.StatePending {
		t.Fatalf("a pending delivery past the retention: %+v", ds)
	}
	// It is still delivered, with its message.
	if due := claimAll(t, s.Hooks, d.NextAt); len(due) != 1 || due[0].Message.Type != hooks.SpawnRequested {
		t.Fatalf("the pending delivery is no longer due whole: %+v", due)
	}
}

func framesOf(t *testing.T, s store.ApprovalStore, session string) []approvals.Frame {
	t.Helper()
	fs, err := s.Frames(context.Background(), session, 0, 100)
	must(t, err)
	return fs
}

func retentionOpenQuestion(t *testing.T, open RetentionFixture) {
	s, apply := open(t, keep, 0)
	ses := newSession(t, s.Approvals, approvals.ReadOnly)
	// Asked with a deadline beyond the retention.
	a, f := newQuestion(ses, "c1", base.Add(3*keep))
	must(t, s.Approvals.CreateApproval(context.Background(), a, f))
	apply(t, base.Add(2*keep))
	if fs := framesOf(t, s.Approvals, ses.ID); len(fs) != 1 || fs[0].RequestID != a.ID {
		t.Fatalf("an open question's frames past the retention: %+v", fs)
	}
	if got, err := s.Approvals.GetApproval(context.Background(), a.ID); err != nil || got.State != approvals.Pending {
		t.Fatalf("the open question: %+v, %v", got, err)
	}
}

func retentionEndedQuestion(t *testing.T, open RetentionFixture) {
	ctx := context.Background()
	s, apply := open(t, keep, 0)
	ses := newSession(t, s.Approvals, approvals.ReadOnly)
	a := ask(t, s.Approvals, ses, "c1")
	r := resolveAs(a, "no")
	must(t, s.Approvals.ResolveApproval(ctx, r))
	end, _ := approvals.EndingFrame(r)
	_, err := s.Approvals.AnnounceEnding(ctx, end)
	must(t, err)
	// Kept for the retention from its ending (DynamoDB dates each frame;
	// SQLite forgets the session whole once its last deadline is that far
	// behind), and gone once it has passed from the deadline too.
	apply(t, r.ResolvedAt.Add(keep-time.Second))
	if fs := framesOf(t, s.Approvals, ses.ID); len(fs) != 2 {
		t.Fatalf("within the retention: %d frames, want 2", len(fs))
	}
	apply(t, a.Deadline.Add(keep+time.Second))
	if fs := framesOf(t, s.Approvals, ses.ID); len(fs) != 0 {
		t.Fatalf("past the retention: %+v, want none", fs)
	}
}

func retentionNone(t *testing.T, open RetentionFixture) {
	ctx := context.Background()
	s, apply := open(t, 0, 0)
	h := newHook(t, s.Hooks, hooks.SpawnRequested)
	spawnRequested(t, s.Store)
	deliverOnce(t, s.Hooks, base.Add(time.Minute), hooks.Delivered)
	ses := newSession(t, s.Approvals, approvals.ReadOnly)
	a := ask(t, s.Approvals, ses, "c1")
	r := resolveAs(a, "yes")
	must(t, s.Approvals.ResolveApproval(ctx, r))
	end, _ := approvals.EndingFrame(r)
	_, err := s.Approvals.AnnounceEnding(ctx, end)
	must(t, err)
	apply(t, base.Add(10000*time.Hour))
	if ds, as := deliveriesOf(t, s.Hooks, h.ID); len(ds) != 1 || len(as) != 1 {
		t.Fatalf("deliveries without a retention: %+v, %+v", ds, as)
	}
	if fs := framesOf(t, s.Approvals, ses.ID); len(fs) != 2 {
		t.Fatalf("frames without a retention: %+v", fs)
	}
}
