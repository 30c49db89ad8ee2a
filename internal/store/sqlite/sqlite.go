// Package sqlite is the embedded store: one SQLite file in .dont/, WAL
// mode, one immediate transaction per write, busy retries. It uses the
// pure-Go modernc.org/sqlite driver.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"
)

// timeKey is fixed-width so that text order is time order.
const timeKey = "2006-01-02T15:04:05.000000000Z"

func timeText(t time.Time) string { return t.UTC().Format(timeKey) }

// Store is a SQLite-backed store.Store.
type Store struct {
	db  *sql.DB
	dir string // the database's folder: its disk is checked before writes (space.go)
	// writeMu serialises this process's writers so they queue in Go rather
	// than spin on SQLITE_BUSY; other processes are kept out by BEGIN IMMEDIATE.
	writeMu sync.Mutex
	// The group commit's queue (writeconn.go): writes waiting for the
	// leader, and whether one is running.
	queueMu sync.Mutex
	queue   []*queuedWrite
	leading bool
	// groupCommits counts transactions that committed several writes.
	groupCommits atomic.Int64
	// Hooks are for tests; production code leaves them unset.
	Hooks Hooks

	secretMu sync.Mutex
	secret   []byte

	curieReady atomic.Bool // the CURIE key exists (ensureCurieKey)
	hooksReady atomic.Bool // the webhook tables exist (ensureHooks)
	// confirmationsReady: the confirmations table exists (ensureConfirmations).
	confirmationsReady atomic.Bool
	passkeysReady      atomic.Bool // the passkey tables exist (ensurePasskeys)

	// The statement cache (prepared.go).
	stmtMu sync.Mutex
	stmts  sync.Map // query string -> *sql.Stmt
	nstmts int

	// Guarded by writeMu: the connection every write of this Store runs
	// on (writeconn.go), its statements, and the commits since this
	// Store last started a checkpoint.
	wconn           *sql.Conn
	shm             *os.File             // the -shm file, for walFrames
	wstmts          map[string]*sql.Stmt // short reads' statements on wconn
	sinceCheckpoint int
	checkpoints     sync.WaitGroup // background checkpoints in flight
	checkpointing   atomic.Bool
	tailWanted      atomic.Bool // a background checkpoint left a long WAL
	closing         bool
	kn              known // what this Store knows without reading (known.go)
}

// Hooks are the points at which tests inject faults into the store's
// writes. They are set by tests only: the dont binary sets them only when
// built with -tags faulthooks, which its tests do (cli/dont).
type Hooks struct {
	// BeforeCommit runs inside the write transaction of every Commit and
	// keyed put (store.KeyedPuts), after its writes and before it
	// commits; an error rolls the transaction back and is the write's
	// error. Tests hold a transaction open with it (a signal
	// mid-command, writers that all read before any commits).
	BeforeCommit func(ctx context.Context) error
	// FreeSpace, when set, replaces the free bytes the file system of
	// the database reports (space.go): tests fill a disk with it.
	FreeSpace func() (uint64, error)
}

// GetEntity implements store.Store.
func (s *Store) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	if e, err, ok := s.getEntity(ctx, id); ok {
		return e, err
	}
	var e ledger.Entity
	var doc []byte
	err := s.queryRow(ctx, entityQuery, id).Scan(&doc)
	if err != nil {
		return e, classify(err)
	}
	return e, json.Unmarshal(doc, &e)
}

// EntityDoc implements store.DocStore: the entity's document as
// entityDoc wrote it, not decoded.
func (s *Store) EntityDoc(ctx context.Context, id string) (json.RawMessage, error) {
	var doc []byte
	if err := s.queryRow(ctx, entityQuery, id).Scan(&doc); err != nil {
		return nil, classify(err)
	}
	return doc, nil
}

// ListEntities implements store.Store.
func (s *Store) ListEntities(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error) {
	q, args := "SELECT doc FROM entities WHERE 1=1", []any{}
	if f.Status != "" {
		q, args = q+" AND status = ?", append(args, string(f.Status))
	}
	if f.Kind != "" {
		q, args = q+" AND kind = ?", append(args, string(f.Kind))
	}
	if f.After != "" {
		q, args = q+" AND id > ?", append(args, f.After)
	}
	q += " ORDER BY id"
	if f.Limit > 0 {
		q, args = q+" LIMIT ?", append(args, f.Limit)
	}
	return queryDocs[ledger.Entity](ctx, s, q, args...)
}

// Dependents implements store.Store.
func (s *Store) Dependents(ctx context.Context, id string) ([]ledger.Entity, error) {
	return queryDocs[ledger.Entity](ctx, s,
		"SELECT e.doc FROM dependencies d JOIN entities e ON e.id = d.entity_id WHERE d.depends_on = ? ORDER BY e.id", id)
}

