package capacity_test

import (
	"hash/crc32"
	"io"
	"net/http"
	"os/exec"
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
	client, c := counted(nil)
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
	if _, ok := u["BatchGetItem"]; ok {
		t.Errorf("the counter counted its own reads: %+v", u["BatchGetItem"])
	}
	if tot := c.Total(); tot.WriteUnits != 7 || tot.Requests != 3 {
		t.Errorf("total %+v", tot)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if len(c.Usage()) != 0 {
		t.Error("Reset kept tallies")
	}
}

// What a write costs in the sparse index depends on the item it replaces,
// which its request does not show: the counter reads it. An entry is put
// when an item enters the index, deleted when it leaves, deleted and put
// when its index keys change, and written once when they stay.
func TestCounterBillsTheIndexEntriesAWriteAddsMovesOrRemoves(t *testing.T) {
	needServer(t)
	client, c := counted(nil)
	pk := "index-" + randomName()
	item := func(doc string, index ...string) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{"pk": s(pk), "sk": s("x"), "doc": s(doc)}
		if len(index) == 2 {
			it[dynamo.PendingKey], it[dynamo.ExpiresAtKey] = s(index[0]), s(index[1])
		}
		return it
	}
	tx := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(table), Item: it}}}}); err != nil {
			t.Fatal(err)
		}
	}
	const due, later = "2026-11-29T09:00:00.000000000Z", "2026-11-29T10:00:00.000000000Z"
	for _, step := range []struct {
		name         string
		write        func()
		units, index float64
	}{
		{"a put enters the index", func() { tx(item("a", pk, due)) }, 3, 1},
		{"a put under the same index keys", func() { tx(item("b", pk, due)) }, 3, 1},
		{"a put under other index keys", func() { tx(item("c", pk, later)) }, 4, 2},
		{"a put leaves the index", func() { tx(item("d")) }, 3, 1},
		{"a put outside the index", func() { tx(item("e")) }, 2, 0},
		{"an update that removes the index keys", func() {
			tx(item("f", pk, due))
			c.Reset()
			if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(pk), "sk": s("x")},
				UpdateExpression:         aws.String("REMOVE #g, #e"),
				ExpressionAttributeNames: map[string]string{"#g": dynamo.PendingKey, "#e": dynamo.ExpiresAtKey}}); err != nil {
				t.Fatal(err)
			}
		}, 2, 1},
		{"a delete of an indexed item", func() {
			tx(item("g", pk, due))
			c.Reset()
			if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(pk), "sk": s("x")}}); err != nil {
				t.Fatal(err)
			}
		}, 2, 1},
	} {
		c.Reset()
		step.write()
		if u := c.Total(); u.WriteUnits != step.units || u.IndexWriteUnits != step.index {
			t.Errorf("%s: %+v, want %v write units, %v of them index", step.name, u, step.units, step.index)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// When the server reports ConsumedCapacity, the counter uses it.
func TestCounterUsesReportedCapacity(t *testing.T) {
	needServer(t)
	body := `{"Item":{"pk":{"S":"p"},"sk":{"S":"s"}},"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5,"ReadCapacityUnits":0.5}}`
	client, c := counted(roundTripFunc(func(r *http.Request) (*http.Response, error) {
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
	}))
	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("p"), "sk": s("s")}}); err != nil {
		t.Fatal(err)
	}
	if g := c.Usage()["GetItem"]; g.ReadUnits != 0.5 || g.Estimated != 0 || g.ItemsRead != 1 {
		t.Fatalf("GetItem: %+v, want the reported 0.5 read units", g)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The counter is for tests: no package of the module but its tests
// imports it, so no binary links it.
func TestNoProgramImportsTheCounter(t *testing.T) {
	const self = "github.com/dont-cli/dont/internal/store/dynamo/capacity"
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/dont-cli/dont/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		listed++
		for _, imp := range f[1:] {
			if imp == self {
				t.Errorf("%s imports %s, which is for tests only", f[0], self)
			}
		}
	}
	if listed < 10 {
		t.Fatalf("go list named %d packages: %s", listed, out)
	}
}
