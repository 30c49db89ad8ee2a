package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
)

// Retention is how long the store keeps what only records the past
// (settings.FrameRetention, settings.DeliveryRetention); 0 keeps it for
// good. Claims, spawns and their events are the ledger and are never
// removed; Idempotency-Key records always last one window
// (idempotency.go).
type Retention struct {
	// Frames: an approval session is forgotten whole — its questions,
	// their frames, its readers' leases — once every question in it has
	// ended and been announced and this long has passed since the session
	// opened, since each question was asked and since each deadline, and
	// no reader has read it for this long. Forgetting sessions whole keeps
	// every remaining frame log complete, so `approvals audit` and `dont
	// doctor` stay clean.
	Frames time.Duration
	// Deliveries: a finished webhook delivery (delivered or failed) this
	// long after it finished, its message once no delivery of it is left,
	// and the delivery log's attempts this long after they were made. A
	// pending delivery is never removed.
	Deliveries time.Duration
}

// Pruned counts what Prune removed.
type Pruned struct {
	Sessions    int `json:"sessions"`
	Questions   int `json:"questions"`
	Frames      int `json:"frames"`
	Deliveries  int `json:"deliveries"`
	Messages    int `json:"messages"`
	Attempts    int `json:"attempts"`
	Idempotency int `json:"idempotency_records"`
}

// pruneBatch bounds what one transaction of Prune removes, so that the
// write connection is never held for long.
const pruneBatch = 200

// Prune applies r as of now: it removes, in transactions of at most
// pruneBatch items each, everything r no longer keeps, and the
// Idempotency-Key records past their window. It never removes a pending
// or unannounced question, a session with one, or a pending delivery
// and its message.
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error) {
	var p Pruned
	for {
		n, err := s.pruneIdempotency(ctx, now)
		p.Idempotency += n
		if err != nil || n < pruneBatch {
			if err != nil {
				return p, classify(err)
			}
			break
		}
	}
	if r.Frames > 0 {
		for {
			got, err := s.pruneSessions(ctx, now.Add(-r.Frames))
			p.Sessions += got.Sessions
			p.Questions += got.Questions
			p.Frames += got.Frames
			if err != nil {
				return p, classify(err)
			}
			if got.Sessions < pruneBatch {
				break
			}
		}
	}
	if r.Deliveries > 0 {
		horizon := now.Add(-r.Deliveries)
		for {
			got, err := s.pruneDeliveries(ctx, horizon)
			p.Deliveries += got.Deliveries
			p.Messages += got.Messages
			if err != nil {
				return p, classify(err)
			}
			if got.Deliveries < pruneBatch {
				break
			}
		}
		for {
			n, err := s.pruneAttempts(ctx, horizon)
			p.Attempts += n
			if err != nil {
				return p, classify(err)
			}
			if n < pruneBatch {
				break
			}
		}
	}
	return p, nil
}

// pruneIdempotency removes up to pruneBatch records past their window.
func (s *Store) pruneIdempotency(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, idempotencySchema); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM idempotency WHERE rowid IN "+
			"(SELECT rowid FROM idempotency INDEXED BY idempotency_created WHERE created_at < ? ORDER BY created_at LIMIT ?)",
			expiredBefore(now), pruneBatch)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// tableExists reports whether the table name exists (the approval and
// webhook tables are made on first use).
func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.queryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n)
	return n > 0, err
}

