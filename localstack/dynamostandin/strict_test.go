package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// blob is a string attribute of n bytes.
func blob(n int) types.AttributeValue { return s(strings.Repeat("x", n)) }

// sized is an item of exactly size bytes as DynamoDB counts them.
func sized(pk, sk string, size int) map[string]types.AttributeValue {
	fixed := len("pk") + len(pk) + len("sk") + len(sk) + len("data")
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk), "data": blob(size - fixed)}
}

func mustMiss(t *testing.T, ctx context.Context, ddb *dynamodb.Client, pk, sk string) {
	t.Helper()
	out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) != 0 {
		t.Fatalf("%s/%s: want no item, got %d attributes, %v", pk, sk, len(out.Item), err)
	}
}

func validationMessage(t *testing.T, err error) string {
	t.Helper()
	if !isCode(err, "ValidationException") {
		t.Fatalf("want a ValidationException, got %v", err)
	}
	return err.Error()
}

func TestAnItemOver400KBIsAValidationError(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("p", "fits", maxItemSize)}); err != nil {
		t.Fatalf("an item of exactly 400 KB: %v", err)
	}
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("p", "over", maxItemSize+1)})
	if msg := validationMessage(t, err); !strings.Contains(msg, "Item size has exceeded the maximum allowed size") {
		t.Fatalf("message: %s", msg)
	}
	mustMiss(t, ctx, ddb, "p", "over")
	// Attribute names count: the same value under a longer name is over.
	it := sized("p", "name", maxItemSize)
	it["d"] = it["data"]
	delete(it, "data")
	it["a_much_longer_name"] = s("")
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); !isCode(err, "ValidationException") {
		t.Fatalf("names are part of the size: %v", err)
	}
	// In a batch and in a transaction too.
	_, err = ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
		{PutRequest: &types.PutRequest{Item: sized("p", "batch-small", 100)}},
		{PutRequest: &types.PutRequest{Item: sized("p", "batch-over", maxItemSize+1)}},
	}}})
	validationMessage(t, err)
	mustMiss(t, ctx, ddb, "p", "batch-small")
	_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: sized("p", "tx-small", 100)}},
		{Put: &types.Put{TableName: aws.String(table), Item: sized("p", "tx-over", maxItemSize+1)}},
	}})
	validationMessage(t, err)
	mustMiss(t, ctx, ddb, "p", "tx-small")
}

func TestAnUpdateBeyond400KBIsUndone(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("p", "grow", 300*1024)}); err != nil {
		t.Fatal(err)
	}
	grow := func() *dynamodb.UpdateItemInput {
		return &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("p", "grow"),
			UpdateExpression: aws.String("SET more = :b"), ExpressionAttributeValues: map[string]types.AttributeValue{":b": blob(200 * 1024)}}
	}
	_, err := ddb.UpdateItem(ctx, grow())
	if msg := validationMessage(t, err); !strings.Contains(msg, "Item size to update has exceeded the maximum allowed size") {
		t.Fatalf("message: %s", msg)
	}
	out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("p", "grow"), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item["more"] != nil || itemSizeOf(t, out.Item) != 300*1024 {
		t.Fatalf("after a refused update: %d attributes, %v", len(out.Item), err)
	}
	// In a transaction: cancelled with ValidationError on that item, the
	// other items unwritten.
	_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: sized("p", "tx-other", 100)}},
		{Update: &types.Update{TableName: aws.String(table), Key: key("p", "grow"), UpdateExpression: grow().UpdateExpression, ExpressionAttributeValues: grow().ExpressionAttributeValues}},
	}})
	if got := reasonCodes(t, err); fmt.Sprint(got) != "[None ValidationError]" {
		t.Fatalf("reasons %v", got)
	}
	mustMiss(t, ctx, ddb, "p", "tx-other")
}

func itemSizeOf(t *testing.T, it map[string]types.AttributeValue) int {
	t.Helper()
	n := 0
	for k, v := range it {
		n += len(k) + len(v.(*types.AttributeValueMemberS).Value)
	}
	return n
}

