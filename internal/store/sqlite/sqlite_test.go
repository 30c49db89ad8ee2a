package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/storetest"
)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) service.Store { return newStore(t) })
}

// The sweep reads only due rows: a range search on the partial index over
// pending expiries, so its cost grows with the number expired.
func TestSweepFindsDueSpawnsThroughTheExpiryIndex(t *testing.T) {
	s := newStore(t)
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+sqlite.DueQuery, "0001-01-01T00:00:00.000000000Z", "2026-01-01T00:00:00.000000000Z", 10)
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
	if len(plan) != 1 || !strings.Contains(plan[0], "SEARCH spawns USING INDEX spawns_due (expires_at>? AND expires_at<?)") {
		t.Fatalf("due-spawn query plan = %q, want a range search on spawns_due", plan)
	}
}

func TestPathsWithURIMetacharactersOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a%20b?c#d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Create(context.Background(), filepath.Join(dir, "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "dont.db")); err != nil {
		t.Fatalf("database not created at the literal path: %v", err)
	}
}