// Events implements store.Store: an entity's events in commit order.
func (s *Store) Events(ctx context.Context, entityID string) ([]ledger.Event, error) {
	return queryDocs[ledger.Event](ctx, s, "SELECT doc FROM events WHERE entity_id = ? ORDER BY seq", entityID)
}

// AllEvents returns every event in commit order (for audits and doctor).
func (s *Store) AllEvents(ctx context.Context) ([]ledger.Event, error) {
	return queryDocs[ledger.Event](ctx, s, "SELECT doc FROM events ORDER BY seq")
}

// GetSpawn implements store.Store.
func (s *Store) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	if sp, found, err, ok := s.getSpawn(ctx, id); ok {
		if err == nil && !found {
			err = store.ErrNotFound
		}
		return sp, classify(err)
	}
	rows, err := s.spawns(ctx, true, spawnQuery, id)
	if err != nil {
		return spawn.Spawn{}, err
	}
	if len(rows) == 0 {
		return spawn.Spawn{}, store.ErrNotFound
	}
	return rows[0], nil
}

// ListSpawns implements store.Store.
func (s *Store) ListSpawns(ctx context.Context, f store.SpawnFilter) ([]spawn.Spawn, error) {
	q, args := "SELECT doc, request FROM spawns WHERE 1=1", []any{}
	if f.State != "" {
		q, args = q+" AND state = ?", append(args, string(f.State))
	}
	if f.EntityID != "" {
		q, args = q+" AND entity_id = ?", append(args, f.EntityID)
	}
	if f.After == "" && f.Limit <= 0 {
		return s.spawns(ctx, false, q+" ORDER BY issued_at, id", args...)
	}
	// A page: in id order, from the primary key.
	if f.After != "" {
		q, args = q+" AND id > ?", append(args, f.After)
	}
	q += " ORDER BY id"
	if f.Limit > 0 {
		q, args = q+" LIMIT ?", append(args, f.Limit)
	}
	return s.spawns(ctx, false, q, args...)
}

// ExpiringSpawns implements store.Store through the partial index spawns_due.
func (s *Store) ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error) {
	return s.spawns(ctx, limit <= store.SweepBatch, dueQuery, timeText(after), timeText(until), limit)
}

const dueQuery = "SELECT doc, request FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at > ? AND expires_at <= ? ORDER BY expires_at LIMIT ?"

// spawns reads spawns; short ones on the write connection (readRows).
func (s *Store) spawns(ctx context.Context, short bool, q string, args ...any) ([]spawn.Spawn, error) {
	var out []spawn.Spawn
	err := s.readRows(ctx, short, q, args, func(rows *sql.Rows) error {
		var doc, req []byte
		if err := rows.Scan(&doc, &req); err != nil {
			return err
		}
		var sp spawn.Spawn
		if err := json.Unmarshal(doc, &sp); err != nil {
			return err
		}
		sp.Request = req
		out = append(out, sp)
		return nil
	})
	return out, classify(err)
}

