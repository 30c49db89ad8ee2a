package dynamo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store"
)

// Passkeys live in the project's partition P#<p>#PK#<approver>, one item
// per credential sorted by creation time and id; open ceremonies in
// P#<p>#PKC, one item per challenge. Taking a ceremony is one DeleteItem
// returning the old item: only the call whose delete removed it gets it
// (a retry after a lost response gets nothing, so a challenge is never
// spent twice — at worst not at all, which refuses).

func (s *Store) passkeyPK(approver string) string { return s.prefix + "PK#" + approver }
func (s *Store) ceremonyPK() string               { return s.prefix + "PKC" }

func passkeySK(c store.PasskeyCredential) string {
	return c.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + c.ID
}

// PutPasskey implements store.PasskeyStore: a credential keeps its
// first creation time, so a sign-count update replaces the same item.
func (s *Store) PutPasskey(ctx context.Context, c store.PasskeyCredential) error {
	existing, err := s.Passkeys(ctx, c.Approver)
	if err != nil {
		return err
	}
	for _, e := range existing {
		if e.ID == c.ID {
			c.CreatedAt = e.CreatedAt
		}
	}
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	it := key(s.passkeyPK(c.Approver), passkeySK(c))
	it["doc"] = str(string(doc))
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
}

// Passkeys implements store.PasskeyStore: one Query.
func (s *Store) Passkeys(ctx context.Context, approver string) ([]store.PasskeyCredential, error) {
	var out []store.PasskeyCredential
	err := s.query(ctx, s.partitionQuery(s.passkeyPK(approver)), func(it map[string]types.AttributeValue) error {
		var c store.PasskeyCredential
		if err := json.Unmarshal([]byte(attrString(it, "doc")), &c); err != nil {
			return fmt.Errorf("dynamo: decode passkey %s: %w", attrString(it, SortKey), err)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// PutPasskeyCeremony implements store.PasskeyStore.
func (s *Store) PutPasskeyCeremony(ctx context.Context, c store.PasskeyCeremony) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	it := key(s.ceremonyPK(), c.Key)
	it["doc"] = str(string(doc))
	err = s.transact(ctx, putNew(s.table, it))
	if isCancelled(err) {
		return &store.ConditionFailed{ID: c.Key}
	}
	return err
}

// TakePasskeyCeremony implements store.PasskeyStore.
func (s *Store) TakePasskeyCeremony(ctx context.Context, k string) (store.PasskeyCeremony, error) {
	var c store.PasskeyCeremony
	in := &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(s.ceremonyPK(), k), ReturnValues: types.ReturnValueAllOld}
	var old map[string]types.AttributeValue
	err := s.write(ctx, func(ctx context.Context) error {
		out, err := s.client.DeleteItem(ctx, in, noSDKRetries)
		if err == nil {
			old = out.Attributes
		}
		return err
	})
	if err != nil {
		return c, err
	}
	if len(old) == 0 {
		return c, store.ErrNotFound
	}
	if err := json.Unmarshal([]byte(attrString(old, "doc")), &c); err != nil {
		return c, fmt.Errorf("dynamo: decode passkey ceremony %s: %w", k, err)
	}
	return c, nil
}

var _ store.PasskeyStore = (*Store)(nil)
