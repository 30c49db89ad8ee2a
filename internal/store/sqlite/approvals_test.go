package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestApprovalConformance(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) (store.ApprovalStore, func() store.ApprovalStore) {
		path := filepath.Join(t.TempDir(), "dont.db")
		s, err := sqlite.Create(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, func() store.ApprovalStore {
			o, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { o.Close() })
			return o
		}
	})
}

// A database created before approvals existed gets their tables on first use.
func TestAnOlderDatabaseGainsTheApprovalTablesOnFirstUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	s, err := sqlite.Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []string{"approval_subscribers", "approval_frames", "approvals", "approval_sessions"} {
		if _, err := s.DB().Exec("DROP TABLE " + drop); err != nil {
			t.Fatal(err)
		}
	}
	// A file of that age is at schema version 2 (the CURIE key) at most.
	if _, err := s.DB().Exec("PRAGMA user_version=2"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ses := approvals.Session{ID: "ses:01HX05A9K8VP0000000000000A", Tier: approvals.ReadOnly, OpenedAt: time.Now()}
	if err := old.CreateSession(context.Background(), ses); err != nil {
		t.Fatalf("first use of an older file: %v", err)
	}
	if got, err := old.GetSession(context.Background(), ses.ID); err != nil || got.Tier != approvals.ReadOnly {
		t.Fatalf("read back %+v %v", got, err)
	}
}

// The approval sweep reads only due rows through the partial index.
func TestApprovalSweepFindsDueQuestionsThroughTheDeadlineIndex(t *testing.T) {
	s := newStore(t)
	if _, err := s.DueApprovals(context.Background(), time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	plan := queryPlan(t, s.DB(), "EXPLAIN QUERY PLAN "+sqlite.DueApprovalsQuery, "2026-01-01T00:00:00.000000000Z", 10)
	if len(plan) != 1 || !strings.Contains(plan[0], "SEARCH approvals USING INDEX approvals_due (deadline<?)") {
		t.Fatalf("due-approval query plan = %q, want a range search on approvals_due", plan)
	}
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		plan = append(plan, detail)
	}
	return plan
}

// The sweep's probe answers in one statement whether a sweep has work,
// each part through its partial index.
func TestTheSweepProbeSaysWhetherAnythingIsDue(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	due := func() bool {
		t.Helper()
		ok, err := s.AnythingDue(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if due() {
		t.Fatal("an empty store has something due")
	}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Guess, State: spawn.Pending, IssuedAt: now, ExpiresAt: now.Add(time.Minute), Request: []byte("{}")}
	if err := s.Commit(ctx, store.Tx{Spawns: []store.SpawnPut{{Spawn: sp, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if due() {
		t.Fatal("a spawn expiring in a minute is due now")
	}
	now = now.Add(time.Minute)
	if !due() {
		t.Fatal("a spawn that has just expired is not due")
	}
	plan := strings.Join(queryPlan(t, s.DB(), "EXPLAIN QUERY PLAN "+sqlite.AnythingDueQuery, "2026-01-01T00:00:00.000000000Z", "2026-01-01T00:00:00.000000000Z"), "\n")
	for _, want := range []string{"SEARCH spawns USING COVERING INDEX spawns_due (expires_at<?)", "SEARCH approvals USING COVERING INDEX approvals_due (deadline<?)", "SCAN approvals USING INDEX approvals_unannounced"} {
		if !strings.Contains(plan, want) {
			t.Errorf("probe plan lacks %q:\n%s", want, plan)
		}
	}
}
