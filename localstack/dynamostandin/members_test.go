package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A long run's table grows with every event and entity while its sparse
// index of pending spawns stays small: an index query must cost what the
// index holds (it once scanned the table, and a run slowed from 27 to 3
// operations a second), and still see every write — puts, updates that
// give or take an item's index key, deletes, transactions — made after
// the index's first query.
func TestAnIndexQueryReadsTheIndexNotTheTableAndSeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	for i := range 400 {
		putSpawn(t, ctx, ddb, "event:"+ts(now.Add(time.Duration(i))), "", now) // not in the index
	}
	putSpawn(t, ctx, ddb, "spawn:a", "pending", now.Add(-2*time.Minute))
	if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:a"}; !slices.Equal(got, want) {
		t.Fatalf("due = %v, want %v", got, want)
	}

	// Writes after the first query: a put, an update that gives an item its
	// index key, one that takes it away, a delete, a transaction.
	putSpawn(t, ctx, ddb, "spawn:b", "pending", now.Add(-1*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:c", "", now.Add(-3*time.Minute))
	if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("spawn:c", "spawn"),
		UpdateExpression: aws.String("SET gsi1pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("spawn:a", "spawn"),
		UpdateExpression: aws.String("REMOVE gsi1pk")}); err != nil {
		t.Fatal(err)
	}
	putSpawn(t, ctx, ddb, "spawn:d", "pending", now.Add(-4*time.Minute))
	if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("spawn:d", "spawn")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("spawn:e"), "sk": s("spawn"), "gsi1pk": s("pending"), "expires_at": s(ts(now.Add(-5 * time.Minute)))},
	}}}}); err != nil {
		t.Fatal(err)
	}
	before := evaluated.Load()
	if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:e", "spawn:c", "spawn:b"}; !slices.Equal(got, want) {
		t.Fatalf("due after the writes = %v, want %v", got, want)
	}
	if n := evaluated.Load() - before; n > 3 {
		t.Errorf("one index query of 3 members in a table of %d items evaluated %d items", 404, n)
	}
}

// A filter sees every attribute it names, whether by a placeholder or by
// its literal name, at the top level or as the root of a path, and the
// attributes it names nowhere never change its answer.
func TestAFilterReadsTheAttributesItNamesHoweverItNamesThem(t *testing.T) {
	it := item{
		"pk": []byte(`{"S":"spawn:a"}`), "phase": []byte(`{"S":"pending"}`), "n": []byte(`{"N":"7"}`),
		"doc": []byte(`{"M":{"tier":{"S":"read-only"}}}`), "tags": []byte(`{"L":[{"S":"x"},{"S":"y"}]}`),
		"unread": []byte(`{"S":"never named"}`),
	}
	in := queryInput{
		ExpressionAttributeNames: map[string]string{"#s": "phase", "#d": "doc", "#u": "nowhere"},
		ExpressionAttributeValues: map[string]json.RawMessage{":p": []byte(`{"S":"pending"}`), ":n": []byte(`{"N":"5"}`),
			":t": []byte(`{"S":"read-only"}`), ":two": []byte(`{"N":"2"}`)},
	}
	for filter, want := range map[string]bool{
		"#s = :p": true, "phase = :p": true, "n > :n": true, "n < :n": false, "#d.tier = :t": true, "doc.tier = :t": true,
		"size(tags) = :two": true, "tags[1] = :p": false, "attribute_exists(unread)": true, "attribute_exists(#u)": false,
		"attribute_not_exists(nowhere)": true, "#s = :p AND attribute_exists(pk) AND NOT contains(#s, :t)": true,
	} {
		f, r := compileFilter(in, filter, nil)
		if r != nil {
			t.Fatalf("%s: %s", filter, r.body)
		}
		if got, r := f.match(it); r != nil || got != want {
			t.Errorf("%s: %v (%v), want %v", filter, got, r, want)
		}
	}
}
