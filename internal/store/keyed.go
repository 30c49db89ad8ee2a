package store

import (
	"context"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/idempotency"
)

// KeyedPuts writes a call whose whole write is one new record together
// with its Idempotency-Key's response (docs/proof.md, "Idempotency across
// crashes"): the record and key in one transaction, as Tx.Key is for the
// ledger's commits. The record's own condition (its id is new) holds or
// the put is a ConditionFailed; the key's (absent, or older than
// idempotency.Window) holds or the put fails with idempotency.ErrTaken;
// either way nothing is written. A nil key is the plain put.
type KeyedPuts interface {
	// PutHookKeyed is HookStore.PutHook with key.
	PutHookKeyed(ctx context.Context, h hooks.Hook, key *idempotency.Put) error
	// PutTokenKeyed is TokenStore.PutToken with key.
	PutTokenKeyed(ctx context.Context, t auth.Token, key *idempotency.Put) error
	// PutConfirmationKeyed is ConfirmationStore.PutConfirmation with key.
	PutConfirmationKeyed(ctx context.Context, p confirm.Pending, key *idempotency.Put) error
	// CreateSessionKeyed is ApprovalStore.CreateSession with key.
	CreateSessionKeyed(ctx context.Context, ses approvals.Session, key *idempotency.Put) error
}
