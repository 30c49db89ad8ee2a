package personal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTheHomeComesFromTheUserDatabaseNotTheEnvironment(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	d, err := Lookup()
	if err != nil {
		t.Fatalf("no user database entry: %v", err)
	}
	if d.Home == os.Getenv("HOME") {
		t.Fatalf("home %s is $HOME: an agent sets its own environment", d.Home)
	}
}

func TestEveryProjectHasItsOwnFolder(t *testing.T) {
	d := Dirs{Home: "/home/p"}
	a, b := d.ProjectDir("/w/a"), d.ProjectDir("/w/b")
	if a == b || filepath.Dir(a) != filepath.Join(d.DataDir(), "projects") {
		t.Fatalf("project folders %s and %s", a, b)
	}
}

func TestAFileWritableByOthersOrALinkIsNotThePersons(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckOwned(f); err != nil {
		t.Fatalf("a private file: %v", err)
	}
	if err := os.Chmod(f, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := CheckOwned(f); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("a world-writable file: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(f, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckOwned(link); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("a link: %v", err)
	}
}
