package sqlite

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/json"
	"github.com/dont-cli/dont/internal/idempotency"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/store"
)

type tokenDoc struct {
	auth.Token
	Hash string `json:"hash"`
}

// PutToken implements store.TokenStore.
func (s *Store) PutToken(ctx context.Context, t auth.Token) error {
	return s.PutTokenKeyed(ctx, t, nil)
}

// PutTokenKeyed implements store.KeyedPuts.
func (s *Store) PutTokenKeyed(ctx context.Context, t auth.Token, key *idempotency.Put) error {
	doc, err := json.Marshal(tokenDoc{t, t.Hash})
	if err != nil {
		return err
	}
	return s.writeKeyed(ctx, key, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO tokens(id, doc, hash) VALUES(?,?,?) ON CONFLICT(id) DO NOTHING", t.ID, doc, t.Hash)
		return affectedOne(res, err, t.ID)
	})
}

// GetToken implements store.TokenStore.
func (s *Store) GetToken(ctx context.Context, id string) (auth.Token, error) {
	var doc []byte
	if err := s.queryRow(ctx, "SELECT doc FROM tokens WHERE id = ?", id).Scan(&doc); err != nil {
		return auth.Token{}, classify(err)
	}
	var d tokenDoc
	err := json.Unmarshal(doc, &d)
	d.Token.Hash = d.Hash
	return d.Token, err
}

// ListTokens implements store.TokenStore.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	docs, err := queryDocs[tokenDoc](ctx, s, "SELECT doc FROM tokens ORDER BY id")
	out := make([]auth.Token, len(docs))
	for i, d := range docs {
		out[i] = d.Token
		out[i].Hash = d.Hash
	}
	return out, err
}

// RevokeToken implements store.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	t, err := s.GetToken(ctx, id)
	if err != nil {
		return err
	}
	if t.RevokedAt != nil {
		return nil
	}
	t.RevokedAt = &at
	doc, err := json.Marshal(tokenDoc{t, t.Hash})
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "UPDATE tokens SET doc = ? WHERE id = ?", doc, id)
		return err
	})
}

// ProjectSecret implements store.TokenStore: 256 random bits made once
// per project and kept in the database. The database is one project, run
// by its owner (the CLI, dont serve), so the secret is made on first use.
func (s *Store) ProjectSecret(ctx context.Context) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if s.secret != nil {
		return s.secret, nil
	}
	var v []byte
	err := s.queryRow(ctx, "SELECT value FROM meta WHERE key = 'callback_secret'").Scan(&v)
	if err == sql.ErrNoRows {
		fresh := make([]byte, 32)
		if _, err := crand.Read(fresh); err != nil {
			return nil, err
		}
		if err := s.write(ctx, func(tx *txn) error {
			_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO meta(key, value) VALUES('callback_secret', ?)", fresh)
			return err
		}); err != nil {
			return nil, err
		}
		err = s.queryRow(ctx, "SELECT value FROM meta WHERE key = 'callback_secret'").Scan(&v)
	}
	if err != nil {
		return nil, classify(err)
	}
	s.secret = v
	return v, nil
}

// CreateProjectSecret implements store.TokenStore: ProjectSecret.
func (s *Store) CreateProjectSecret(ctx context.Context) ([]byte, error) {
	return s.ProjectSecret(ctx)
}

var _ store.TokenStore = (*Store)(nil)
