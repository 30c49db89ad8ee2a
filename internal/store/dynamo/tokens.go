package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/store"
)

// A token is kept twice: under its global key T#<id> (so that a presented
// token leads to its project) and in its project's list P#<p>#T. Both are
// written and revoked in one transaction. Only the hash of the secret is
// stored.

type tokenDoc struct {
	auth.Token
	Hash string `json:"hash"`
}

func (s *Store) tokenItems(t auth.Token) (global, listed map[string]types.AttributeValue, err error) {
	t.Project = s.project
	doc, err := json.Marshal(tokenDoc{t, t.Hash})
	if err != nil {
		return nil, nil, err
	}
	global = key(tokenPK(t.ID), "T")
	global["doc"], global["project"] = str(string(doc)), str(s.project)
	listed = key(s.tokenListPK(), t.ID)
	listed["doc"] = str(string(doc))
	return global, listed, nil
}

func decodeToken(it map[string]types.AttributeValue) (auth.Token, error) {
	var d tokenDoc
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &d); err != nil {
		return auth.Token{}, fmt.Errorf("dynamo: decode token: %w", err)
	}
	d.Token.Hash = d.Hash
	return d.Token, nil
}

// PutToken implements store.TokenStore. A token id that exists (in any
// project) is a ConditionFailed.
func (s *Store) PutToken(ctx context.Context, t auth.Token) error {
	return s.PutTokenKeyed(ctx, t, nil)
}

// GetToken implements store.TokenStore: the global item, if it belongs
// to this project.
func (s *Store) GetToken(ctx context.Context, id string) (auth.Token, error) {
	it, err := s.readOnce(ctx, key(tokenPK(id), "T"))
	if err != nil {
		return auth.Token{}, err
	}
	if it == nil || attrString(it, "project") != s.project {
		return auth.Token{}, store.ErrNotFound
	}
	return decodeToken(it)
}

// TokenProject is the project a bearer token id belongs to, read from
// its global item whatever project s is of; "" when no token has the id.
// It only reads: a multi-project backend routes a presented token with it
// before that project's own store checks the secret.
func (s *Store) TokenProject(ctx context.Context, id string) (string, error) {
	it, err := s.readOnce(ctx, key(tokenPK(id), "T"))
	if err != nil || it == nil {
		return "", err
	}
	return attrString(it, "project"), nil
}

// ListTokens implements store.TokenStore: one Query over the project's list.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	var out []auth.Token
	err := s.query(ctx, s.partitionQuery(s.tokenListPK()), func(it map[string]types.AttributeValue) error {
		t, err := decodeToken(it)
		out = append(out, t)
		return err
	})
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
	global, listed, err := s.tokenItems(t)
	if err != nil {
		return err
	}
	exists := func(it map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}}
	}
	err = s.transact(ctx, exists(global), exists(listed))
	if isCancelled(err) {
		return store.ErrNotFound
	}
	return err
}

// transact writes items in one transaction with one ClientRequestToken.
func (s *Store) transact(ctx context.Context, items ...types.TransactWriteItem) error {
	if err := checkTransact(items, nil); err != nil {
		return err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(newRequestToken()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.TransactWriteItems(ctx, in, noSDKRetries)
		return err
	})
}

func isCancelled(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}
