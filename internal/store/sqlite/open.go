package sqlite

// Opening a database and its schema: the DSN and its pragmas, the
// persistent WAL, Create and the migrations a database made by an older
// build gets on first use.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	sqlite3 "modernc.org/sqlite"
)

// schemaVersion is what PRAGMA user_version says of a database's schema:
// 1 the first tables, 2 the term CURIE key (curieSchema), 3 every table
// of this build made at once (Create): the approval, confirmation and
// webhook tables and the idempotency index beside the ledger's. Open reads
// it once: at 3, no per-table probe runs for the life of the Store; below,
// each part is checked, and made, on first use as before.
const schemaVersion = 3

const schema = `
CREATE TABLE IF NOT EXISTS entities(
	id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL,
	version INTEGER NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS entities_status ON entities(status, id);
CREATE TABLE IF NOT EXISTS dependencies(
	depends_on TEXT NOT NULL, entity_id TEXT NOT NULL, PRIMARY KEY(depends_on, entity_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events(
	seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, entity_id TEXT,
	request_id TEXT, kind TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS events_entity ON events(entity_id, seq);
CREATE INDEX IF NOT EXISTS events_request ON events(request_id);
CREATE TABLE IF NOT EXISTS spawns(
	id TEXT PRIMARY KEY, entity_id TEXT, state TEXT NOT NULL, issued_at TEXT NOT NULL,
	expires_at TEXT NOT NULL, doc BLOB NOT NULL, request BLOB NOT NULL);
-- Sweeps read only the due rows of this partial index: O(expired), not O(stored).
CREATE INDEX IF NOT EXISTS spawns_due ON spawns(expires_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS spawns_state ON spawns(state, issued_at);
CREATE INDEX IF NOT EXISTS spawns_entity ON spawns(entity_id, issued_at);
CREATE TABLE IF NOT EXISTS tokens(id TEXT PRIMARY KEY, doc BLOB NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency(
	key TEXT PRIMARY KEY, state TEXT NOT NULL, fingerprint TEXT NOT NULL,
	status INTEGER NOT NULL DEFAULT 0, body BLOB, created_at TEXT NOT NULL);
`

// curieSchema makes a term's CURIE a unique key: the column entities.curie,
// set on a term's row when it is inserted, and a unique index over it.
// Create adds both after schema (the version 1 tables); a database made
// before them is migrated on first commit by ensureCurieKey, in one
// immediate transaction: the column is added and filled from the stored
// documents. Such a database may already hold several terms of one CURIE
// (defines that raced before the key existed); the oldest of them — the
// least id, ids beginning with their creation time — holds the key, and
// the others keep their rows and history with no curie, outside the
// partial index. They are read as before, and the service, which reports
// the oldest term of a CURIE, refuses any new term of it.
const curieSchema = `
CREATE UNIQUE INDEX IF NOT EXISTS entities_curie ON entities(curie) WHERE curie IS NOT NULL;
`

// curieVersion is the schema version that added the CURIE key.
const curieVersion = 2

// curieBackfill gives each CURIE's oldest term the key.
const curieBackfill = `
UPDATE entities SET curie = held.c FROM (
	SELECT min(id) AS id, json_extract(CAST(doc AS TEXT), '$.curie') AS c FROM entities
	WHERE kind = 'term' GROUP BY c HAVING c IS NOT NULL AND c <> ''
) AS held WHERE entities.id = held.id;
`

// Open opens an existing database file without touching its schema. It
// reads PRAGMA user_version once (schemaVersion): a database Create made
// at this version skips every schema probe. A failed read changes
// nothing: the probes then run, and report, as they always did.
//
// Every connection keeps its WAL file (SQLITE_FCNTL_PERSIST_WAL): the
// -wal and -shm files stay beside the database between runs instead of
// being created and deleted by every CLI invocation, and the last close
// truncates the -wal to nothing after its checkpoint (journal_size_limit),
// so the next open has no frames to recover.
//
// Every commit is durable when it returns (SynchronousFull).
func Open(path string) (*Store, error) { return OpenSynchronous(path, SynchronousFull) }

// Synchronous is SQLite's synchronous setting, in WAL mode, for every
// connection of a Store: when a commit's WAL frames reach the disk.
type Synchronous string

const (
	// SynchronousFull syncs the WAL at every commit, before the commit
	// returns: a write the store acknowledged survives a power loss or
	// an operating system crash (docs/design.md#storage-health). What
	// the store runs with. (EXTRA adds only a directory sync after a
	// rollback journal is deleted, which WAL mode never does.)
	SynchronousFull Synchronous = "FULL"
	// SynchronousNormal syncs the WAL only at checkpoints: the database
	// stays consistent after a power loss, but the commits since the
	// last checkpoint can be gone. Only the power-loss test opens a
	// store with it (a test build of dont, DONT_FAULT_SYNCHRONOUS), to
	// show that the test finds such a loss.
	SynchronousNormal Synchronous = "NORMAL"
)

