package sqlite_test

import (
	"context"
	"path/filepath"
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
