package sqlite

import (
	"context"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/store"
)

// writeKeyed runs write in one transaction with key's record (putKey),
// after write's own conditions held: the record and the call's response
// are committed together or not at all (store.KeyedPuts).
func (s *Store) writeKeyed(ctx context.Context, key *idempotency.Put, write func(tx *txn) error) error {
	err := s.write(ctx, func(tx *txn) error {
		if err := write(tx); err != nil || key == nil {
			return err
		}
		return s.putKey(ctx, tx, key)
	})
	if err == nil && key != nil {
		idempotencySchemaReady.Store(s, struct{}{})
	}
	return err
}

var _ store.KeyedPuts = (*Store)(nil)
