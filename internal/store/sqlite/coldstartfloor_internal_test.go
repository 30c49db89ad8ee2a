package sqlite

import (
	"os"
	"strings"
	"testing"
)

// The cold-start floor (bench/coldstart/sqlitefloor) is what `dont show`
// is measured against: it must run the statements show runs, word for
// word, or the ratio compares different work.
func TestTheColdStartFloorRunsTheStatementsShowRuns(t *testing.T) {
	src, err := os.ReadFile("../../../bench/coldstart/sqlitefloor/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"anythingDueQuery": anythingDueQuery, "entityQuery": entityQuery, "the schema version read": "PRAGMA user_version"} {
		if !strings.Contains(string(src), q) {
			t.Errorf("the cold-start floor does not run %s as the store does:\n%s", name, q)
		}
	}
}
