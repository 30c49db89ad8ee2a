package dynamo

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/store"
)

// Slack links live under P#<p>#SLK: a link code under sort key
// "code#<hash>" (with ttl, so DynamoDB deletes it some time after it
// expired), a link under "link#<team>#<user>".

var _ store.SlackLinkStore = (*Store)(nil)

func (s *Store) slackPK() string { return s.prefix + "SLK" }

// PutSlackLinkCode implements store.SlackLinkStore with one
// conditional put.
func (s *Store) PutSlackLinkCode(ctx context.Context, c store.SlackLinkCode) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	it := key(s.slackPK(), "code#"+c.Hash)
	it["doc"] = str(string(doc))
	it[TTLAttribute] = epoch(c.ExpiresAt)
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes}
	err = s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &store.ConditionFailed{ID: "code#" + c.Hash}
	}
	return err
}

// TakeSlackLinkCode implements store.SlackLinkStore: one conditional
// delete returning the old item, so that of racing takers one gets it (a
// retry of a delete whose response was lost finds nothing: the code is
// spent either way).
func (s *Store) TakeSlackLinkCode(ctx context.Context, hash string) (store.SlackLinkCode, error) {
	var c store.SlackLinkCode
	in := &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(s.slackPK(), "code#"+hash),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey},
		ReturnValues:             types.ReturnValueAllOld,
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes}
	var out *dynamodb.DeleteItemOutput
	err := s.write(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.DeleteItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return c, store.ErrNotFound
	}
	if err != nil {
		return c, err
	}
	if out == nil || len(out.Attributes) == 0 {
		return c, store.ErrNotFound
	}
	return c, json.Unmarshal([]byte(attrString(out.Attributes, "doc")), &c)
}

// PutSlackLink implements store.SlackLinkStore.
func (s *Store) PutSlackLink(ctx context.Context, l store.SlackLink) error {
	doc, err := json.Marshal(l)
	if err != nil {
		return err
	}
	it := key(s.slackPK(), "link#"+l.Team+"#"+l.User)
	it["doc"] = str(string(doc))
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
}

// PutSlackMessage implements store.SlackLinkStore.
func (s *Store) PutSlackMessage(ctx context.Context, m store.SlackMessage) error {
	doc, err := json.Marshal(m)
	if err != nil {
		return err
	}
	it := key(s.slackPK(), "msg#"+m.Channel+"#"+m.ApprovalID)
	it["doc"] = str(string(doc))
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
}

// GetSlackMessage implements store.SlackLinkStore.
func (s *Store) GetSlackMessage(ctx context.Context, channel, approvalID string) (store.SlackMessage, error) {
	var m store.SlackMessage
	it, err := s.getItem(ctx, key(s.slackPK(), "msg#"+channel+"#"+approvalID))
	if err != nil {
		return m, err
	}
	if it == nil {
		return m, store.ErrNotFound
	}
	return m, json.Unmarshal([]byte(attrString(it, "doc")), &m)
}

// GetSlackLink implements store.SlackLinkStore (strongly consistent:
// a link made a moment ago answers the next click).
func (s *Store) GetSlackLink(ctx context.Context, team, user string) (store.SlackLink, error) {
	var l store.SlackLink
	it, err := s.getItem(ctx, key(s.slackPK(), "link#"+team+"#"+user))
	if err != nil {
		return l, err
	}
	if it == nil {
		return l, store.ErrNotFound
	}
	return l, json.Unmarshal([]byte(attrString(it, "doc")), &l)
}
