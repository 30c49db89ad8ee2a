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
		if err := s.putKey(ctx, tx, key); err != nil {
			return err
		}
		if s.Hooks.BeforeCommit != nil {
			return s.Hooks.BeforeCommit(ctx) // a keyed write is a commit too
		}
		return nil
	})
	if err == nil && key != nil {
		idempotencySchemaReady.Store(s, struct{}{})
	}
	return err
}

var _ store.KeyedPuts = (*Store)(nil)

// KeepsAnyBodyWithItsCommit marks the store as writing a keyed response
// of any size in its call's commit (idempotency.UnboundedBodies): a row
// has no limit that matters here, so a response over idempotency.MaxBody
// is not left to be remembered after the commit.
func (*Store) KeepsAnyBodyWithItsCommit() {}
