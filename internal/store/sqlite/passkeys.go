package sqlite

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/store"
)

// The passkey tables are created on first use, like the confirmations
// table: databases made before passkeys gain them without a migration.
const passkeysSchema = `
CREATE TABLE IF NOT EXISTS passkeys(id TEXT PRIMARY KEY, approver TEXT NOT NULL, created_at TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS passkeys_approver ON passkeys(approver, created_at, id);
CREATE TABLE IF NOT EXISTS passkey_ceremonies(key TEXT PRIMARY KEY, doc BLOB NOT NULL);
`

func (s *Store) ensurePasskeys(ctx context.Context) error {
	if s.passkeysReady.Load() {
		return nil
	}
	var n int
	err := s.queryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'passkey_ceremonies'").Scan(&n)
	if err == nil && n == 0 {
		err = s.write(ctx, func(tx *txn) error {
			_, err := tx.ExecContext(ctx, passkeysSchema)
			return err
		})
	}
	if err == nil {
		s.passkeysReady.Store(true)
	}
	return classify(err)
}

// PutPasskey implements store.PasskeyStore.
func (s *Store) PutPasskey(ctx context.Context, c store.PasskeyCredential) error {
	if err := s.ensurePasskeys(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO passkeys(id, approver, created_at, doc) VALUES(?,?,?,?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc WHERE passkeys.approver = excluded.approver",
			c.ID, c.Approver, timeText(c.CreatedAt), doc)
		return err
	})
}

// Passkeys implements store.PasskeyStore.
func (s *Store) Passkeys(ctx context.Context, approver string) ([]store.PasskeyCredential, error) {
	if err := s.ensurePasskeys(ctx); err != nil {
		return nil, err
	}
	return queryDocs[store.PasskeyCredential](ctx, s, "SELECT doc FROM passkeys WHERE approver = ? ORDER BY created_at, id", approver)
}

// PutPasskeyCeremony implements store.PasskeyStore.
func (s *Store) PutPasskeyCeremony(ctx context.Context, c store.PasskeyCeremony) error {
	if err := s.ensurePasskeys(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO passkey_ceremonies(key, doc) VALUES(?,?) ON CONFLICT(key) DO NOTHING", c.Key, doc)
		return affectedOne(res, err, c.Key)
	})
}

// TakePasskeyCeremony implements store.PasskeyStore: the read and the
// delete are one write transaction, so of two takers only one reads it.
func (s *Store) TakePasskeyCeremony(ctx context.Context, key string) (store.PasskeyCeremony, error) {
	var c store.PasskeyCeremony
	if err := s.ensurePasskeys(ctx); err != nil {
		return c, err
	}
	err := s.write(ctx, func(tx *txn) error {
		var doc []byte
		if err := tx.QueryRowContext(ctx, "SELECT doc FROM passkey_ceremonies WHERE key = ?", key).Scan(&doc); err != nil {
			return classify(err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM passkey_ceremonies WHERE key = ?", key); err != nil {
			return err
		}
		return json.Unmarshal(doc, &c)
	})
	return c, err
}

var _ store.PasskeyStore = (*Store)(nil)
