//go:build unix

package project_test

import (
	"context"
	"github.com/dont-cli/dont/internal/tools"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// The attack: another account on the machine reads .dont/dont.db (token
// hashes, the project secret that signs callback tokens, remembered
// responses). Before, init made .dont/ 0755 and dont.db 0644 under the
// usual umask.
func TestTheProjectFolderIsPrivate(t *testing.T) {
	// The most permissive umask: the modes must not come from it.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	p, err := project.Init(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	// A write makes SQLite's -wal and -shm beside the database.
	st, err := sqlite.Open(p.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st})
	if _, err := svc.Credentials.Create(context.Background(), "admin", "ops"); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		p.StateDir(): 0o700, p.DBPath(): 0o600, p.DBPath() + "-wal": 0o600, p.DBPath() + "-shm": 0o600, p.ConfigPath(): 0o600,
	}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %04o, want %04o", filepath.Base(path), got, mode)
		}
	}
	if x, err := p.Exposed(); err != nil || len(x) != 0 {
		t.Fatalf("a fresh project is exposed: %+v %v", x, err)
	}

	// A folder made wider (copied, restored from a backup, chmod'ed) is reported.
	if err := os.Chmod(p.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.DBPath()+"-wal", 0o640); err != nil {
		t.Fatal(err)
	}
	x, err := p.Exposed()
	if err != nil || len(x) != 2 || x[0].Path != p.StateDir() || x[0].Mode != 0o755 || x[1].Path != p.DBPath()+"-wal" || x[1].Want != 0o600 {
		t.Fatalf("exposed: %+v %v", x, err)
	}
}

// The attacks of cli/dont's project tests, at the package: a linked or
// shared .dont/ is refused; a nested project names the ones it shadows.
func TestFindRefusesALinkedOrSharedProjectFolderAndNamesShadowedOnes(t *testing.T) {
	outer := t.TempDir()
	if _, err := project.Init(context.Background(), outer); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(outer, "a", "b")
	if _, err := project.Init(context.Background(), inner); err != nil {
		t.Fatal(err)
	}
	p, err := project.Find(filepath.Join(inner, "c"), "")
	if err != nil || p.Root != inner || len(p.Shadowed) != 1 || p.Shadowed[0] != outer {
		t.Fatalf("Find below a nested project: %+v %v", p, err)
	}
	linked := t.TempDir()
	if err := os.Symlink(filepath.Join(outer, ".dont"), filepath.Join(linked, ".dont")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{linked} {
		if _, err := project.Find(dir, ""); err == nil {
			t.Fatalf("Find followed the link in %s", dir)
		}
		if _, err := project.Find("/", dir); err == nil {
			t.Fatalf("Find followed the link named by DONT_PROJECT_DIR %s", dir)
		}
	}
	if err := os.Chmod(filepath.Join(outer, ".dont"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := project.Find(outer, ""); err == nil {
		t.Fatal("Find opened a .dont/ its group may enter")
	}
}