func TestTransactWriteItemsOver100ItemsOr4MBIsAValidationError(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	items := func(n, size int) []types.TransactWriteItem {
		var out []types.TransactWriteItem
		for i := range n {
			out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: sized("p", fmt.Sprintf("i%03d", i), size)}})
		}
		return out
	}
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items(100, 100)}); err != nil {
		t.Fatalf("100 items: %v", err)
	}
	_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items(101, 100)[1:]})
	if err != nil {
		t.Fatalf("100 items again: %v", err)
	}
	ddb2 := client(t, New("us-east-1"))
	createTable(t, ctx, ddb2)
	_, err = ddb2.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items(101, 100)})
	if msg := validationMessage(t, err); !strings.Contains(msg, "at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100") {
		t.Fatalf("message: %s", msg)
	}
	mustMiss(t, ctx, ddb2, "p", "i000")
	// 11 items of 390 KB: each fits, together they exceed 4 MB.
	_, err = ddb2.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items(11, 390*1024)})
	if msg := validationMessage(t, err); !strings.Contains(msg, "Transaction request cannot be larger than 4 MB") {
		t.Fatalf("message: %s", msg)
	}
	mustMiss(t, ctx, ddb2, "p", "i000")
	if _, err := ddb2.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items(10, 390*1024)}); err != nil {
		t.Fatalf("10 items of 390 KB (3.8 MB): %v", err)
	}
}

func TestQueryAndScanPagesStopAt1MB(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	due := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		it := sized("big", fmt.Sprintf("i%d", i), 300*1024)
		it["gsi1pk"], it["expires_at"] = s("due"), s(ts(due.Add(time.Duration(i)*time.Second)))
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	type pager func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error)
	pages := map[string]pager{
		"table query": func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
			out, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :pk"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("big")}, ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return nil, nil, err
			}
			return out.Items, out.LastEvaluatedKey, nil
		},
		"index query": func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
			out, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String(pending), KeyConditionExpression: aws.String("gsi1pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("due")}, ExclusiveStartKey: start})
			if err != nil {
				return nil, nil, err
			}
			return out.Items, out.LastEvaluatedKey, nil
		},
		"scan": func(start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
			out, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
			if err != nil {
				return nil, nil, err
			}
			return out.Items, out.LastEvaluatedKey, nil
		},
	}
	for name, page := range pages {
		var sizes []int
		seen := map[string]bool{}
		var start map[string]types.AttributeValue
		for range 10 {
			items, next, err := page(start)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sizes = append(sizes, len(items))
			for _, it := range items {
				seen[str(t, it, "sk")] = true
			}
			if start = next; len(start) == 0 {
				break
			}
		}
		// 300 KB items: three fit in 1 MB.
		if fmt.Sprint(sizes) != "[3 3 1]" || len(seen) != 7 {
			t.Errorf("%s: page sizes %v, %d distinct items; want [3 3 1] and 7", name, sizes, len(seen))
		}
	}
}

