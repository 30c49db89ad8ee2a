// Package sqlite is the embedded store: one SQLite file in .dont/, WAL
// mode, one immediate transaction per write, busy retries. It uses the
// pure-Go modernc.org/sqlite driver.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"
)

// timeKey is fixed-width so that text order is time order.
const timeKey = "2006-01-02T15:04:05.000000000Z"

func timeText(t time.Time) string { return t.UTC().Format(timeKey) }

// Store is a SQLite-backed service.Store.
type Store struct {
	db *sql.DB
	// writeMu serialises this process's writers so they queue in Go rather
	// than spin on SQLITE_BUSY; other processes are kept out by BEGIN IMMEDIATE.
	writeMu sync.Mutex
	// Hooks are for tests; production code leaves them unset.
	Hooks Hooks

	secretMu sync.Mutex
	secret   []byte

	curieReady atomic.Bool // the CURIE key exists (ensureCurieKey)
	hooksReady atomic.Bool // the webhook tables exist (ensureHooks)
	// confirmationsReady: the confirmations table exists (ensureConfirmations).
	confirmationsReady atomic.Bool
}

// Hooks are the points at which tests inject faults into the store's
// writes. They are set by tests only: the dont binary sets them only when
// built with -tags faulthooks, which its tests do (cli/dont).
type Hooks struct {
	// BeforeCommit runs inside the write transaction of every Commit,
	// after its writes and before it commits; an error rolls the
	// transaction back and is Commit's error. Tests hold a transaction
	// open with it (a signal mid-command, writers that all read before
	// any commits).
	BeforeCommit func(ctx context.Context) error
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// GetEntity implements service.Store.
func (s *Store) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	var e ledger.Entity
	var doc []byte
	err := s.db.QueryRowContext(ctx, "SELECT doc FROM entities WHERE id = ?", id).Scan(&doc)
	if err != nil {
		return e, classify(err)
	}
	return e, json.Unmarshal(doc, &e)
}

// ListEntities implements service.Store.
func (s *Store) ListEntities(ctx context.Context, f service.EntityFilter) ([]ledger.Entity, error) {
	q, args := "SELECT doc FROM entities WHERE 1=1", []any{}
	if f.Status != "" {
		q, args = q+" AND status = ?", append(args, string(f.Status))
	}
	if f.Kind != "" {
		q, args = q+" AND kind = ?", append(args, string(f.Kind))
	}
	return queryDocs[ledger.Entity](ctx, s.db, q+" ORDER BY id", args...)
}

// Dependents implements service.Store.
func (s *Store) Dependents(ctx context.Context, id string) ([]ledger.Entity, error) {
	return queryDocs[ledger.Entity](ctx, s.db,
		"SELECT e.doc FROM dependencies d JOIN entities e ON e.id = d.entity_id WHERE d.depends_on = ? ORDER BY e.id", id)
}

// Events implements service.Store: an entity's events in commit order.
func (s *Store) Events(ctx context.Context, entityID string) ([]ledger.Event, error) {
	return queryDocs[ledger.Event](ctx, s.db, "SELECT doc FROM events WHERE entity_id = ? ORDER BY seq", entityID)
}

// AllEvents returns every event in commit order (for audits and doctor).
func (s *Store) AllEvents(ctx context.Context) ([]ledger.Event, error) {
	return queryDocs[ledger.Event](ctx, s.db, "SELECT doc FROM events ORDER BY seq")
}

// GetSpawn implements service.Store.
func (s *Store) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	rows, err := s.spawns(ctx, "SELECT doc, request FROM spawns WHERE id = ?", id)
	if err != nil {
		return spawn.Spawn{}, err
	}
	if len(rows) == 0 {
		return spawn.Spawn{}, service.ErrNotFound
	}
	return rows[0], nil
}

// ListSpawns implements service.Store.
func (s *Store) ListSpawns(ctx context.Context, f service.SpawnFilter) ([]spawn.Spawn, error) {
	q, args := "SELECT doc, request FROM spawns WHERE 1=1", []any{}
	if f.State != "" {
		q, args = q+" AND state = ?", append(args, string(f.State))
	}
	if f.EntityID != "" {
		q, args = q+" AND entity_id = ?", append(args, f.EntityID)
	}
	return s.spawns(ctx, q+" ORDER BY issued_at, id", args...)
}

// ExpiringSpawns implements service.Store through the partial index spawns_due.
func (s *Store) ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error) {
	return s.spawns(ctx, dueQuery, timeText(after), timeText(until), limit)
}

const dueQuery = "SELECT doc, request FROM spawns INDEXED BY spawns_due WHERE state = 'pending' AND expires_at > ? AND expires_at <= ? ORDER BY expires_at LIMIT ?"

func (s *Store) spawns(ctx context.Context, q string, args ...any) ([]spawn.Spawn, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []spawn.Spawn
	for rows.Next() {
		var doc, req []byte
		if err := rows.Scan(&doc, &req); err != nil {
			return nil, classify(err)
		}
		var sp spawn.Spawn
		if err := json.Unmarshal(doc, &sp); err != nil {
			return nil, err
		}
		sp.Request = req
		out = append(out, sp)
	}
	return out, classify(rows.Err())
}

func queryDocs[T any](ctx context.Context, db *sql.DB, q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, classify(err)
		}
		var v T
		if err := json.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, classify(rows.Err())
}

// Commit implements service.Store: all writes in one immediate
// transaction, each conditional, retried while another process holds the lock.
func (s *Store) Commit(ctx context.Context, t service.Tx) error {
	if err := s.ensureCurieKey(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.commit(ctx, tx, t) })
}

// write runs fn in one immediate transaction with the store's busy retries.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for attempt := 0; ; attempt++ {
		err := func() error {
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // no-op after Commit
			if err := fn(tx); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if isBusy(err) && attempt < 20 && ctx.Err() == nil {
			time.Sleep(time.Duration(1+rand.IntN(10*(attempt+1))) * time.Millisecond)
			continue
		}
		return classify(err)
	}
}

func (s *Store) commit(ctx context.Context, tx *sql.Tx, t service.Tx) error {
	for _, p := range t.Entities {
		doc, err := json.Marshal(p.Entity)
		if err != nil {
			return err
		}
		var res sql.Result
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
				return &service.ConditionFailed{ID: service.CurieKey(curie.String)}
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
	for _, p := range t.Spawns {
		doc, err := json.Marshal(p.Spawn)
		if err != nil {
			return err
		}
		var res sql.Result
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
	for _, ev := range t.Events {
		doc, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO events(id, entity_id, request_id, kind, doc) VALUES(?,?,?,?,?)",
			ev.ID, ev.EntityID, ev.RequestID, string(ev.Kind), doc); err != nil {
			return err
		}
	}
	// The outbox: in this transaction, so a rollback announces nothing.
	if err := s.announceEvents(ctx, tx, t.Events); err != nil {
		return err
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
		return &service.ConditionFailed{ID: id}
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
		return service.ErrNotFound
	case isBusy(err):
		return errs.E(errs.DBLocked, "the database stayed locked by another process").Wrap(err)
	case strings.Contains(err.Error(), "no such table"):
		return errs.E(errs.NotInitialised, "the database has no dont schema").Wrap(err)
	}
	return err
}
