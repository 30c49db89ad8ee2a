package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
)

// Idempotency-Key records expire as on DynamoDB: a record older than
// idempotency.Window counts as absent, and every write (Claim, Remember)
// first deletes at most expiredBatch expired records, oldest first,
// through the index idempotency_created. A write adds one record and
// removes up to expiredBatch, so the table holds about one window's keys.
const (
	// staleClaim is how long a claimed key whose request never finished
	// blocks retries before it may be claimed again (a crashed server).
	staleClaim = idempotency.StaleClaim
	// expiredBatch bounds the expired records one write deletes.
	expiredBatch = 100
)

// idempotencySchema is the index the expiry reads. Create applies it; a
// database made before it gets it on the first write (idempotencyReady).
const idempotencySchema = `
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency(created_at);
`

// idempotencySchemaReady remembers the stores whose index has been made.
var idempotencySchemaReady sync.Map // *Store -> struct{}

// expire is the first step of every idempotency write: the index exists,
// and at most expiredBatch records older than the window are gone.
func (s *Store) expire(ctx context.Context, tx *txn, now time.Time) error {
	if _, ok := idempotencySchemaReady.Load(s); !ok {
		if _, err := tx.ExecContext(ctx, idempotencySchema); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM idempotency WHERE rowid IN "+
		"(SELECT rowid FROM idempotency INDEXED BY idempotency_created WHERE created_at < ? ORDER BY created_at LIMIT ?)",
		expiredBefore(now), expiredBatch)
	return err
}

// expiredBefore is the created_at below which a record is past the window.
func expiredBefore(now time.Time) string { return timeText(now.Add(-idempotency.Window)) }

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, now time.Time) (*idempotency.Record, error) {
	var existing *idempotency.Record
	err := s.write(ctx, func(tx *txn) error {
		if err := s.expire(ctx, tx, now); err != nil {
			return err
		}
		var st idempotency.Record
		var state, created string
		err := tx.QueryRowContext(ctx, "SELECT state, fingerprint, status, body, created_at FROM idempotency WHERE key = ?", key).
			Scan(&state, &st.Fingerprint, &st.Status, &st.Body, &created)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		case created < expiredBefore(now):
			// Past the window (left by a bounded expiry): absent.
		case state == "claimed" && created < timeText(now.Add(-staleClaim)):
			// The first request died without an answer; this one takes over.
		default:
			st.Done = state == "done"
			st.At, _ = time.Parse(timeKey, created)
			existing = &st
			return nil
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO idempotency(key, state, fingerprint, created_at) VALUES(?, 'claimed', ?, ?) "+
			"ON CONFLICT(key) DO UPDATE SET state = 'claimed', fingerprint = excluded.fingerprint, status = 0, body = NULL, created_at = excluded.created_at",
			key, fingerprint, timeText(now))
		return err
	})
	if err == nil {
		idempotencySchemaReady.Store(s, struct{}{})
	}
	return existing, err
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, status int, body []byte) error {
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "UPDATE idempotency SET state = 'done', status = ?, body = ? WHERE key = ? AND state = 'claimed'", status, body, key)
		return err
	})
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string) error {
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM idempotency WHERE key = ? AND state = 'claimed'", key)
		return err
	})
}

// Lookup implements idempotency.Store: a record past the window is absent.
func (s *Store) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	var st idempotency.Record
	var state, created string
	err := s.queryRow(ctx, "SELECT state, fingerprint, status, body, created_at FROM idempotency WHERE key = ? AND created_at >= ?", key, expiredBefore(now)).
		Scan(&state, &st.Fingerprint, &st.Status, &st.Body, &created)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st.Done = state == "done"
	st.At, _ = time.Parse(timeKey, created)
	return &st, nil
}

// Remember implements idempotency.Store: the first response stored (or
// one past the window) stays.
func (s *Store) Remember(ctx context.Context, key, fingerprint string, status int, body []byte, now time.Time) error {
	err := s.write(ctx, func(tx *txn) error {
		if err := s.expire(ctx, tx, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO idempotency(key, state, fingerprint, status, body, created_at) VALUES(?, 'done', ?, ?, ?, ?) "+
			"ON CONFLICT(key) DO UPDATE SET state = 'done', fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body, "+
			"created_at = excluded.created_at WHERE idempotency.created_at < ?",
			key, fingerprint, status, body, timeText(now), expiredBefore(now))
		return err
	})
	if err == nil {
		idempotencySchemaReady.Store(s, struct{}{})
	}
	return err
}

// putKey writes a call's response in the call's own transaction
// (store.Tx.Key): as Remember, but a key already recorded inside the
// window fails the commit with idempotency.ErrTaken, so the call's writes
// are applied together with their response or not at all.
func (s *Store) putKey(ctx context.Context, tx *txn, k *idempotency.Put) error {
	if err := s.expire(ctx, tx, k.At); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO idempotency(key, state, fingerprint, status, body, created_at) VALUES(?, 'done', ?, ?, ?, ?) "+
		"ON CONFLICT(key) DO UPDATE SET state = 'done', fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body, "+
		"created_at = excluded.created_at WHERE idempotency.created_at < ?",
		k.Name, k.Fingerprint, k.Status, k.Body, timeText(k.At), expiredBefore(k.At))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err == nil {
			err = idempotency.ErrTaken
		}
		return err
	}
	return nil
}

var _ idempotency.Store = (*Store)(nil)
