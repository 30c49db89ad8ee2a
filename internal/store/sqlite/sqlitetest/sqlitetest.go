// Package sqlitetest gives tests a new SQLite store cheaply: a copy of
// the empty store sqlite.Create made once per test binary. Running
// Create's schema script for every test was a quarter to a half of the
// CPU of the packages whose tests each open a store; Create itself is
// tested in internal/store/sqlite.
package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/store/sqlite"
)

// Fresh opens a new store at path, a copy of an empty one; the caller
// closes it. Its Open reads the schema's version and skips the probes a
// store made by Create runs on first use, so a test that drops part of
// the schema to imitate an older file makes its store with Create.
func Fresh(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	image, err := emptyStore()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, image, sqlite.FileMode); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// emptyStore is the file of a store just made by sqlite.Create and closed
// (the close checkpoints the WAL into it).
var emptyStore = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "dont-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "dont.db")
	st, err := sqlite.Create(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})
