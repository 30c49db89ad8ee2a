// Package personal finds the person's own files: the ones that live
// outside every workspace, where an agent that can write its workspace
// (and set its own environment) cannot reach. They hold what only the
// person decides: the person's config (trust-relevant settings), the
// workspace config files the person trusted (pinned by content hash), and
// the approver passphrase's hash (docs/security.md, "The agent's side of
// the sandbox").
//
// The home folder comes from the user database (os/user), never from
// $HOME or $XDG_*: those are the environment of whoever started the
// process, and an agent sets its own.
package personal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
)

// Dirs are the person's dont folders under one home.
type Dirs struct {
	Home string
}

// Lookup finds the invoking user's home folder in the user database.
func Lookup() (Dirs, error) {
	u, err := user.Current()
	if err != nil {
		return Dirs{}, err
	}
	if u.HomeDir == "" {
		return Dirs{}, errors.New("the user database gives no home folder for " + u.Username)
	}
	return Dirs{Home: u.HomeDir}, nil
}

// ConfigPath is the person's own config file: trust-relevant settings
// for every project (docs/security.md).
func (d Dirs) ConfigPath() string { return filepath.Join(d.Home, ".config", "dont", "config.toml") }

// DataDir is where dont keeps the person's state outside workspaces.
func (d Dirs) DataDir() string { return filepath.Join(d.Home, ".local", "share", "dont") }

// ProjectDir is the person's folder for one project, keyed by the
// project's absolute root (its trust pins, its passphrase hash).
func (d Dirs) ProjectDir(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(d.DataDir(), "projects", hex.EncodeToString(sum[:16]))
}

// DirMode and FileMode are what dont creates the person's folders and
// files with: only the owner reads or writes them.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// MkdirAll creates dir (and its parents) private to the owner.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	return os.Chmod(dir, DirMode)
}

// WriteFile replaces path with data atomically (a temporary file in the
// same folder, renamed over it), mode FileMode in a folder made with
// MkdirAll: a reader sees the old file or the new one, never a part.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	err = tmp.Chmod(FileMode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// ErrNotPrivate says a person's file may have been written by someone
// other than its owner, so it decides nothing.
var ErrNotPrivate = errors.New("not private to its owner")

// CheckOwned reports whether path, which exists, is a regular file or
// folder (not a link) owned by the invoking user and not writable by the
// group or others. A file that fails it is not the person's word.
func CheckOwned(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: %w", path, ErrNotPrivate)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by its group or others (mode %o): %w", path, fi.Mode().Perm(), ErrNotPrivate)
	}
	if uid, ok := OwnerUID(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to the invoking user (uid %d): %w", path, uid, os.Getuid(), ErrNotPrivate)
	}
	return nil
}
