package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"github.com/dont-cli/dont/internal/idempotency"
	"math"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/store"
)

// The webhook tables are created on first use, inside the first write
// transaction that needs them, so that databases made before hooks gain
// them without a migration step. The outbox is hook_messages (one row
// per announced event) and hook_deliveries (one per hook that hears it),
// written in the transaction of the event; hook_attempts is the delivery
// log.
const hooksSchema = `
CREATE TABLE IF NOT EXISTS hooks(id TEXT PRIMARY KEY, doc BLOB NOT NULL, secret TEXT NOT NULL, removed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS hook_messages(id TEXT PRIMARY KEY, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS hook_deliveries(
	message_id TEXT NOT NULL, hook_id TEXT NOT NULL, state TEXT NOT NULL, next_at TEXT NOT NULL, doc BLOB NOT NULL,
	PRIMARY KEY(message_id, hook_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hook_deliveries_due ON hook_deliveries(next_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS hook_deliveries_hook ON hook_deliveries(hook_id, message_id);
CREATE TABLE IF NOT EXISTS hook_attempts(seq INTEGER PRIMARY KEY AUTOINCREMENT, hook_id TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS hook_attempts_hook ON hook_attempts(hook_id, seq);
`

var _ store.HookStore = (*Store)(nil)

// ensureHooksTx creates the tables inside tx if this process has not seen them.
func (s *Store) ensureHooksTx(ctx context.Context, tx *txn) error {
	if s.hooksReady.Load() {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'hook_attempts'").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, hooksSchema); err != nil {
			return err
		}
	}
	s.hooksReady.Store(true)
	return nil
}

// hooksExist reports whether the webhook tables exist (reads never create them).
func (s *Store) hooksExist(ctx context.Context) (bool, error) {
	if s.hooksReady.Load() {
		return true, nil
	}
	var n int
	if err := s.queryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'hook_attempts'").Scan(&n); err != nil {
		return false, classify(err)
	}
	if n > 0 {
		s.hooksReady.Store(true)
	}
	return n > 0, nil
}

// HasDue reports, with one read, whether a delivery is due at now: the
// CLI's cheap check before it loads what delivering needs.
func (s *Store) HasDue(ctx context.Context, now time.Time) (bool, error) {
	if ok, err := s.hooksExist(ctx); !ok || err != nil {
		return false, err
	}
	var n int
	err := s.queryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM hook_deliveries INDEXED BY hook_deliveries_due WHERE state = 'pending' AND next_at <= ? LIMIT 1)", timeText(now)).Scan(&n)
	return n > 0, classify(err)
}

// announce writes m to the outbox inside tx, with one delivery per live
// hook that hears it; with no such hook it writes nothing.
func (s *Store) announce(ctx context.Context, tx *txn, m hooks.Message, ok bool) error {
	if !ok {
		return nil
	}
	if err := s.ensureHooksTx(ctx, tx); err != nil {
		return err
	}
	live, err := s.liveHooks(ctx, tx)
	if err != nil {
		return err
	}
	var ids []string
	for _, h := range live {
		if h.Hears(m.Type) {
			ids = append(ids, h.ID)
		}
	}
	return enqueue(ctx, tx, m, ids)
}

// liveHooks returns the live hooks as tx sees them: read once per state
// of the database the Store knows (known.go), then known until another
// connection commits or a write other than a Commit runs (PRAGMA
// data_version tells).
func (s *Store) liveHooks(ctx context.Context, tx *txn) ([]hooks.Hook, error) {
	return s.knownHooks(ctx, tx)
}

