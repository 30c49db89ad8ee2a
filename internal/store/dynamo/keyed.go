package dynamo

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/store"
)

// transactKeyed writes items, whose conditions answer for owner, in one
// TransactWriteItems with key's record after them (keyItems): the
// call's record and its response together or neither (store.KeyedPuts).
// A failed condition on the key is idempotency.ErrTaken, on any other
// item a ConditionFailed of owner.
func (s *Store) transactKeyed(ctx context.Context, owner string, key *idempotency.Put, items ...types.TransactWriteItem) error {
	keyAt := -1
	if key != nil {
		its, err := s.keyItems(key)
		if err != nil {
			return err
		}
		keyAt = len(items)
		items = append(items, its...)
	}
	err := s.transact(ctx, items...)
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return err
	}
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) != "ConditionalCheckFailed" {
			continue
		}
		if i == keyAt {
			return idempotency.ErrTaken
		}
		return &store.ConditionFailed{ID: owner}
	}
	return err
}

// PutHookKeyed implements store.KeyedPuts: the hook and the key's
// record (if key is not nil) in one transaction. With a hook cache it
// returns once every cache that could predate the hook has expired
// (SetHookCache).
func (s *Store) PutHookKeyed(ctx context.Context, h hooks.Hook, key *idempotency.Put) error {
	it, err := s.hookItem(h)
	if err != nil {
		return err
	}
	if err := s.transactKeyed(ctx, h.ID, key, putNew(s.table, it)); err != nil {
		return err
	}
	// The hook is committed: a caller gone during the wait must not see an
	// error (its retry would add a second hook), so the wait ignores it.
	return s.hookCache.written(context.WithoutCancel(ctx))
}

// PutTokenKeyed implements store.KeyedPuts: the token's two items and
// the key's record (if key is not nil) in one transaction, whose one
// ClientRequestToken makes a retry after a lost response succeed instead
// of finding its own write.
func (s *Store) PutTokenKeyed(ctx context.Context, t auth.Token, key *idempotency.Put) error {
	global, listed, err := s.tokenItems(t)
	if err != nil {
		return err
	}
	return s.transactKeyed(ctx, t.ID, key, putNew(s.table, global), putNew(s.table, listed))
}

// PutConfirmationKeyed implements store.KeyedPuts: the held call, its
// outbox and the key's record (if key is not nil) in one transaction.
func (s *Store) PutConfirmationKeyed(ctx context.Context, p confirm.Pending, key *idempotency.Put) error {
	it, err := s.confirmationItem(p)
	if err != nil {
		return err
	}
	outbox, err := s.outbox(ctx, heldMessages(p))
	if err != nil {
		return err
	}
	err = s.transactKeyed(ctx, p.ID, key, append([]types.TransactWriteItem{putNew(s.table, it)}, outbox...)...)
	return s.announced(ctx, outbox, err)
}

// CreateSessionKeyed implements store.KeyedPuts: the session and the
// key's record in one transaction (its ClientRequestToken makes a retry
// after a lost response succeed, as CreateSession's own check does).
func (s *Store) CreateSessionKeyed(ctx context.Context, ses approvals.Session, k *idempotency.Put) error {
	if k == nil {
		return s.CreateSession(ctx, ses)
	}
	doc, err := json.Marshal(ses)
	if err != nil {
		return err
	}
	it := key(s.sessionPK(), ses.ID)
	it["doc"], it["c"] = str(string(doc)), num(0)
	return s.transactKeyed(ctx, ses.ID, k, putNew(s.table, it))
}

var _ store.KeyedPuts = (*Store)(nil)
