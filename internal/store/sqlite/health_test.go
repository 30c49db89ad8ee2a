package sqlite_test

import (
	"errors"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// concludeMany records n claims with statements long enough to fill many
// pages, and returns their ids.
func concludeMany(t *testing.T, s *sqlite.Store, n int) []string {
	t.Helper()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
	var ids []string
	for i := range n {
		v, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d: %0400d", i, i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
	}
	return ids
}

// A file with damaged pages is reported by the check (quick and full);
// a sound one is not.
func TestTheCheckFindsDamagedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dont.db")
	s, err := sqlite.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	concludeMany(t, s, 300)
	for _, full := range []bool{false, true} {
		if problems, err := s.Check(ctx, full); err != nil || len(problems) != 0 {
			t.Fatalf("a sound store (full %v): %v, %v", full, problems, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Overwrite 64 pages in the middle of the file with garbage.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	pages := info.Size() / 4096
	if pages < 80 {
		t.Fatalf("the file has %d pages; the test needs more to damage", pages)
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	for p := pages/2 - 32; p < pages/2+32; p++ {
		if _, err := f.WriteAt(garbage, p*4096); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, full := range []bool{false, true} {
		problems, err := s.Check(ctx, full)
		if err != nil || len(problems) == 0 {
			t.Fatalf("64 damaged pages (full %v): problems %v, err %v; want them reported", full, problems, err)
		}
	}
}

// A backup taken while another writer commits is a sound, whole store as
// of one moment; a restore brings back exactly that content.
func TestABackupTakenDuringWritesRestoresWhatItHeld(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Create(ctx, filepath.Join(dir, "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := concludeMany(t, s, 50)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a writer that keeps committing during the backup
		defer wg.Done()
		svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("during %d", i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	backup := filepath.Join(dir, "backup.db")
	err = s.Backup(ctx, backup)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(backup); err != nil || info.Mode().Perm() != sqlite.FileMode {
		t.Fatalf("backup file: %v, %v; want mode %04o", info, err, sqlite.FileMode)
	}
	if err := s.Backup(ctx, backup); !errors.Is(err, sqlite.ErrBackupExists) {
		t.Fatalf("a second backup to the same file: %v; want ErrBackupExists", err)
	}
	after := concludeMany(t, s, 5) // written after the backup: gone after the restore

	if err := s.Restore(ctx, backup); err != nil {
		t.Fatal(err)
	}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
	for _, id := range before {
		if _, err := svc.Ledger.Show(ctx, id, false); err != nil {
			t.Fatalf("%s, stored before the backup, after the restore: %v", id, err)
		}
	}
	for _, id := range after {
		if _, err := svc.Ledger.Show(ctx, id, false); !errs.Is(err, errs.NotFound) {
			t.Fatalf("%s, stored after the backup, after the restore: %v; want not-found", id, err)
		}
	}
	if problems, err := s.Check(ctx, true); err != nil || len(problems) != 0 {
		t.Fatalf("the restored store: %v, %v", problems, err)
	}
}

// A restore from a file that is not a sound dont store changes nothing.
func TestARestoreFromABadFileChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t)
	ids := concludeMany(t, s, 3)
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("not a database at all, but long enough to look like a header of one......................................................."), 0o600)
	other := filepath.Join(dir, "other.db")
	o, err := sqlite.Open(other) // an SQLite file without dont's tables
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	for _, src := range []string{notDB, other, filepath.Join(dir, "missing.db")} {
		err := s.Restore(ctx, src)
		var bad *sqlite.BackupProblem
		if !errors.As(err, &bad) {
			t.Fatalf("restore from %s: %v; want a BackupProblem", src, err)
		}
	}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Confirmations: s})
	for _, id := range ids {
		if _, err := svc.Ledger.Show(ctx, id, false); err != nil {
			t.Fatalf("%s after refused restores: %v", id, err)
		}
	}
}
