package main

import (
	"context"
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
