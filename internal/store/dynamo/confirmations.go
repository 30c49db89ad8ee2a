package dynamo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/store"
)

// Held calls (the server's own confirmation flow) live in the project's
// partition P#<p>#C, one item per confirmation, sorted by id (a ULID:
// request order). Every write is a one-item transaction with a
// ClientRequestToken, so a retry after a lost response succeeds instead of
// failing its own condition — which, for the claim pending → executing,
// would leave a confirmed call that nobody runs.

func (s *Store) confirmationPK() string { return s.prefix + "C" }

func (s *Store) confirmationItem(p confirm.Pending) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	it := key(s.confirmationPK(), p.ID)
	it["doc"], it["st"] = str(string(doc)), str(string(p.State))
	return it, nil
}

func decodeConfirmation(it map[string]types.AttributeValue) (confirm.Pending, error) {
	var p confirm.Pending
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &p); err != nil {
		return p, fmt.Errorf("dynamo: decode confirmation %s: %w", attrString(it, SortKey), err)
	}
	return p, nil
}

// PutConfirmation implements store.ConfirmationStore.
func (s *Store) PutConfirmation(ctx context.Context, p confirm.Pending) error {
	return s.PutConfirmationKeyed(ctx, p, nil)
}

// GetConfirmation implements store.ConfirmationStore.
func (s *Store) GetConfirmation(ctx context.Context, id string) (confirm.Pending, error) {
	it, err := s.getItem(ctx, key(s.confirmationPK(), id))
	if err != nil {
		return confirm.Pending{}, err
	}
	if it == nil {
		return confirm.Pending{}, store.ErrNotFound
	}
	return decodeConfirmation(it)
}

// ListConfirmations implements store.ConfirmationStore: one Query.
func (s *Store) ListConfirmations(ctx context.Context) ([]confirm.Pending, error) {
	var out []confirm.Pending
	err := s.query(ctx, s.partitionQuery(s.confirmationPK()), func(it map[string]types.AttributeValue) error {
		p, err := decodeConfirmation(it)
		out = append(out, p)
		return err
	})
	return out, err
}

// UpdateConfirmation implements store.ConfirmationStore: the item is
// replaced only if its stored state is still from.
func (s *Store) UpdateConfirmation(ctx context.Context, p confirm.Pending, from confirm.State) error {
	it, err := s.confirmationItem(p)
	if err != nil {
		return err
	}
	err = s.transact(ctx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
		ConditionExpression:       aws.String("#st = :from"),
		ExpressionAttributeNames:  map[string]string{"#st": "st"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":from": str(string(from))}}})
	if isCancelled(err) {
		return &store.ConditionFailed{ID: p.ID}
	}
	return err
}

var _ store.ConfirmationStore = (*Store)(nil)
