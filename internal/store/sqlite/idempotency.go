package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
)

// staleClaim is how long a claimed key whose request never finished blocks
// retries before it may be claimed again (a crashed server).
const staleClaim = time.Minute

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, now time.Time) (*idempotency.Record, error) {
	var existing *idempotency.Record
	err := s.write(ctx, func(tx *sql.Tx) error {
		var st idempotency.Record
		var state, created string
		err := tx.QueryRowContext(ctx, "SELECT state, fingerprint, status, body, created_at FROM idempotency WHERE key = ?", key).
			Scan(&state, &st.Fingerprint, &st.Status, &st.Body, &created)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		case state == "claimed" && created < timeText(now.Add(-staleClaim)):
			// The first request died without an answer; this one takes over.
		default:
			st.Done = state == "done"
			existing = &st
			return nil
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO idempotency(key, state, fingerprint, created_at) VALUES(?, 'claimed', ?, ?) "+
			"ON CONFLICT(key) DO UPDATE SET state = 'claimed', fingerprint = excluded.fingerprint, created_at = excluded.created_at",
			key, fingerprint, timeText(now))
		return err
	})
	return existing, err
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, status int, body []byte) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE idempotency SET state = 'done', status = ?, body = ? WHERE key = ? AND state = 'claimed'", status, body, key)
		return err
	})
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM idempotency WHERE key = ? AND state = 'claimed'", key)
		return err
	})
}

// Lookup implements idempotency.Store.
func (s *Store) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	var st idempotency.Record
	var state string
	err := s.db.QueryRowContext(ctx, "SELECT state, fingerprint, status, body FROM idempotency WHERE key = ?", key).
		Scan(&state, &st.Fingerprint, &st.Status, &st.Body)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st.Done = state == "done"
	return &st, nil
}

// Remember implements idempotency.Store.
func (s *Store) Remember(ctx context.Context, key, fingerprint string, status int, body []byte, now time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO idempotency(key, state, fingerprint, status, body, created_at) VALUES(?, 'done', ?, ?, ?, ?) "+
			"ON CONFLICT(key) DO NOTHING", key, fingerprint, status, body, timeText(now))
		return err
	})
}

var _ idempotency.Store = (*Store)(nil)
