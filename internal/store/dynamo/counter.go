package dynamo

import (
	"context"
	"errors"
	"math"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Usage is what the requests of one operation consumed. Units are
// on-demand request units: WriteUnits are write request units (1 per KB
// written, 2 per KB in a transaction, plus index writes), ReadUnits read
// request units (1 per 4 KB read strongly consistent, ½ eventually
// consistent, 2 per 4 KB in a transaction).
type Usage struct {
	// Requests counts attempts the server answered, Failed those it
	// answered with an error (throttled, condition failed, cancelled).
	Requests, Failed int64
	// ItemsRead counts items the server evaluated (a Query's or Scan's
	// ScannedCount, the items a GetItem or BatchGetItem returned);
	// ItemsWritten the items a successful write request put, updated or
	// deleted.
	ItemsRead, ItemsWritten int64
	ReadUnits, WriteUnits   float64
	// IndexWriteUnits is the part of WriteUnits spent on secondary indexes.
	IndexWriteUnits float64
	// Estimated counts successful requests whose units the counter computed
	// itself because the server reported no ConsumedCapacity.
	Estimated int64
}

func (u *Usage) add(v Usage) {
	u.Requests += v.Requests
	u.Failed += v.Failed
	u.ItemsRead += v.ItemsRead
	u.ItemsWritten += v.ItemsWritten
	u.ReadUnits += v.ReadUnits
	u.WriteUnits += v.WriteUnits
	u.IndexWriteUnits += v.IndexWriteUnits
	u.Estimated += v.Estimated
}

// Counter is a DynamoDB client middleware that tallies items and capacity
// units per operation. It asks for ReturnConsumedCapacity INDEXES and uses
// what the server reports; when a server reports nothing (local
// stand-ins) it computes the units from the request and response the way
// DynamoDB bills them: item sizes rounded up per item (writes) or per
// request (queries), doubled for transactions, plus one index write per
// item that enters, changes in or leaves the sparse index. A Query's units
// are computed from the items it returned; items a filter dropped are
// counted in ItemsRead (when the server reports ScannedCount) but their
// size is unknown.
//
// Register it on a client with
//
//	dynamodb.New(opts, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, counter.Register) })
type Counter struct {
	mu  sync.Mutex
	ops map[string]*Usage
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{ops: map[string]*Usage{}} }

// Register adds the counter to a client's middleware stack: a step in
// Initialize that keeps the typed input and asks for consumed capacity,
// and one at the end of Finalize (after retries and signing, so once per
// attempt) that tallies the typed output.
func (c *Counter) Register(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("dont.CapacityInput",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			askForCapacity(in.Parameters)
			return next.HandleInitialize(middleware.WithStackValue(ctx, inputKey{}, in.Parameters), in)
		}), middleware.After); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("dont.CapacityCounter",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			c.record(ctx, awsmiddleware.GetOperationName(ctx), middleware.GetStackValue(ctx, inputKey{}), out.Result, err)
			return out, md, err
		}), middleware.After)
}

type inputKey struct{}

// Usage returns a copy of the tallies, by operation name.
func (c *Counter) Usage() map[string]Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Usage, len(c.ops))
	for op, u := range c.ops {
		out[op] = *u
	}
	return out
}

// Total sums every operation's tallies.
func (c *Counter) Total() Usage {
	var t Usage
	for _, u := range c.Usage() {
		t.add(u)
	}
	return t
}

// Reset forgets every tally.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.ops = map[string]*Usage{}
	c.mu.Unlock()
}

func (c *Counter) record(ctx context.Context, op string, input, result any, err error) {
	u := Usage{Requests: 1}
	if err != nil {
		u.Failed = 1
		if !answered(err) {
			return // the request never got an answer: nothing to bill
		}
	} else {
		u.add(tally(ctx, input, result))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.ops[op]
	if t == nil {
		t = &Usage{}
		c.ops[op] = t
	}
	t.add(u)
}

// answered reports whether err came from the server rather than from the
// transport or the context.
func answered(err error) bool {
	var resp interface{ HTTPStatusCode() int }
	return errors.As(err, &resp) && resp.HTTPStatusCode() > 0
}

// askForCapacity sets ReturnConsumedCapacity INDEXES where the caller left it unset.
func askForCapacity(input any) {
	const want = types.ReturnConsumedCapacityIndexes
	switch in := input.(type) {
	case *dynamodb.GetItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.PutItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.UpdateItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.DeleteItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.QueryInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.ScanInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.BatchGetItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.BatchWriteItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.TransactWriteItemsInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	case *dynamodb.TransactGetItemsInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = want
		}
	}
}

