package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dont-cli/dont/internal/store/sqlite"
)

// Create (dont init, and every test's fresh store) writes the schema in
// one commit: the WAL holds each page about once, not once per table and
// index with a sync of the WAL each, and a crash part way leaves no half
// of a schema.
func TestCreateWritesTheSchemaInOneCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	st, err := sqlite.Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var pages, pageSize int64
	if err := st.DB().QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := st.DB().QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The schema's commit, then the CURIE key's and the version's, which
	// rewrite a page or two each.
	if frames := (wal.Size() - 32) / (pageSize + 24); frames > pages+4 {
		t.Fatalf("the WAL holds %d frames for a database of %d pages: the schema took many commits", frames, pages)
	}
}
