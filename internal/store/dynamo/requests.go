package dynamo

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/store"
)

// seekAfter makes the partition query q start after the sort key after
// (none: from the start).
func seekAfter(q *dynamodb.QueryInput, after string) {
	if after == "" {
		return
	}
	q.KeyConditionExpression = aws.String(aws.ToString(q.KeyConditionExpression) + " AND #sk > :after")
	q.ExpressionAttributeNames["#sk"] = SortKey
	q.ExpressionAttributeValues[":after"] = str(after)
}

// queryPageUpTo reads q, from its ExclusiveStartKey on, until at least
// limit items were evaluated or the results end, and decodes the items
// that pass its filter. DynamoDB's Limit counts the items a page
// evaluates before its filter, and a page also stops at 1 MB, so fewer
// may come back: an unfiltered query asks for what is missing, a
// filtered one reads whole pages (up to 1 MB each, without a Limit) until
// limit items passed. It may return more than limit; the caller keeps
// the first. more says whether results remain; q then starts after the
// items read.
func queryPageUpTo[T any](ctx context.Context, s *Store, q *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) (out []T, more bool, err error) {
	filtered := q.FilterExpression != nil
	for evaluated := 0; evaluated < limit && (!filtered || len(out) < limit); {
		q.Limit = nil
		if !filtered {
			q.Limit = aws.Int32(int32(min(limit-evaluated, 1000)))
		}
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return out, false, err
		}
		evaluated += int(page.ScannedCount)
		for _, it := range page.Items {
			v, err := decode(it)
			if err != nil {
				return out, false, err
			}
			out = append(out, v)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, false, nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
		if filtered {
			evaluated = 0 // only what passed counts
		} else if page.ScannedCount == 0 {
			break // a page cut short before any item; read on next time
		}
	}
	return out, true, nil
}

// getItem reads one item with a strongly consistent read; nil if absent.
func (s *Store) getItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	return s.readItem(ctx, k, true)
}

// readItem reads one item, strongly consistent or not; nil if absent. An
// empty key names no item (DynamoDB refuses it with a ValidationException,
// e.g. the entity of Events(""), the entity-less events): nil, unread.
func (s *Store) readItem(ctx context.Context, k map[string]types.AttributeValue, consistent bool) (map[string]types.AttributeValue, error) {
	if attrString(k, PartitionKey) == "" || attrString(k, SortKey) == "" {
		return nil, nil
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: k, ConsistentRead: aws.Bool(consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	var out *dynamodb.GetItemOutput
	err := s.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.GetItem(ctx, in, noSDKRetries)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// readOnce is getItem for the items one request reads repeatedly — a
// token, an entity, a spawn — while it authenticates, checks a callback's
// powers and applies it: within one request (see readmemo) such an item
// is read once, until the store's next write. Polls (an approval's
// verdict, frames) use getItem: they wait for other requests' writes.
func (s *Store) readOnce(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	memo := readmemo.From(ctx)
	name := s.table + "\x00" + attrString(k, PartitionKey) + "\x00" + attrString(k, SortKey)
	if v, ok := memo.Get(name); ok {
		return v.(map[string]types.AttributeValue), nil
	}
	it, err := s.getItem(ctx, k)
	if err == nil {
		memo.Put(name, it)
	}
	return it, err
}

// write runs one write request (with retries): the request's remembered
// reads are forgotten, whatever the outcome.
func (s *Store) write(ctx context.Context, call func(context.Context) error) error {
	defer readmemo.From(ctx).Forget()
	return s.do(ctx, call)
}

// partitionQuery reads a whole partition, strongly consistent, in sort
// key order.
func (s *Store) partitionQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
}

// query runs q page by page and hands each item to fn.
func (s *Store) query(ctx context.Context, q *dynamodb.QueryInput, fn func(map[string]types.AttributeValue) error) error {
	for {
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// whereEqual filters q on attribute = value for each (attribute, value)
// pair whose value is not empty, joined with AND.
func whereEqual(q *dynamodb.QueryInput, pairs ...string) {
	var filters []string
	for i := 0; i+1 < len(pairs); i += 2 {
		attr, value := pairs[i], pairs[i+1]
		if value == "" {
			continue
		}
		filters = append(filters, "#"+attr+" = :"+attr)
		q.ExpressionAttributeNames["#"+attr] = attr
		q.ExpressionAttributeValues[":"+attr] = str(value)
	}
	if len(filters) > 0 {
		q.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
}

// queryUpTo pages through q until it has decoded limit items or the
// results end.
func queryUpTo[T any](ctx context.Context, s *Store, q *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	var out []T
	for {
		q.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return out, err
		}
		for _, it := range page.Items {
			v, err := decode(it)
			if err != nil {
				return out, err
			}
			out = append(out, v)
		}
		if len(out) >= limit || len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (s *Store) queryPage(ctx context.Context, q *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	var out *dynamodb.QueryOutput
	err := s.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.Query(ctx, q, noSDKRetries)
		return err
	})
	return out, err
}

// batchGet reads keys with strongly consistent reads, 100 per request,
// retrying unprocessed keys. Missing items are skipped.
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(keys) > 0 {
		n := min(len(keys), 100)
		pending := keys[:n]
		keys = keys[n:]
		for attempt := 0; len(pending) > 0; attempt++ {
			in := &dynamodb.BatchGetItemInput{
				RequestItems:           map[string]types.KeysAndAttributes{s.table: {Keys: pending, ConsistentRead: aws.Bool(true)}},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
			}
			var res *dynamodb.BatchGetItemOutput
			err := s.do(ctx, func(ctx context.Context) error {
				var err error
				res, err = s.client.BatchGetItem(ctx, in, noSDKRetries)
				return err
			})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[s.table]...)
			pending = res.UnprocessedKeys[s.table].Keys
			if len(pending) > 0 {
				if attempt+1 >= s.retry.attempts {
					return nil, errors.New("dynamo: BatchGetItem left keys unprocessed after every retry")
				}
				if err := s.retry.sleep(ctx, attempt); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func putNew(table string, it map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}}
}

func isCondition(err error) bool {
	var c *store.ConditionFailed
	return errors.As(err, &c)
}
