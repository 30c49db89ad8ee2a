package sqlite

import (
	"context"
	"encoding/json"
	"github.com/dont-cli/dont/internal/idempotency"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/store"
)

// The confirmations table is created on first use, so that databases made
// before pending confirmations existed gain it without a migration step.
const confirmationsSchema = `
CREATE TABLE IF NOT EXISTS confirmations(
	id TEXT PRIMARY KEY, state TEXT NOT NULL, requested_at TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS confirmations_requested ON confirmations(requested_at, id);
`

// ensureConfirmations creates the table if it is missing (a read when it exists).
func (s *Store) ensureConfirmations(ctx context.Context) error {
	if s.confirmationsReady.Load() {
		return nil
	}
	var n int
	err := s.queryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'confirmations'").Scan(&n)
	if err == nil && n == 0 {
		err = s.write(ctx, func(tx *txn) error {
			_, err := tx.ExecContext(ctx, confirmationsSchema)
			return err
		})
	}
	return classify(err)
}

// PutConfirmation implements store.ConfirmationStore.
func (s *Store) PutConfirmation(ctx context.Context, p confirm.Pending) error {
	return s.PutConfirmationKeyed(ctx, p, nil)
}

// PutConfirmationKeyed implements store.KeyedPuts.
func (s *Store) PutConfirmationKeyed(ctx context.Context, p confirm.Pending, key *idempotency.Put) error {
	if err := s.ensureConfirmations(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.writeKeyed(ctx, key, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO confirmations(id, state, requested_at, doc) VALUES(?,?,?,?) ON CONFLICT(id) DO NOTHING",
			p.ID, string(p.State), timeText(p.RequestedAt), doc)
		if err := affectedOne(res, err, p.ID); err != nil {
			return err
		}
		return s.announceHeld(ctx, tx, p)
	})
}

// GetConfirmation implements store.ConfirmationStore.
func (s *Store) GetConfirmation(ctx context.Context, id string) (confirm.Pending, error) {
	var p confirm.Pending
	if err := s.ensureConfirmations(ctx); err != nil {
		return p, err
	}
	var doc []byte
	if err := s.queryRow(ctx, "SELECT doc FROM confirmations WHERE id = ?", id).Scan(&doc); err != nil {
		return p, classify(err)
	}
	return p, json.Unmarshal(doc, &p)
}

// ListConfirmations implements store.ConfirmationStore.
func (s *Store) ListConfirmations(ctx context.Context) ([]confirm.Pending, error) {
	if err := s.ensureConfirmations(ctx); err != nil {
		return nil, err
	}
	return queryDocs[confirm.Pending](ctx, s, "SELECT doc FROM confirmations ORDER BY requested_at, id")
}

// UpdateConfirmation implements store.ConfirmationStore: one conditional
// UPDATE, so of two writers that read the same state only one commits.
func (s *Store) UpdateConfirmation(ctx context.Context, p confirm.Pending, from confirm.State) error {
	if err := s.ensureConfirmations(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "UPDATE confirmations SET state = ?, doc = ? WHERE id = ? AND state = ?", string(p.State), doc, p.ID, string(from))
		return affectedOne(res, err, p.ID)
	})
}

var _ store.ConfirmationStore = (*Store)(nil)
