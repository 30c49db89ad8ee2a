package store

import (
	"context"
	"errors"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
)

// HookStore keeps webhook subscriptions, the outbox and the delivery log
// (docs/hooks.md). The outbox itself is written by the store inside the
// transaction of the event it announces — Commit for the spawn events,
// CreateApproval and ResolveApproval for the questions, PutConfirmation
// for held calls — with hooks.OfEvent, OfAsked, OfEnded and OfHeld: one
// delivery per live hook that hears the event. A transaction that rolls
// back therefore announces nothing, and one that commits is delivered at
// least once.
type HookStore interface {
	// PutHook creates h with its secret; ConditionFailed if its id exists.
	PutHook(ctx context.Context, h hooks.Hook) error
	// GetHook returns a hook with its secret, or ErrNotFound.
	GetHook(ctx context.Context, id string) (hooks.Hook, error)
	// ListHooks returns every hook (removed ones too), oldest first,
	// with their secrets.
	ListHooks(ctx context.Context) ([]hooks.Hook, error)
	// RemoveHook marks a hook removed at at; its pending deliveries are
	// failed. ErrNotFound for an unknown or already removed hook.
	RemoveHook(ctx context.Context, id string, at time.Time) error
	// Enqueue stores m with one pending delivery to each of hookIDs, due
	// at m.At (hooks test; events are enqueued by their own transaction).
	Enqueue(ctx context.Context, m hooks.Message, hookIDs []string) error
	// ClaimDue returns up to limit pending deliveries due at or before
	// now, with their messages, and moves each one's next attempt to
	// now+lease in the same write, so that concurrent workers rarely
	// take the same one and a worker that dies lets it fall due again.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueDelivery, error)
	// RecordAttempt appends a to the delivery log and stores d, the
	// delivery after it, in one transaction.
	RecordAttempt(ctx context.Context, a hooks.Attempt, d hooks.Delivery) error
	// Deliveries returns one page of a hook's deliveries, newest message
	// first, and of its delivery log, newest attempt first (docs/design.md,
	// "Paginated reads"). A position it cannot read is ErrInvalidPosition.
	Deliveries(ctx context.Context, hookID string, f DeliveryFilter) (DeliveryPage, error)
	// LastAttempt is the newest attempt of hook id, ok false if none.
	LastAttempt(ctx context.Context, hookID string) (hooks.Attempt, bool, error)
}

// DeliveryFilter asks a store for one page of a hook's deliveries and
// of its delivery log, each newest first. A list with a limit of 0 is
// not read.
type DeliveryFilter struct {
	// Deliveries is at most how many deliveries; DeliveriesBefore a
	// message id: only the deliveries of older messages ("": from the
	// newest).
	Deliveries       int
	DeliveriesBefore string
	// Attempts is at most how many attempts; AttemptsBefore a position
	// of the store's (DeliveryPage.Positions): only the attempts logged
	// before it ("": from the newest).
	Attempts       int
	AttemptsBefore string
}

// DeliveryPage is one page of a hook's deliveries and delivery log.
type DeliveryPage struct {
	Deliveries []hooks.Delivery
	Attempts   []hooks.Attempt
	// Positions holds the store's position of each of Attempts, for a
	// next page's AttemptsBefore. The log has no store-independent order
	// key: SQLite's is the row's sequence, DynamoDB's the item's sort key.
	Positions []string
}

// ErrInvalidPosition is a store's answer to a position it never gave
// out: a cursor made by hand.
var ErrInvalidPosition = errors.New("not a position of this listing")

// DueDelivery is a claimed delivery with what it delivers.
type DueDelivery struct {
	Delivery hooks.Delivery
	Message  hooks.Message
}
