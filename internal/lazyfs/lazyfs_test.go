package lazyfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dont-cli/dont/internal/lazyfs"
)

// mount mounts a lazy view of a fresh backing folder; it fails (never
// skips) where FUSE is unavailable.
func mount(t *testing.T) (l *lazyfs.FS, mnt, backing string) {
	t.Helper()
	mnt, backing = t.TempDir(), t.TempDir()
	l, err := lazyfs.Mount(mnt, backing)
	if err != nil {
		t.Fatal(err)
	}
	return l, mnt, backing
}

// After a power loss a file holds exactly what it held at its last
// fsync: later overwrites, appends and truncations are all undone.
func TestAPowerLossKeepsOnlyWhatWasSynced(t *testing.T) {
	l, mnt, backing := mount(t)
	f, err := os.OpenFile(filepath.Join(mnt, "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	synced := bytes.Repeat([]byte("s"), 10000)
	mustDo(t, func() error { _, err := f.WriteAt(synced, 0); return err })
	mustDo(t, f.Sync)
	mustDo(t, func() error { _, err := f.WriteAt([]byte("overwritten"), 100); return err })
	mustDo(t, func() error { _, err := f.WriteAt([]byte("appended"), 20000); return err })
	mustDo(t, func() error { return f.Truncate(50) })
	mustDo(t, func() error { _, err := f.WriteAt([]byte("again"), 9000); return err })
	// A second descriptor's write, and a file never synced at all.
	g, err := os.OpenFile(filepath.Join(mnt, "f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, func() error { _, err := g.WriteAt([]byte("other fd"), 0); return err })
	mustDo(t, func() error { return os.WriteFile(filepath.Join(mnt, "never"), []byte("lost"), 0o600) })
	f.Close()
	g.Close()
	st, err := l.PowerLoss()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "f")); !bytes.Equal(got, synced) {
		t.Errorf("after the power loss f holds %d bytes %.20q…, want the %d synced", len(got), got, len(synced))
	}
	if got, err := os.ReadFile(filepath.Join(backing, "never")); err != nil || len(got) != 0 {
		t.Errorf("a file never synced holds %q (%v), want it empty", got, err)
	}
	if st.DroppedFiles != 2 || st.DroppedWrites == 0 {
		t.Errorf("stats %+v", st)
	}
}

// A sync through one descriptor makes the writes of every descriptor of
// the file durable; a clean unmount keeps even unsynced writes.
func TestASyncOnAnyDescriptorKeepsTheFilesWrites(t *testing.T) {
	l, mnt, backing := mount(t)
	path := filepath.Join(mnt, "f")
	mustDo(t, func() error { return os.WriteFile(path, []byte("first"), 0o600) })
	a, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, func() error { _, err := a.WriteAt([]byte("FIRST second"), 0); return err })
	mustDo(t, b.Sync)
	a.Close()
	b.Close()
	if _, err := l.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "f")); string(got) != "FIRST second" {
		t.Errorf("after the power loss f holds %q", got)
	}

	l, mnt, backing = mount(t)
	mustDo(t, func() error { return os.WriteFile(filepath.Join(mnt, "g"), []byte("unsynced"), 0o600) })
	if err := l.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "g")); string(got) != "unsynced" {
		t.Errorf("after a clean unmount g holds %q", got)
	}
}

func mustDo(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}