// queryDocs reads the documents of a long read (on the pool).
func queryDocs[T any](ctx context.Context, s *Store, q string, args ...any) ([]T, error) {
	var out []T
	err := s.readRows(ctx, false, q, args, func(rows *sql.Rows) error {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return err
		}
		var v T
		if err := json.Unmarshal(doc, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, classify(err)
}

// Commit implements store.Store: all writes in one immediate
// transaction, each conditional, retried while another process holds the
// lock. Everything pure — the documents' JSON, the hook messages — is done
// before the write lock is taken.
func (s *Store) Commit(ctx context.Context, t store.Tx) error {
	if err := s.ensureCurieKey(ctx); err != nil {
		return err
	}
	enc, err := encode(t)
	if err != nil {
		return err
	}
	err = s.writeLearning(ctx, func(tx *txn) error { return s.commit(ctx, tx, t, enc) }, learnOf(s, t))
	if err == nil && t.Key != nil {
		idempotencySchemaReady.Store(s, struct{}{})
	}
	return err
}

// encoded is a Tx's documents and hook messages, made before the lock.
type encoded struct {
	entities, spawns, events [][]byte
	messages                 []hooks.Message // of the events hooks may hear
}

func encode(t store.Tx) (encoded, error) {
	enc := encoded{entities: make([][]byte, len(t.Entities)), spawns: make([][]byte, len(t.Spawns)), events: make([][]byte, len(t.Events))}
	var err error
	for i, p := range t.Entities {
		if enc.entities[i], err = entityDoc(p.Entity); err != nil {
			return enc, err
		}
	}
	for i, p := range t.Spawns {
		if enc.spawns[i], err = spawnDoc(p.Spawn); err != nil {
			return enc, err
		}
	}
	for i, ev := range t.Events {
		if enc.events[i], err = eventDoc(ev); err != nil {
			return enc, err
		}
		if m, ok := hooks.OfEvent(ev); ok {
			enc.messages = append(enc.messages, m)
		}
	}
	return enc, nil
}

func (s *Store) commit(ctx context.Context, tx *txn, t store.Tx, enc encoded) error {
	for _, c := range t.Unchanged {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM entities WHERE id = ? AND version = ?", c.ID, c.Version).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.ConditionFailed{ID: c.ID}
		}
		if err != nil {
			return err
		}
	}
	for i, p := range t.Entities {
		doc := enc.entities[i]
		var res sql.Result
		var err error
		if p.PrevVersion == 0 {
			// A term's CURIE is its unique key (curieSchema); a taken one
			// fails the insert with a constraint error, not a conflict on id.
			var curie sql.NullString
			if p.Entity.Kind == ledger.KindTerm && p.Entity.Curie != "" {
				curie = sql.NullString{String: p.Entity.Curie, Valid: true}
			}
			res, err = tx.ExecContext(ctx, "INSERT INTO entities(id, kind, status, version, doc, curie) VALUES(?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING",
				p.Entity.ID, string(p.Entity.Kind), string(p.Entity.Status), p.Entity.Version, doc, curie)
			if curie.Valid && isUnique(err) {
				return &store.ConditionFailed{ID: store.CurieKey(curie.String)}
			}
		} else {
			res, err = tx.ExecContext(ctx, "UPDATE entities SET status = ?, version = ?, doc = ? WHERE id = ? AND version = ?",
				string(p.Entity.Status), p.Entity.Version, doc, p.Entity.ID, p.PrevVersion)
		}
		if err := affectedOne(res, err, p.Entity.ID); err != nil {
			return err
		}
		if p.PrevVersion == 0 {
			for _, d := range p.Entity.DependsOn {
				if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO dependencies(depends_on, entity_id) VALUES(?,?)", d, p.Entity.ID); err != nil {
					return err
				}
			}
		}
	}
	for i, p := range t.Spawns {
		doc := enc.spawns[i]
		var res sql.Result
		var err error
		sp := p.Spawn
		if p.Create {
			res, err = tx.ExecContext(ctx, "INSERT INTO spawns(id, entity_id, state, issued_at, expires_at, doc, request) VALUES(?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING",
				sp.ID, sp.EntityID, string(sp.State), timeText(sp.IssuedAt), timeText(sp.ExpiresAt), doc, []byte(sp.Request))
		} else {
			// A resolution, or a heartbeat moving a pending spawn's expiry
			// (and its payload's): both only while it is still pending
			// with the expiry the write read.
			var req any
			if len(sp.Request) > 0 {
				req = []byte(sp.Request)
			}
			res, err = tx.ExecContext(ctx, "UPDATE spawns SET state = ?, expires_at = ?, doc = ?, request = COALESCE(?, request) WHERE id = ? AND state = 'pending' AND expires_at = ?",
				string(sp.State), timeText(sp.ExpiresAt), doc, req, sp.ID, timeText(p.Expected()))
		}
		if err := affectedOne(res, err, sp.ID); err != nil {
			return err
		}
	}
	for i, ev := range t.Events {
		if _, err := tx.ExecContext(ctx, "INSERT INTO events(id, entity_id, request_id, kind, doc) VALUES(?,?,?,?,?)",
			ev.ID, ev.EntityID, ev.RequestID, string(ev.Kind), enc.events[i]); err != nil {
			return err
		}
	}
	// The outbox: in this transaction, so a rollback announces nothing.
	for _, m := range enc.messages {
		if err := s.announce(ctx, tx, m, true); err != nil {
			return err
		}
	}
	// The call's response, after its own conditions held (idempotency.go).
	if t.Key != nil {
		if err := s.putKey(ctx, tx, t.Key); err != nil {
			return err
		}
	}
	if s.Hooks.BeforeCommit != nil {
		return s.Hooks.BeforeCommit(ctx)
	}
	return nil
}

func affectedOne(res sql.Result, err error, id string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return &store.ConditionFailed{ID: id}
	}
	return nil
}

// isUnique reports a UNIQUE constraint failure.
func isUnique(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) && se.Code() == sqlite3lib.SQLITE_CONSTRAINT_UNIQUE
}

func isBusy(err error) bool {
	var se *sqlite3.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3lib.SQLITE_BUSY || c == sqlite3lib.SQLITE_LOCKED
	}
	return false
}

// classify maps driver errors to the service's vocabulary.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case isBusy(err):
		return errs.E(errs.DBLocked, "the database stayed locked by another process").Wrap(err)
	case strings.Contains(err.Error(), "no such table"):
		return errs.E(errs.NotInitialised, "the database has no dont schema").Wrap(err)
	}
	return err
}