// tally counts one successful request.
func tally(ctx context.Context, input, result any) Usage {
	var u Usage
	var reported []types.ConsumedCapacity
	est := Usage{Estimated: 1}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		in, _ := input.(*dynamodb.GetItemInput)
		reported = one(out.ConsumedCapacity)
		if len(out.Item) > 0 {
			u.ItemsRead = 1
		}
		est.ReadUnits = readUnits(itemSize(out.Item), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.QueryOutput:
		in, _ := input.(*dynamodb.QueryInput)
		reported = one(out.ConsumedCapacity)
		u.ItemsRead = scanned(out.ScannedCount, out.Count, len(out.Items))
		est.ReadUnits = readUnits(itemsSize(out.Items), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.ScanOutput:
		in, _ := input.(*dynamodb.ScanInput)
		reported = one(out.ConsumedCapacity)
		u.ItemsRead = scanned(out.ScannedCount, out.Count, len(out.Items))
		est.ReadUnits = readUnits(itemsSize(out.Items), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.BatchGetItemOutput:
		in, _ := input.(*dynamodb.BatchGetItemInput)
		reported = out.ConsumedCapacity
		for table, items := range out.Responses {
			strong := in != nil && aws.ToBool(in.RequestItems[table].ConsistentRead)
			for _, it := range items {
				u.ItemsRead++
				est.ReadUnits += readUnits(itemSize(it), consistent(strong), 1)
			}
		}
	case *dynamodb.TransactGetItemsOutput:
		reported = out.ConsumedCapacity
		for _, r := range out.Responses {
			if len(r.Item) > 0 {
				u.ItemsRead++
			}
			est.ReadUnits += readUnits(itemSize(r.Item), 1, 2)
		}
	case *dynamodb.PutItemOutput:
		reported = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		if in, ok := input.(*dynamodb.PutItemInput); ok {
			est.WriteUnits, est.IndexWriteUnits = putUnits(in.Item, 1)
		}
	case *dynamodb.UpdateItemOutput:
		reported = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		if in, ok := input.(*dynamodb.UpdateItemInput); ok {
			est.WriteUnits = writeUnits(itemSize(in.Key) + itemSize(in.ExpressionAttributeValues))
		}
	case *dynamodb.DeleteItemOutput:
		reported = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		est.WriteUnits = 1
	case *dynamodb.BatchWriteItemOutput:
		reported = out.ConsumedCapacity
		if in, ok := input.(*dynamodb.BatchWriteItemInput); ok {
			for table, reqs := range in.RequestItems {
				n := len(reqs) - len(out.UnprocessedItems[table])
				u.ItemsWritten += int64(n)
				for _, r := range reqs[:max(n, 0)] {
					if r.PutRequest != nil {
						w, i := putUnits(r.PutRequest.Item, 1)
						est.WriteUnits += w
						est.IndexWriteUnits += i
					} else {
						est.WriteUnits++
					}
				}
			}
		}
	case *dynamodb.TransactWriteItemsOutput:
		reported = out.ConsumedCapacity
		if in, ok := input.(*dynamodb.TransactWriteItemsInput); ok {
			for _, ti := range in.TransactItems {
				switch {
				case ti.Put != nil:
					u.ItemsWritten++
					w, i := putUnits(ti.Put.Item, 2)
					est.WriteUnits += w
					est.IndexWriteUnits += i
				case ti.Update != nil:
					u.ItemsWritten++
					est.WriteUnits += 2 * writeUnits(itemSize(ti.Update.Key)+itemSize(ti.Update.ExpressionAttributeValues))
				case ti.Delete != nil:
					u.ItemsWritten++
					est.WriteUnits += 2
				case ti.ConditionCheck != nil:
					est.ReadUnits += 2
				}
			}
			// Index entries this request removes or rewrites, as the store declared.
			idx := indexWrites(ctx)
			est.WriteUnits += idx
			est.IndexWriteUnits += idx
		}
	default:
		return u // control-plane calls: counted as requests only
	}
	if len(reported) > 0 {
		for _, c := range reported {
			r, w := aws.ToFloat64(c.ReadCapacityUnits), aws.ToFloat64(c.WriteCapacityUnits)
			if r == 0 && w == 0 {
				// Some servers fill in only the total; it is of the request's kind.
				if est.WriteUnits > 0 {
					w = aws.ToFloat64(c.CapacityUnits)
				} else {
					r = aws.ToFloat64(c.CapacityUnits)
				}
			}
			u.ReadUnits += r
			u.WriteUnits += w
			for _, g := range c.GlobalSecondaryIndexes {
				if w := aws.ToFloat64(g.WriteCapacityUnits); w > 0 {
					u.IndexWriteUnits += w
				} else if est.WriteUnits > 0 {
					u.IndexWriteUnits += aws.ToFloat64(g.CapacityUnits)
				}
			}
		}
		return u
	}
	u.ReadUnits, u.WriteUnits, u.IndexWriteUnits, u.Estimated = est.ReadUnits, est.WriteUnits, est.IndexWriteUnits, 1
	return u
}

// scanned is the number of items a Query or Scan evaluated. Servers that
// leave ScannedCount out (minidyn's base-table queries) get the number
// they returned: a lower bound when a filter dropped some.
func scanned(scannedCount, count int32, items int) int64 {
	if scannedCount > 0 {
		return int64(scannedCount)
	}
	return int64(max(int(count), items))
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

func consistent(strong bool) float64 {
	if strong {
		return 1
	}
	return 0.5
}

// putUnits bills writing item: per started KB, times weight (2 in a
// transaction), plus a standard write of the index entry if the item
// carries both index keys (the index projects every attribute).
func putUnits(item map[string]types.AttributeValue, weight float64) (units, index float64) {
	size := itemSize(item)
	units = weight * writeUnits(size)
	if item[PendingKey] != nil && item[ExpiresAtKey] != nil {
		index = writeUnits(size)
	}
	return units + index, index
}

func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func readUnits(size int, factor, weight float64) float64 {
	return weight * factor * math.Max(1, math.Ceil(float64(size)/4096))
}

func itemsSize(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += itemSize(it)
	}
	return n
}

// itemSize is an item's size as DynamoDB bills it: attribute names plus values.
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += (len(s)+1)/2 + 1
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

type indexWritesKey struct{}

// withIndexWrites tells the counter how many index write units a
// transaction spends that its request does not show (entries it removes).
func withIndexWrites(ctx context.Context, units float64) context.Context {
	if units == 0 {
		return ctx
	}
	return context.WithValue(ctx, indexWritesKey{}, units)
}

func indexWrites(ctx context.Context) float64 {
	v, _ := ctx.Value(indexWritesKey{}).(float64)
	return v
}
