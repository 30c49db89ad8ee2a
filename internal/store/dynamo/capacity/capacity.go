// Package capacity counts what a DynamoDB client's requests consume, in
// items and on-demand capacity units, for the benchmarks and tests of the
// DynamoDB store (docs/aws-cost.md). It is middleware on the client's
// stack (Counter.Register) and it is for tests only: the store does not
// know it is counted, and no program of the module imports this package
// (TestNoProgramImportsTheCounter), so no binary links it.
package capacity

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

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
// DynamoDB bills them: item sizes rounded up per item
// (writes) or per request (queries), doubled for transactions, plus the
// writes of the sparse index's entries that a write adds, moves or
// removes. What an entry costs depends on the item the write replaces, so
// before each write request the counter reads the items it names, and
// after an update the item it left, through its reader; those reads are
// not counted. A Query's units are computed from the items it returned;
// items a filter dropped are counted in ItemsRead (when the server
// reports ScannedCount) but their size is unknown.
//
// Register it on a client with
//
//	dynamodb.New(opts, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, counter.Register) })
type Counter struct {
	reader ItemReader
	// reports is set once the server has reported the capacity of a
	// write: its numbers are used, and the counter stops reading items.
	reports atomic.Bool

	mu  sync.Mutex
	ops map[string]*Usage
	err error
}

// ItemReader reads the items a write replaces: a client of the same
// server without the counter on its stack.
type ItemReader interface {
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// NewCounter returns an empty counter that reads stored items through reader.
func NewCounter(reader ItemReader) *Counter {
	return &Counter{reader: reader, ops: map[string]*Usage{}}
}

// Register adds the counter to a client's middleware stack: a step in
// Initialize that keeps the typed input and asks for consumed capacity,
// and one at the end of Finalize (after retries and signing, so once per
// attempt) that reads what a write replaces, sends the request and
// tallies the typed output.
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
			input := middleware.GetStackValue(ctx, inputKey{})
			var st stored
			writes := writesOf(input)
			if len(writes) > 0 && !c.reports.Load() {
				st.before = c.read(ctx, writes)
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if err == nil && st.before != nil {
				st.after = c.read(ctx, updates(writes))
			}
			c.record(awsmiddleware.GetOperationName(ctx), input, out.Result, err, st)
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

// Err is the first error the counter met reading the items writes
// replace. The index units it computed for those writes are a guess that
// takes the items as absent.
func (c *Counter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Counter) record(op string, input, result any, err error, st stored) {
	u := Usage{Requests: 1}
	if err != nil {
		u.Failed = 1
		if !answered(err) {
			return // the request never got an answer: nothing to bill
		}
	} else {
		t, reported := tally(input, result, st)
		if reported && writesOf(input) != nil {
			c.reports.Store(true)
		}
		u.add(t)
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
	var rc *types.ReturnConsumedCapacity
	switch in := input.(type) {
	case *dynamodb.GetItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.PutItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.UpdateItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.DeleteItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.QueryInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.ScanInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.BatchGetItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.BatchWriteItemInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.TransactWriteItemsInput:
		rc = &in.ReturnConsumedCapacity
	case *dynamodb.TransactGetItemsInput:
		rc = &in.ReturnConsumedCapacity
	}
	if rc != nil && *rc == "" {
		*rc = want
	}
}