func TestReturnValuesAreDynamoDBs(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	it := func(v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s("p"), "sk": s("rv"), "v": s(v)}
	}
	put, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("1"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || len(put.Attributes) != 0 {
		t.Fatalf("ALL_OLD of a put that created the item: %v %v", put.Attributes, err)
	}
	put, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("2"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || str(t, put.Attributes, "v") != "1" {
		t.Fatalf("ALL_OLD of a put that replaced the item: %v %v", put.Attributes, err)
	}
	for _, rv := range []types.ReturnValue{types.ReturnValueAllNew, types.ReturnValueUpdatedOld, types.ReturnValueUpdatedNew} {
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("3"), ReturnValues: rv})
		if msg := validationMessage(t, err); !strings.Contains(msg, "Return values set to invalid value") {
			t.Fatalf("PutItem %s: %s", rv, msg)
		}
		_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("p", "rv"), ReturnValues: rv})
		validationMessage(t, err)
	}
	upd, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("p", "fresh"), UpdateExpression: aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("new")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil || len(upd.Attributes) != 0 {
		t.Fatalf("ALL_OLD of an update that created the item: %v %v", upd.Attributes, err)
	}
	upd, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("p", "rv"), UpdateExpression: aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("4")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil || str(t, upd.Attributes, "v") != "2" {
		t.Fatalf("ALL_OLD of an update: %v %v", upd.Attributes, err)
	}
	del, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("p", "rv"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || str(t, del.Attributes, "v") != "4" {
		t.Fatalf("ALL_OLD of a delete: %v %v", del.Attributes, err)
	}
	del, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("p", "rv"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || len(del.Attributes) != 0 {
		t.Fatalf("ALL_OLD of a delete of nothing: %v %v", del.Attributes, err)
	}
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("5"), ReturnValuesOnConditionCheckFailure: "ALL_NEW"})
	if msg := validationMessage(t, err); !strings.Contains(msg, "returnValuesOnConditionCheckFailure") {
		t.Fatalf("ReturnValuesOnConditionCheckFailure ALL_NEW: %s", msg)
	}
	mustMiss(t, ctx, ddb, "p", "rv")

	// A failed condition with ALL_OLD carries the item as stored, on every
	// write; with no item there is none to carry.
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("6")}); err != nil {
		t.Fatal(err)
	}
	cond := aws.String("v = :other")
	vals := map[string]types.AttributeValue{":other": s("other")}
	oldOnFailure := func(err error) map[string]types.AttributeValue {
		t.Helper()
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("want ConditionalCheckFailedException, got %v", err)
		}
		return ccf.Item
	}
	all := types.ReturnValuesOnConditionCheckFailureAllOld
	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("p", "rv"), UpdateExpression: aws.String("SET w = :other"),
		ConditionExpression: cond, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
	if old := oldOnFailure(err); str(t, old, "v") != "6" {
		t.Fatalf("UpdateItem: old item %v", old)
	}
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it("7"), ConditionExpression: cond, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
	if old := oldOnFailure(err); str(t, old, "v") != "6" {
		t.Fatalf("PutItem: old item %v", old)
	}
	_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("p", "rv"), ConditionExpression: cond, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
	if old := oldOnFailure(err); str(t, old, "v") != "6" {
		t.Fatalf("DeleteItem: old item %v", old)
	}
	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("p", "absent"), UpdateExpression: aws.String("SET w = :other"),
		ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
	if old := oldOnFailure(err); len(old) != 0 {
		t.Fatalf("a failed condition on no item carries %v", old)
	}
	mustMiss(t, ctx, ddb, "p", "absent")
}

