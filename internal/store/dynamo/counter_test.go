package dynamo_test

import (
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// When the server reports no ConsumedCapacity (the stand-in), the counter
// bills the request itself: per started KB written, doubled in a
// transaction, plus index writes for items that carry both index keys.
func TestCounterBillsWhatTheServerDoesNotReport(t *testing.T) {
	needServer(t)
	c := dynamo.NewCounter()
	client := newClient(nil, c)
	pk := "counter-" + randomName()
	small := map[string]types.AttributeValue{"pk": s(pk), "sk": s("a"), "doc": s("x")}
	big := map[string]types.AttributeValue{"pk": s(pk), "sk": s("b"), "doc": s(strings.Repeat("x", 1500))}
	indexed := map[string]types.AttributeValue{"pk": s(pk), "sk": s("c"), "doc": s("x"),
		dynamo.PendingKey: s(pk), dynamo.ExpiresAtKey: s("2026-11-29T09:00:00.000000000Z")}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: big}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: small}},
		{Put: &types.Put{TableName: aws.String(table), Item: indexed}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk"), ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk)}}); err != nil {
		t.Fatal(err)
	}
	u := c.Usage()
	put, tx, q := u["PutItem"], u["TransactWriteItems"], u["Query"]
	if put.Requests != 1 || put.ItemsWritten != 1 || put.WriteUnits != 2 || put.Estimated != 1 {
		t.Errorf("PutItem of a 1.5 KB item: %+v, want 2 write units", put)
	}
	if tx.ItemsWritten != 2 || tx.WriteUnits != 5 || tx.IndexWriteUnits != 1 {
		t.Errorf("transaction of two small items, one indexed: %+v, want 2+2 transactional units and 1 index unit", tx)
	}
	if q.ItemsRead != 3 || q.ReadUnits != 1 {
		t.Errorf("Query of 3 small items: %+v, want 3 items and 1 read unit", q)
	}
	if tot := c.Total(); tot.WriteUnits != 7 || tot.Requests != 3 {
		t.Errorf("total %+v", tot)
	}
	c.Reset()
	if len(c.Usage()) != 0 {
		t.Error("Reset kept tallies")
	}
}

// When the server reports ConsumedCapacity, the counter uses it.
func TestCounterUsesReportedCapacity(t *testing.T) {
	needServer(t)
	c := dynamo.NewCounter()
	body := `{"Item":{"pk":{"S":"p"},"sk":{"S":"s"}},"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5,"ReadCapacityUnits":0.5}}`
	client := newClient(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !strings.Contains(r.Header.Get("X-Amz-Target"), "GetItem") {
			return http.DefaultTransport.RoundTrip(r)
		}
		in, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(in), `"ReturnConsumedCapacity":"INDEXES"`) {
			t.Errorf("the counter did not ask for consumed capacity: %s", in)
		}
		h := http.Header{}
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}), c)
	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("p"), "sk": s("s")}}); err != nil {
		t.Fatal(err)
	}
	if g := c.Usage()["GetItem"]; g.ReadUnits != 0.5 || g.Estimated != 0 || g.ItemsRead != 1 {
		t.Fatalf("GetItem: %+v, want the reported 0.5 read units", g)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