// OpenSynchronous is Open with a synchronous setting other than
// SynchronousFull; only tests use it.
func OpenSynchronous(path string, sync Synchronous) (*Store, error) {
	if sync != SynchronousFull && sync != SynchronousNormal {
		return nil, fmt.Errorf("synchronous=%q is neither FULL nor NORMAL", sync)
	}
	// The path is percent-encoded: SQLite reads the DSN as a file: URI.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(10000)&_pragma=synchronous(" + string(sync) + ")&_pragma=journal_size_limit(" + strconv.Itoa(walSizeLimit) + ")&_txlock=immediate"
	db := sql.OpenDB(connector{dsn: dsn})
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	s := &Store{db: db, dir: filepath.Dir(path)}
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err == nil && version >= schemaVersion {
		s.schemaReady()
	}
	return s, nil
}

// walSizeLimit is the size a reset WAL file is truncated to while the
// database is in use; the last connection's close truncates it to zero.
// It is above what a WAL reaches while the checkpoints keep up
// (walMaxFrames of 4 KiB pages, about 17 MiB), so that starting the WAL
// over does not truncate it (one that a long reader of another process
// held back grows past it, and is cut back to it at its next start
// over): a WAL
// truncated at every start over has its file extended again by the
// writes that follow, which cost a lifecycle about a fifth more CPU in
// its commits (BenchmarkSpawnLifecycle, internal/service).
const walSizeLimit = 20 << 20

// schemaReady records that every table and index of schemaVersion exists,
// so that no first use probes for its part.
func (s *Store) schemaReady() {
	s.curieReady.Store(true)
	s.hooksReady.Store(true)
	s.confirmationsReady.Store(true)
	approvalSchemaReady.Store(s, struct{}{})
	idempotencySchemaReady.Store(s, struct{}{})
}

// walDriver is the driver of every Store connection: modernc.org/sqlite's,
// with a hook that makes each connection's WAL persistent. It is a driver
// of its own so that other users of the "sqlite" driver in a process are
// left as they are.
var walDriver = func() *sqlite3.Driver {
	d := &sqlite3.Driver{}
	d.RegisterConnectionHook(func(c sqlite3.ExecQuerierContext, _ string) error {
		fc, ok := c.(sqlite3.FileControl)
		if !ok {
			return errors.New("the sqlite driver has no file control: cannot keep the WAL")
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	})
	return d
}()

// connector opens connections through walDriver.
type connector struct{ dsn string }

func (c connector) Connect(context.Context) (driver.Conn, error) { return walDriver.Open(c.dsn) }

func (c connector) Driver() driver.Driver { return walDriver }

// FileMode is the mode of the database file and of the -wal and -shm
// files SQLite makes beside it (it gives them the database's mode): only
// the owner reads the store, which holds token hashes, the project secret
// and the remembered responses.
const FileMode os.FileMode = 0o600

// Create initialises a new database file: mode FileMode whatever the
// umask, WAL mode and every table of schemaVersion.
func Create(ctx context.Context, path string) (*Store, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	s, err := Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		s.Close()
		return nil, err
	}
	// One transaction: one commit (and one sync of the WAL) for the whole
	// schema rather than one per statement, and no half-made schema.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, schema+approvalSchema+idempotencySchema+confirmationsSchema+hooksSchema+slackSchema+fmt.Sprintf("PRAGMA user_version=%d;", curieVersion)); err != nil {
		tx.Rollback()
		s.Close()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		s.Close()
		return nil, err
	}
	for _, side := range []string{"-wal", "-shm"} {
		// SQLite copies the database's mode; this holds even if it did not.
		if err := os.Chmod(path+side, FileMode); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.Close()
			return nil, err
		}
	}
	if err := s.ensureCurieKey(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", schemaVersion)); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// createPrivate makes path (if absent) with mode FileMode, set after the
// open so that the umask cannot widen or narrow it, and syncs its folder.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(path, FileMode); err != nil {
		return err
	}
	// The new name survives a power loss only once its folder is synced
	// (SQLite syncs the folder of the WAL it creates, not the database's).
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// ensureCurieKey makes sure the CURIE key exists (see curieSchema): a read
// once per Store when it does, a migration in one immediate transaction
// when it does not. Another process may migrate first: the transaction
// checks again.
func (s *Store) ensureCurieKey(ctx context.Context) error {
	if s.curieReady.Load() {
		return nil
	}
	const probe = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entities_curie'"
	var n int
	if err := s.queryRow(ctx, probe).Scan(&n); err != nil {
		return classify(err)
	}
	if n == 0 {
		if err := s.write(ctx, func(tx *txn) error {
			if err := tx.QueryRowContext(ctx, probe).Scan(&n); err != nil || n > 0 {
				return err
			}
			var cols int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info('entities') WHERE name = 'curie'").Scan(&cols); err != nil {
				return err
			}
			if cols == 0 {
				if _, err := tx.ExecContext(ctx, "ALTER TABLE entities ADD COLUMN curie TEXT"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, curieBackfill); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, curieSchema); err != nil {
				return err
			}
			var version int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version >= curieVersion {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", curieVersion))
			return err
		}); err != nil {
			return err
		}
	}
	s.curieReady.Store(true)
	return nil
}
