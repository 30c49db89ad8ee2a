package capacity

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// write is one item a write request puts, updates or deletes.
type write struct {
	table  string
	key    map[string]types.AttributeValue
	update bool
}

// writesOf lists the items a write request names; nil for other requests.
// A transaction's condition checks write nothing.
func writesOf(input any) []write {
	var ws []write
	switch in := input.(type) {
	case *dynamodb.PutItemInput:
		ws = append(ws, write{table: aws.ToString(in.TableName), key: keyOf(in.Item)})
	case *dynamodb.UpdateItemInput:
		ws = append(ws, write{table: aws.ToString(in.TableName), key: in.Key, update: true})
	case *dynamodb.DeleteItemInput:
		ws = append(ws, write{table: aws.ToString(in.TableName), key: in.Key})
	case *dynamodb.BatchWriteItemInput:
		for table, reqs := range in.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					ws = append(ws, write{table: table, key: keyOf(r.PutRequest.Item)})
				case r.DeleteRequest != nil:
					ws = append(ws, write{table: table, key: r.DeleteRequest.Key})
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, ti := range in.TransactItems {
			switch {
			case ti.Put != nil:
				ws = append(ws, write{table: aws.ToString(ti.Put.TableName), key: keyOf(ti.Put.Item)})
			case ti.Update != nil:
				ws = append(ws, write{table: aws.ToString(ti.Update.TableName), key: ti.Update.Key, update: true})
			case ti.Delete != nil:
				ws = append(ws, write{table: aws.ToString(ti.Delete.TableName), key: ti.Delete.Key})
			}
		}
	}
	return ws
}

// updates are the writes that change an item in place: what they leave
// is known only by reading it afterwards.
func updates(ws []write) []write {
	var out []write
	for _, w := range ws {
		if w.update {
			out = append(out, w)
		}
	}
	return out
}

// stored is what the items a write request names held: before it, and,
// for updates, after it succeeded; by itemID. An absent item is missing
// from the map.
type stored struct {
	before, after map[string]map[string]types.AttributeValue
}

func (s stored) old(table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	return s.before[itemID(table, key)]
}

func (s stored) new(table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	return s.after[itemID(table, key)]
}

// maxBatchGet is DynamoDB's limit of keys per BatchGetItem.
const maxBatchGet = 100

// read reads the items ws name, strongly consistent, through the
// counter's reader. A failure is kept for Err; what was read so far is
// returned.
func (c *Counter) read(ctx context.Context, ws []write) map[string]map[string]types.AttributeValue {
	found := map[string]map[string]types.AttributeValue{}
	if c.reader == nil {
		c.fail(errors.New("capacity: the counter has no ItemReader"))
		return found
	}
	// The reads are the reader's requests, not the counted one's.
	ctx = middleware.ClearStackValues(ctx)
	seen := map[string]bool{}
	var pending []write
	for _, w := range ws {
		if id := itemID(w.table, w.key); !seen[id] {
			seen[id] = true
			pending = append(pending, w)
		}
	}
	for len(pending) > 0 {
		n := min(len(pending), maxBatchGet)
		req := map[string]types.KeysAndAttributes{}
		for _, w := range pending[:n] {
			ka := req[w.table]
			ka.Keys = append(ka.Keys, w.key)
			ka.ConsistentRead = aws.Bool(true)
			req[w.table] = ka
		}
		pending = pending[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 10 {
				c.fail(errors.New("capacity: BatchGetItem left keys unprocessed on 10 retries"))
				return found
			}
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
			}
			out, err := c.reader.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				c.fail(err)
				return found
			}
			for table, items := range out.Responses {
				for _, it := range items {
					found[itemID(table, keyOf(it))] = it
				}
			}
			req = out.UnprocessedKeys
		}
	}
	return found
}

func (c *Counter) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// keyOf is an item's primary key, in the store's key schema.
func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{dynamo.PartitionKey: item[dynamo.PartitionKey], dynamo.SortKey: item[dynamo.SortKey]}
}

// itemID names the item of key in table.
func itemID(table string, key map[string]types.AttributeValue) string {
	return table + "\x00" + dynamo.ScalarText(key[dynamo.PartitionKey]) + "\x00" + dynamo.ScalarText(key[dynamo.SortKey])
}