func txHooks(ctx context.Context, tx *txn) ([]hooks.Hook, error) {
	rows, err := tx.QueryContext(ctx, "SELECT doc FROM hooks WHERE removed = 0 ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hooks.Hook
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var h hooks.Hook
		if err := json.Unmarshal(doc, &h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

func enqueue(ctx context.Context, tx *txn, m hooks.Message, hookIDs []string) error {
	if len(hookIDs) == 0 {
		return nil
	}
	m = m.Identified()
	doc, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO hook_messages(id, doc) VALUES(?,?)", m.ID, doc); err != nil {
		return err
	}
	for _, id := range hookIDs {
		d := hooks.Delivery{MessageID: m.ID, HookID: id, Type: m.Type, State: hooks.StatePending, CreatedAt: m.At, NextAt: m.At}
		dd, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO hook_deliveries(message_id, hook_id, state, next_at, doc) VALUES(?,?,?,?,?)",
			m.ID, id, string(d.State), timeText(d.NextAt), dd); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) announceAsked(ctx context.Context, tx *txn, a approvals.Approval) error {
	m, ok := hooks.OfAsked(a)
	return s.announce(ctx, tx, m, ok)
}

func (s *Store) announceEnded(ctx context.Context, tx *txn, a approvals.Approval) error {
	m, ok := hooks.OfEnded(a)
	return s.announce(ctx, tx, m, ok)
}

func (s *Store) announceHeld(ctx context.Context, tx *txn, p confirm.Pending) error {
	m, ok := hooks.OfHeld(p)
	return s.announce(ctx, tx, m, ok)
}

type hookDoc struct {
	hooks.Hook
}

// PutHook implements store.HookStore.
func (s *Store) PutHook(ctx context.Context, h hooks.Hook) error { return s.PutHookKeyed(ctx, h, nil) }

// PutHookKeyed implements store.KeyedPuts.
func (s *Store) PutHookKeyed(ctx context.Context, h hooks.Hook, key *idempotency.Put) error {
	doc, err := json.Marshal(hookDoc{h})
	if err != nil {
		return err
	}
	return s.writeKeyed(ctx, key, func(tx *txn) error {
		if err := s.ensureHooksTx(ctx, tx); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO hooks(id, doc, secret) VALUES(?,?,?) ON CONFLICT(id) DO NOTHING", h.ID, doc, h.Secret)
		return affectedOne(res, err, h.ID)
	})
}

func (s *Store) hooksWhere(ctx context.Context, where string, args ...any) ([]hooks.Hook, error) {
	if ok, err := s.hooksExist(ctx); !ok || err != nil {
		return nil, err
	}
	var out []hooks.Hook
	err := s.readRows(ctx, false, "SELECT doc, secret FROM hooks "+where+" ORDER BY id", args, func(rows *sql.Rows) error {
		var doc []byte
		var secret string
		if err := rows.Scan(&doc, &secret); err != nil {
			return err
		}
		var h hooks.Hook
		if err := json.Unmarshal(doc, &h); err != nil {
			return err
		}
		h.Secret = secret
		out = append(out, h)
		return nil
	})
	return out, classify(err)
}

// GetHook implements store.HookStore.
func (s *Store) GetHook(ctx context.Context, id string) (hooks.Hook, error) {
	hs, err := s.hooksWhere(ctx, "WHERE id = ?", id)
	if err != nil {
		return hooks.Hook{}, err
	}
	if len(hs) == 0 {
		return hooks.Hook{}, store.ErrNotFound
	}
	return hs[0], nil
}

// ListHooks implements store.HookStore.
func (s *Store) ListHooks(ctx context.Context) ([]hooks.Hook, error) { return s.hooksWhere(ctx, "") }

// RemoveHook implements store.HookStore.
func (s *Store) RemoveHook(ctx context.Context, id string, at time.Time) error {
	h, err := s.GetHook(ctx, id)
	if err != nil {
		return err
	}
	if h.RemovedAt != nil {
		return store.ErrNotFound
	}
	h.RemovedAt = &at
	doc, err := json.Marshal(hookDoc{h})
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "UPDATE hooks SET doc = ?, removed = 1 WHERE id = ? AND removed = 0", doc, id)
		if err := affectedOne(res, err, id); err != nil {
			var cf *store.ConditionFailed
			if errors.As(err, &cf) {
				return store.ErrNotFound
			}
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT doc FROM hook_deliveries WHERE hook_id = ? AND state = 'pending'", id)
		if err != nil {
			return err
		}
		var pending []hooks.Delivery
		for rows.Next() {
			var doc []byte
			if err := rows.Scan(&doc); err != nil {
				rows.Close()
				return err
			}
			var d hooks.Delivery
			if err := json.Unmarshal(doc, &d); err != nil {
				rows.Close()
				return err
			}
			pending = append(pending, d)
		}
		rows.Close()
		for _, d := range pending {
			d.State, d.LastError = hooks.StateFailed, "the hook was removed"
			if err := putDelivery(ctx, tx, d, at); err != nil {
				return err
			}
		}
		return nil
	})
}

// putDelivery writes d. The next_at column of a pending delivery is when
// it is due; of a finished one, finishedAt, when it finished: the time
// Retention.Deliveries counts from (retention.go).
func putDelivery(ctx context.Context, tx *txn, d hooks.Delivery, finishedAt time.Time) error {
	doc, err := json.Marshal(d)
	if err != nil {
		return err
	}
	next := d.NextAt
	if d.State != hooks.StatePending {
		next = finishedAt
	}
	_, err = tx.ExecContext(ctx, "UPDATE hook_deliveries SET state = ?, next_at = ?, doc = ? WHERE message_id = ? AND hook_id = ?",
		string(d.State), timeText(next), doc, d.MessageID, d.HookID)
	return err
}

