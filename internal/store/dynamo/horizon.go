package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// scheduledUntilKey is the item P#<p>#M / horizon and its attribute: how
// far into the future the project's timeout messages have been sent (the
// scheduled sweep's horizon, internal/scheduler/sqs).
const (
	horizonSortKey    = "horizon"
	scheduledUntilKey = "scheduled_until"
)

// ScheduledUntil is the end of the project's scheduled horizon: every
// pending spawn and question expiring by then has had its timeout message
// sent. Zero when no horizon run has stored one. The read is eventually
// consistent (half a read unit): a stale value is an earlier one, which
// only widens the next window (messages sent twice, never a gap).
func (s *Store) ScheduledUntil(ctx context.Context) (time.Time, error) {
	it, err := s.readItem(ctx, key(s.metaPK(), horizonSortKey), false)
	if err != nil || it == nil {
		return time.Time{}, err
	}
	v := attrString(it, scheduledUntilKey)
	t, err := time.Parse(timeKey, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("dynamo: project %s: stored %s %q: %w", s.project, scheduledUntilKey, v, err)
	}
	return t, nil
}

// AdvanceScheduledUntil moves the project's horizon forward to t: one
// conditional UpdateItem, applied only if the stored value is absent or
// earlier, so that concurrent runs never move it back. It reports whether
// it moved; a later value stored by another run is not an error.
func (s *Store) AdvanceScheduledUntil(ctx context.Context, t time.Time) (bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(s.metaPK(), horizonSortKey),
		UpdateExpression:         aws.String("SET #su = :t"),
		ConditionExpression:      aws.String("attribute_not_exists(#su) OR #su < :t"),
		ExpressionAttributeNames: map[string]string{"#su": scheduledUntilKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": str(timeText(t)),
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// Stored at or beyond t already (by another run, or by an earlier
		// attempt of this one whose response was lost).
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
