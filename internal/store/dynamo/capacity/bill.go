package capacity

import (
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// tally counts one successful request: what the server reported, when it
// reported anything (reported), else the counter's estimate.
func tally(input, result any, st stored) (u Usage, reported bool) {
	var capacities []types.ConsumedCapacity
	est := Usage{Estimated: 1}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		in, _ := input.(*dynamodb.GetItemInput)
		capacities = one(out.ConsumedCapacity)
		if len(out.Item) > 0 {
			u.ItemsRead = 1
		}
		est.ReadUnits = readUnits(dynamo.ItemBytes(out.Item), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.QueryOutput:
		in, _ := input.(*dynamodb.QueryInput)
		capacities = one(out.ConsumedCapacity)
		u.ItemsRead = scanned(out.ScannedCount, out.Count, len(out.Items))
		est.ReadUnits = readUnits(itemsSize(out.Items), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.ScanOutput:
		in, _ := input.(*dynamodb.ScanInput)
		capacities = one(out.ConsumedCapacity)
		u.ItemsRead = scanned(out.ScannedCount, out.Count, len(out.Items))
		est.ReadUnits = readUnits(itemsSize(out.Items), consistent(in != nil && aws.ToBool(in.ConsistentRead)), 1)
	case *dynamodb.BatchGetItemOutput:
		in, _ := input.(*dynamodb.BatchGetItemInput)
		capacities = out.ConsumedCapacity
		for table, items := range out.Responses {
			strong := in != nil && aws.ToBool(in.RequestItems[table].ConsistentRead)
			for _, it := range items {
				u.ItemsRead++
				est.ReadUnits += readUnits(dynamo.ItemBytes(it), consistent(strong), 1)
			}
		}
	case *dynamodb.TransactGetItemsOutput:
		capacities = out.ConsumedCapacity
		for _, r := range out.Responses {
			if len(r.Item) > 0 {
				u.ItemsRead++
			}
			est.ReadUnits += readUnits(dynamo.ItemBytes(r.Item), 1, 2)
		}
	case *dynamodb.PutItemOutput:
		capacities = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		if in, ok := input.(*dynamodb.PutItemInput); ok {
			table := aws.ToString(in.TableName)
			est.write(writeUnits(dynamo.ItemBytes(in.Item)), st.old(table, keyOf(in.Item)), in.Item)
		}
	case *dynamodb.UpdateItemOutput:
		capacities = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		if in, ok := input.(*dynamodb.UpdateItemInput); ok {
			table := aws.ToString(in.TableName)
			est.write(writeUnits(dynamo.ItemBytes(in.Key)+dynamo.ItemBytes(in.ExpressionAttributeValues)), st.old(table, in.Key), st.new(table, in.Key))
		}
	case *dynamodb.DeleteItemOutput:
		capacities = one(out.ConsumedCapacity)
		u.ItemsWritten = 1
		if in, ok := input.(*dynamodb.DeleteItemInput); ok {
			est.write(1, st.old(aws.ToString(in.TableName), in.Key), nil)
		}
	case *dynamodb.BatchWriteItemOutput:
		capacities = out.ConsumedCapacity
		if in, ok := input.(*dynamodb.BatchWriteItemInput); ok {
			for table, reqs := range in.RequestItems {
				n := len(reqs) - len(out.UnprocessedItems[table])
				u.ItemsWritten += int64(n)
				for _, r := range reqs[:max(n, 0)] {
					switch {
					case r.PutRequest != nil:
						it := r.PutRequest.Item
						est.write(writeUnits(dynamo.ItemBytes(it)), st.old(table, keyOf(it)), it)
					case r.DeleteRequest != nil:
						est.write(1, st.old(table, r.DeleteRequest.Key), nil)
					}
				}
			}
		}
	case *dynamodb.TransactWriteItemsOutput:
		capacities = out.ConsumedCapacity
		if in, ok := input.(*dynamodb.TransactWriteItemsInput); ok {
			for _, ti := range in.TransactItems {
				switch {
				case ti.Put != nil:
					u.ItemsWritten++
					table, it := aws.ToString(ti.Put.TableName), ti.Put.Item
					est.write(2*writeUnits(dynamo.ItemBytes(it)), st.old(table, keyOf(it)), it)
				case ti.Update != nil:
					u.ItemsWritten++
					table, k := aws.ToString(ti.Update.TableName), ti.Update.Key
					est.write(2*writeUnits(dynamo.ItemBytes(k)+dynamo.ItemBytes(ti.Update.ExpressionAttributeValues)), st.old(table, k), st.new(table, k))
				case ti.Delete != nil:
					u.ItemsWritten++
					est.write(2, st.old(aws.ToString(ti.Delete.TableName), ti.Delete.Key), nil)
				case ti.ConditionCheck != nil:
					est.ReadUnits += 2
				}
			}
		}
	default:
		return u, false // control-plane calls: counted as requests only
	}
	if len(capacities) > 0 {
		for _, c := range capacities {
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
		return u, true
	}
	u.ReadUnits, u.WriteUnits, u.IndexWriteUnits, u.Estimated = est.ReadUnits, est.WriteUnits, est.IndexWriteUnits, 1
	return u, false
}

// write adds one item's write to an estimate: base units for the item
// itself, and the index writes of replacing old by new (nil: absent).
func (u *Usage) write(base float64, old, new map[string]types.AttributeValue) {
	index := indexUnits(old, new)
	u.WriteUnits += base + index
	u.IndexWriteUnits += index
}

// indexSpec is one of the table's sparse global indexes, as CreateTable
// and infra/stack define them: its key attributes, and whether it
// projects every attribute or only the keys.
type indexSpec struct {
	hash, sort string
	keysOnly   bool
}

var indexes = []indexSpec{
	{hash: dynamo.PendingKey, sort: dynamo.ExpiresAtKey},
	{hash: dynamo.PartitionKey, sort: dynamo.StatusKey, keysOnly: true},
}

// indexUnits bills the writes of the sparse indexes when old is replaced
// by new, either absent (nil), as standard writes whatever the base
// write: for each index an entry put when new enters it, deleted when old
// leaves it, both when the entry's keys change, and, when it stays under
// the same keys, one write of the larger if the index projects every
// attribute and none if it projects only the keys (nothing it holds
// changed). An item is in an index when it carries both its keys.
func indexUnits(old, new map[string]types.AttributeValue) float64 {
	units := 0.0
	for _, ix := range indexes {
		units += ix.units(old, new)
	}
	return units
}

func (ix indexSpec) units(old, new map[string]types.AttributeValue) float64 {
	was, is := ix.holds(old), ix.holds(new)
	switch {
	case was && is && ix.sameKey(old, new) && ix.keysOnly:
		return 0
	case was && is && ix.sameKey(old, new):
		return writeUnits(max(dynamo.ItemBytes(old), dynamo.ItemBytes(new)))
	case was && is:
		return ix.entryUnits(old) + ix.entryUnits(new)
	case was:
		return ix.entryUnits(old)
	case is:
		return ix.entryUnits(new)
	}
	return 0
}

// entryUnits is the write units of it's entry in the index.
func (ix indexSpec) entryUnits(it map[string]types.AttributeValue) float64 {
	if !ix.keysOnly {
		return writeUnits(dynamo.ItemBytes(it))
	}
	entry := map[string]types.AttributeValue{}
	for _, k := range []string{dynamo.PartitionKey, dynamo.SortKey, ix.hash, ix.sort} {
		if v, ok := it[k]; ok {
			entry[k] = v
		}
	}
	return writeUnits(dynamo.ItemBytes(entry))
}

func (ix indexSpec) holds(it map[string]types.AttributeValue) bool {
	return it[ix.hash] != nil && it[ix.sort] != nil
}

func (ix indexSpec) sameKey(a, b map[string]types.AttributeValue) bool {
	return dynamo.ScalarText(a[ix.hash]) == dynamo.ScalarText(b[ix.hash]) && dynamo.ScalarText(a[ix.sort]) == dynamo.ScalarText(b[ix.sort])
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

func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func readUnits(size int, factor, weight float64) float64 {
	return weight * factor * math.Max(1, math.Ceil(float64(size)/4096))
}

func itemsSize(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += dynamo.ItemBytes(it)
	}
	return n
}