// configure sets one table's strict modes through the Configure operation.
func configure(t *testing.T, url, table, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"TableName":"`+table+`",`+body+`}`)))
	req.Header.Set("X-Amz-Target", ConfigureTarget)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Configure: %s", resp.Status)
	}
}

// strictClient is a client of a fresh stand-in, with SDK retries off,
// counting the requests it sends, and the stand-in's URL.
func strictClient(t *testing.T, opts Options) (*dynamodb.Client, string, *atomic.Int64) {
	t.Helper()
	srv := httptest.NewServer(NewStrict("us-east-1", opts, 7))
	t.Cleanup(srv.Close)
	var sent atomic.Int64
	rt := roundTrip(func(r *http.Request) (*http.Response, error) { sent.Add(1); return http.DefaultTransport.RoundTrip(r) })
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: &http.Client{Transport: rt}, Retryer: aws.NopRetryer{},
	}), srv.URL, &sent
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestIndexReadsLagWritesWhenConfigured(t *testing.T) {
	ctx := context.Background()
	ddb, url, _ := strictClient(t, Options{})
	createTable(t, ctx, ddb)
	configure(t, url, table, `"GSILagReads":2`)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	putSpawn(t, ctx, ddb, "spw:a", "pending", now.Add(-time.Minute))
	if got := due(t, ctx, ddb, now, 10); len(got) != 0 {
		t.Fatalf("first index read after the write: %v, want nothing yet", got)
	}
	if got := due(t, ctx, ddb, now, 10); len(got) != 0 {
		t.Fatalf("second index read: %v, want nothing yet", got)
	}
	if got := due(t, ctx, ddb, now, 10); fmt.Sprint(got) != "[spw:a]" {
		t.Fatalf("third index read: %v, want [spw:a]", got)
	}
	// The table itself is read consistently at once.
	out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("spw:a", "spawn"), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("GetItem: %v %v", out, err)
	}
	// Leaving the index lags too: the resolved spawn is still listed twice.
	if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("spw:a", "spawn"), UpdateExpression: aws.String("REMOVE gsi1pk")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got := due(t, ctx, ddb, now, 10); fmt.Sprint(got) != "[spw:a]" {
			t.Fatalf("index read %d after the resolution: %v, want the stale [spw:a]", i+1, got)
		}
	}
	if got := due(t, ctx, ddb, now, 10); len(got) != 0 {
		t.Fatalf("after the lag: %v, want nothing", got)
	}
	_, err = ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String(pending), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("gsi1pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending")}})
	if msg := validationMessage(t, err); !strings.Contains(msg, "Consistent reads are not supported on global secondary indexes") {
		t.Fatalf("ConsistentRead on a GSI: %s", msg)
	}
}

func TestInjectedTransactionConflictsAndThrottlingWriteNothing(t *testing.T) {
	ctx := context.Background()
	ddb, url, sent := strictClient(t, Options{})
	createTable(t, ctx, ddb)
	configure(t, url, table, `"ConflictRate":1`)
	tx := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: sized("p", "a", 100)}},
		{Put: &types.Put{TableName: aws.String(table), Item: sized("p", "b", 100)}},
	}}
	_, err := ddb.TransactWriteItems(ctx, tx)
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || !strings.Contains(fmt.Sprint(reasonCodes(t, err)), "TransactionConflict") {
		t.Fatalf("want a cancellation with TransactionConflict, got %v", err)
	}
	mustMiss(t, ctx, ddb, "p", "a")
	mustMiss(t, ctx, ddb, "p", "b")

	configure(t, url, table, `"ThrottleRate":1`)
	var throttles, provisioned int
	for range 20 {
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("p", "c", 100)})
		var te *types.ThrottlingException
		var pe *types.ProvisionedThroughputExceededException
		switch {
		case errors.As(err, &te) && len(te.ThrottlingReasons) == 1:
			throttles++
		case errors.As(err, &pe) && len(pe.ThrottlingReasons) == 1:
			provisioned++
		default:
			t.Fatalf("want a typed throttling error, got %v", err)
		}
	}
	if throttles == 0 || provisioned == 0 {
		t.Errorf("ThrottlingException %d times, ProvisionedThroughputExceededException %d times; want both", throttles, provisioned)
	}
	_, err = ddb.TransactWriteItems(ctx, tx)
	if fmt.Sprint(reasonCodes(t, err)) != "[ThrottlingError None]" && fmt.Sprint(reasonCodes(t, err)) != "[None ThrottlingError]" {
		t.Fatalf("a throttled transaction: %v", err)
	}

	// The SDK's own retryer retries them (three attempts by default).
	configure(t, url, table, `"ThrottleRate":0.5`)
	retrying := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), HTTPClient: ddb.Options().HTTPClient,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.NewExponentialJitterBackoff(5 * time.Millisecond)
			o.RateLimiter = ratelimit.None
		})})
	before := sent.Load()
	for i := range 20 {
		if _, err := retrying.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("p", fmt.Sprintf("r%d", i), 100)}); err != nil && !isCode(err, "ThrottlingException") && !isCode(err, "ProvisionedThroughputExceededException") {
			t.Fatal(err)
		}
	}
	if n := sent.Load() - before; n <= 20 {
		t.Errorf("20 puts at a 50%% throttle rate took %d requests: the SDK did not retry", n)
	}
	configure(t, url, table, `"ThrottleRate":0`)
	mustMiss(t, ctx, ddb, "p", "c")
}
