package sqlite

// The store's health: SQLite's own integrity checks, a backup taken while
// others write, and a restore from one (docs/design.md, "Storage health").

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"

	sqlite3 "modernc.org/sqlite"
)

// Check runs SQLite's PRAGMA quick_check, or with full its integrity_check
// (which also compares every index with its table), and returns what it
// reports as damaged; none means the file is sound. At most 100 problems
// are returned.
func (s *Store) Check(ctx context.Context, full bool) ([]string, error) {
	return check(ctx, s.db, full)
}

func check(ctx context.Context, db *sql.DB, full bool) ([]string, error) {
	pragma := "PRAGMA quick_check(100)"
	if full {
		pragma = "PRAGMA integrity_check(100)"
	}
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		return damaged(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return damaged(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return damaged(err)
	}
	return problems, nil
}

// damaged turns a check that SQLite stopped because the file is corrupt
// or not a database into that problem; other errors stay errors.
func damaged(err error) ([]string, error) {
	var se *sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteCorrupt, sqliteNotADB:
			return []string{err.Error()}, nil
		}
	}
	return nil, err
}

// SQLite's primary result codes for a damaged file.
const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT
	sqliteNotADB  = 26 // SQLITE_NOTADB
)

// ErrBackupExists is Backup's refusal to write over a file.
var ErrBackupExists = errors.New("the backup file already exists")

// Backup writes a consistent copy of the whole database to dst, a new
// file of mode FileMode (it holds token hashes and the project secret),
// while other connections and processes keep reading and writing: VACUUM
// INTO reads one snapshot. A file already at dst is never written over
// (ErrBackupExists); a failed backup removes what it made.
func (s *Store) Backup(ctx context.Context, dst string) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, os.ErrExist) {
		return ErrBackupExists
	}
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(dst)
		return err
	}
	if err := os.Chmod(dst, FileMode); err != nil { // whatever the umask
		os.Remove(dst)
		return err
	}
	if _, err := s.db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// BackupProblem is why Restore refuses a file: it is not a sound dont
// store.
type BackupProblem struct{ Reason string }

func (e *BackupProblem) Error() string { return e.Reason }

// Restore replaces the whole content of this database with src's, using
// SQLite's online backup API: it takes the database's locks like any
// writer, so a process that reads the store meanwhile sees the old
// content or the new, never a mix. src is opened read-only and must pass
// quick_check and hold dont's tables (else a *BackupProblem, and nothing
// changed). A process that keeps the store open (`dont serve`) keeps
// caches of its own: stop it first (docs/design.md, "Storage health").
func (s *Store) Restore(ctx context.Context, src string) error {
	if _, err := os.Stat(src); err != nil {
		return &BackupProblem{Reason: "cannot read " + src + ": " + err.Error()}
	}
	uri := "file:" + (&url.URL{Path: src}).EscapedPath() + "?mode=ro"
	from := sql.OpenDB(connector{dsn: uri})
	defer from.Close()
	problems, err := check(ctx, from, false)
	if err != nil {
		return &BackupProblem{Reason: src + " is not a readable SQLite database: " + err.Error()}
	}
	if len(problems) > 0 {
		return &BackupProblem{Reason: fmt.Sprintf("%s is damaged (%d problem(s); first: %s)", src, len(problems), problems[0])}
	}
	var tables int
	if err := from.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('entities', 'events', 'spawns', 'meta')").Scan(&tables); err != nil || tables != 4 {
		return &BackupProblem{Reason: src + " is not a dont store (it lacks the ledger's tables)"}
	}
	from.Close()

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(string) (*sqlite3.Backup, error)
		})
		if !ok {
			return errors.New("the sqlite driver has no backup API: cannot restore")
		}
		b, err := r.NewRestore(uri)
		if err != nil {
			return err
		}
		if _, err := b.Step(-1); err != nil {
			b.Finish()
			return err
		}
		return b.Finish()
	})
}
