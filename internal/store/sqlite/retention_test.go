package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/storetest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRetentionConformance(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, frames, deliveries time.Duration) (storetest.HookStores, func(*testing.T, time.Time)) {
		s, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		apply := func(t *testing.T, now time.Time) {
			t.Helper()
			if _, err := s.Prune(context.Background(), now, sqlite.Retention{Frames: frames, Deliveries: deliveries}); err != nil {
				t.Fatal(err)
			}
		}
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}, apply
	})
}

// A question the sweep has not yet ended, or whose ending is not yet
// announced, keeps its session however old its deadline: the sweep still
// needs the question, and the announcement its session's log.
func TestRetentionKeepsAQuestionNotYetEndedOrAnnounced(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ses := approvals.Session{ID: ids.New(ids.Session, t0), Tier: approvals.ReadOnly, OpenedAt: t0}
	must(t, s.CreateSession(ctx, ses))
	a := approvals.Approval{ID: ids.New(ids.Approval, t0), SessionID: ses.ID, CallID: "c1", From: approvals.ReadOnly, To: approvals.DangerFullAccess,
		Preview: "make install", Asked: true, State: approvals.Pending, CreatedAt: t0, Deadline: t0.Add(10 * time.Minute)}
	q := approvals.RequestFrame(a)
	must(t, s.CreateApproval(ctx, a, &q))
	keep := sqlite.Retention{Frames: time.Hour}
	later := t0.Add(5 * time.Hour)
	frames := func() int {
		fs, err := s.Frames(ctx, ses.ID, 0, 10)
		must(t, err)
		return len(fs)
	}
	if p, err := s.Prune(ctx, later, keep); err != nil || p.Sessions != 0 || frames() != 1 {
		t.Fatalf("a pending question past its deadline: pruned %+v, %v; %d frames", p, err, frames())
	}
	r, _ := approvals.Resolve(a, approvals.Decision{Verdict: approvals.TimedOut}, later)
	must(t, s.ResolveApproval(ctx, r))
	if p, err := s.Prune(ctx, later, keep); err != nil || p.Sessions != 0 || frames() != 1 {
		t.Fatalf("an ending not yet announced: pruned %+v, %v; %d frames", p, err, frames())
	}
	end, _ := approvals.EndingFrame(r)
	if _, err := s.AnnounceEnding(ctx, end); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Prune(ctx, later, keep); err != nil || p.Sessions != 1 || p.Questions != 1 || p.Frames != 2 || frames() != 0 {
		t.Fatalf("an ended, announced session past the retention: pruned %+v, %v; %d frames", p, err, frames())
	}
	if _, err := s.GetSession(ctx, ses.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the forgotten session: %v", err)
	}
}