// pruneSessions forgets up to pruneBatch sessions that Retention.Frames
// no longer keeps at horizon (now less the retention), whole.
func (s *Store) pruneSessions(ctx context.Context, horizon time.Time) (Pruned, error) {
	var p Pruned
	if ok, err := s.tableExists(ctx, "approval_sessions"); !ok || err != nil {
		return p, err
	}
	h := timeText(horizon)
	err := s.write(ctx, func(tx *txn) error {
		p = Pruned{}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM approval_sessions s WHERE s.opened_at < ?1
			AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session_id = s.id
				AND (a.state = 'pending' OR (a.asked = 1 AND a.announced = 0) OR a.created_at >= ?1 OR a.deadline >= ?1))
			AND NOT EXISTS (SELECT 1 FROM approval_subscribers b WHERE b.session_id = s.id AND b.last_read_at >= ?1)
			ORDER BY s.opened_at LIMIT ?2`, h, pruneBatch)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := "(?" + strings.Repeat(",?", len(ids)-1) + ")"
		for _, step := range []struct {
			q     string
			count *int
		}{
			{"DELETE FROM approval_frames WHERE session_id IN " + in, &p.Frames},
			{"DELETE FROM approval_reminders WHERE approval_id IN (SELECT id FROM approvals WHERE session_id IN " + in + ")", nil},
			{"DELETE FROM approvals WHERE session_id IN " + in, &p.Questions},
			{"DELETE FROM approval_subscribers WHERE session_id IN " + in, nil},
			{"DELETE FROM approval_sessions WHERE id IN " + in, &p.Sessions},
		} {
			res, err := tx.ExecContext(ctx, step.q, ids...)
			if err != nil {
				return err
			}
			if step.count != nil {
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				*step.count = int(n)
			}
		}
		return nil
	})
	return p, err
}

// deliveriesDoneSchema is the index pruneDeliveries reads: finished
// deliveries by the time they finished (next_at, which RecordAttempt and
// RemoveHook set to that time once a delivery is no longer pending).
const deliveriesDoneSchema = `CREATE INDEX IF NOT EXISTS hook_deliveries_done ON hook_deliveries(next_at) WHERE state != 'pending';`

// pruneDeliveries removes up to pruneBatch deliveries that finished
// before horizon, and the messages of theirs that no delivery needs.
func (s *Store) pruneDeliveries(ctx context.Context, horizon time.Time) (Pruned, error) {
	var p Pruned
	if ok, err := s.tableExists(ctx, "hook_deliveries"); !ok || err != nil {
		return p, err
	}
	err := s.write(ctx, func(tx *txn) error {
		p = Pruned{}
		if _, err := tx.ExecContext(ctx, deliveriesDoneSchema); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT message_id, hook_id FROM hook_deliveries INDEXED BY hook_deliveries_done "+
			"WHERE state != 'pending' AND next_at < ? ORDER BY next_at LIMIT ?", timeText(horizon), pruneBatch)
		if err != nil {
			return err
		}
		type pair struct{ message, hook string }
		var done []pair
		for rows.Next() {
			var d pair
			if err := rows.Scan(&d.message, &d.hook); err != nil {
				rows.Close()
				return err
			}
			done = append(done, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		messages := map[string]bool{}
		for _, d := range done {
			if _, err := tx.ExecContext(ctx, "DELETE FROM hook_deliveries WHERE message_id = ? AND hook_id = ? AND state != 'pending'", d.message, d.hook); err != nil {
				return err
			}
			p.Deliveries++
			messages[d.message] = true
		}
		for m := range messages {
			res, err := tx.ExecContext(ctx, "DELETE FROM hook_messages WHERE id = ? AND NOT EXISTS (SELECT 1 FROM hook_deliveries WHERE message_id = ?)", m, m)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 {
				p.Messages++
			}
		}
		return nil
	})
	return p, err
}

// pruneAttempts removes up to pruneBatch of the delivery log's attempts
// made before horizon. The log's rows are numbered in the order they
// were recorded, which is the order of their times (each is recorded as
// it is made), so the ones to remove are those up to the last one dated
// before horizon, found by a binary search over the numbers.
func (s *Store) pruneAttempts(ctx context.Context, horizon time.Time) (int, error) {
	if ok, err := s.tableExists(ctx, "hook_attempts"); !ok || err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, func(tx *txn) error {
		n = 0
		last, err := lastAttemptBefore(ctx, tx, horizon)
		if err != nil || last == 0 {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM hook_attempts WHERE seq IN (SELECT seq FROM hook_attempts WHERE seq <= ? ORDER BY seq LIMIT ?)", last, pruneBatch)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// lastAttemptBefore is the greatest seq of an attempt dated before
// horizon, or 0.
func lastAttemptBefore(ctx context.Context, tx *txn, horizon time.Time) (int64, error) {
	var lo, hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(seq), max(seq) FROM hook_attempts").Scan(&lo, &hi); err != nil || !lo.Valid {
		return 0, err
	}
	var best int64
	for low, high := lo.Int64, hi.Int64; low <= high; {
		mid := low + (high-low)/2
		var seq int64
		var doc []byte
		err := tx.QueryRowContext(ctx, "SELECT seq, doc FROM hook_attempts WHERE seq >= ? ORDER BY seq LIMIT 1", mid).Scan(&seq, &doc)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && seq > high) {
			high = mid - 1
			continue
		}
		if err != nil {
			return 0, err
		}
		var a hooks.Attempt
		if err := json.Unmarshal(doc, &a); err != nil {
			return 0, err
		}
		if a.At.Before(horizon) {
			best, low = seq, seq+1
		} else {
			high = mid - 1
		}
	}
	return best, nil
}
