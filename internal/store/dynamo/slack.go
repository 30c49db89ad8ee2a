package dynamo

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/service"
)

// Slack links live under P#<p>#SLK: a link code under sort key
// "code#<hash>" (with ttl, so DynamoDB deletes it some time after it
// expired), a link under "link#<team>#<user>".

var _ service.SlackLinkStore = (*Store)(nil)

func (s *Store) slackPK() string { return s.prefix + "SLK" }

// PutSlackLinkCode implements service.SlackLinkStore with one
// conditional put.
func (s *Store) PutSlackLinkCode(ctx context.Context, c service.SlackLinkCode) error {
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
		return &service.ConditionFailed{ID: "code#" + c.Hash}
	}
	return err
}

// TakeSlackLinkCode implements service.SlackLinkStore: one conditional
// delete returning the old item, so that of racing takers one gets it (a
// retry of a delete whose response was lost finds nothing: the code is
// spent either way).
func (s *Store) TakeSlackLinkCode(ctx context.Context, hash string) (service.SlackLinkCode, error) {
	var c service.SlackLinkCode
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
		return c, service.ErrNotFound
	}
	if err != nil {
		return c, err
	}
	if out == nil || len(out.Attributes) == 0 {
		return c, service.ErrNotFound
	}
	return c, json.Unmarshal([]byte(attrString(out.Attributes, "doc")), &c)
}

// PutSlackLink implements service.SlackLinkStore.
func (s *Store) PutSlackLink(ctx context.Context, l service.SlackLink) error {
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

// PutSlackMessage implements service.SlackLinkStore.
func (s *Store) PutSlackMessage(ctx context.Context, m service.SlackMessage) error {
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

// GetSlackMessage implements service.SlackLinkStore.
func (s *Store) GetSlackMessage(ctx context.Context, channel, approvalID string) (service.SlackMessage, error) {
	var m service.SlackMessage
	it, err := s.getItem(ctx, key(s.slackPK(), "msg#"+channel+"#"+approvalID))
	if err != nil {
		return m, err
	}
	if it == nil {
		return m, service.ErrNotFound
	}
	return m, json.Unmarshal([]byte(attrString(it, "doc")), &m)
}

// GetSlackLink implements service.SlackLinkStore (strongly consistent:
// a link made a moment ago answers the next click).
func (s *Store) GetSlackLink(ctx context.Context, team, user string) (service.SlackLink, error) {
	var l service.SlackLink
	it, err := s.getItem(ctx, key(s.slackPK(), "link#"+team+"#"+user))
	if err != nil {
		return l, err
	}
	if it == nil {
		return l, service.ErrNotFound
	}
	return l, json.Unmarshal([]byte(attrString(it, "doc")), &l)
}