// Enqueue implements store.HookStore.
func (s *Store) Enqueue(ctx context.Context, m hooks.Message, hookIDs []string) error {
	return s.write(ctx, func(tx *txn) error {
		if err := s.ensureHooksTx(ctx, tx); err != nil {
			return err
		}
		return enqueue(ctx, tx, m, hookIDs)
	})
}

// ClaimDue implements store.HookStore through the partial index
// hook_deliveries_due.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DueDelivery, error) {
	// A read first, so that a pass with nothing due takes no write lock.
	if due, err := s.HasDue(ctx, now); !due || err != nil {
		return nil, err
	}
	var out []store.DueDelivery
	err := s.write(ctx, func(tx *txn) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `SELECT d.doc, m.doc FROM hook_deliveries d INDEXED BY hook_deliveries_due
			JOIN hook_messages m ON m.id = d.message_id WHERE d.state = 'pending' AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`, timeText(now), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var dd, md []byte
			if err := rows.Scan(&dd, &md); err != nil {
				rows.Close()
				return err
			}
			var due store.DueDelivery
			if err := json.Unmarshal(dd, &due.Delivery); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal(md, &due.Message); err != nil {
				rows.Close()
				return err
			}
			out = append(out, due)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, due := range out {
			if _, err := tx.ExecContext(ctx, "UPDATE hook_deliveries SET next_at = ? WHERE message_id = ? AND hook_id = ?",
				timeText(now.Add(lease)), due.Delivery.MessageID, due.Delivery.HookID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// RecordAttempt implements store.HookStore.
func (s *Store) RecordAttempt(ctx context.Context, a hooks.Attempt, d hooks.Delivery) error {
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO hook_attempts(hook_id, doc) VALUES(?,?)", a.HookID, doc); err != nil {
			return err
		}
		return putDelivery(ctx, tx, d, a.At)
	})
}

// Deliveries implements store.HookStore: deliveries by message id,
// attempts by their row's sequence (the position a page goes on from),
// each descending, through the (hook_id, …) indexes.
func (s *Store) Deliveries(ctx context.Context, hookID string, f store.DeliveryFilter) (store.DeliveryPage, error) {
	var pg store.DeliveryPage
	var before int64 = math.MaxInt64
	if f.AttemptsBefore != "" {
		n, err := strconv.ParseInt(f.AttemptsBefore, 10, 64)
		if err != nil || n < 1 {
			return pg, store.ErrInvalidPosition
		}
		before = n
	}
	if ok, err := s.hooksExist(ctx); !ok || err != nil {
		return pg, err
	}
	if f.Deliveries > 0 {
		q, args := "SELECT doc FROM hook_deliveries WHERE hook_id = ? ORDER BY message_id DESC LIMIT ?", []any{hookID, f.Deliveries}
		if f.DeliveriesBefore != "" {
			q, args = "SELECT doc FROM hook_deliveries WHERE hook_id = ? AND message_id < ? ORDER BY message_id DESC LIMIT ?", []any{hookID, f.DeliveriesBefore, f.Deliveries}
		}
		ds, err := queryDocs[hooks.Delivery](ctx, s, q, args...)
		if err != nil {
			return pg, err
		}
		pg.Deliveries = ds
	}
	if f.Attempts > 0 {
		err := s.readRows(ctx, false, "SELECT seq, doc FROM hook_attempts WHERE hook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
			[]any{hookID, before, f.Attempts}, func(rows *sql.Rows) error {
				var seq int64
				var doc []byte
				if err := rows.Scan(&seq, &doc); err != nil {
					return err
				}
				var a hooks.Attempt
				if err := json.Unmarshal(doc, &a); err != nil {
					return err
				}
				pg.Attempts = append(pg.Attempts, a)
				pg.Positions = append(pg.Positions, strconv.FormatInt(seq, 10))
				return nil
			})
		if err != nil {
			return pg, classify(err)
		}
	}
	return pg, nil
}

// LastAttempt implements store.HookStore.
func (s *Store) LastAttempt(ctx context.Context, hookID string) (hooks.Attempt, bool, error) {
	if ok, err := s.hooksExist(ctx); !ok || err != nil {
		return hooks.Attempt{}, false, err
	}
	as, err := queryDocs[hooks.Attempt](ctx, s, "SELECT doc FROM hook_attempts WHERE hook_id = ? ORDER BY seq DESC LIMIT 1", hookID)
	if err != nil || len(as) == 0 {
		return hooks.Attempt{}, false, err
	}
	return as[0], true, nil
}
