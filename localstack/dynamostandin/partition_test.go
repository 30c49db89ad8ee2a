package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A stand-in whose table holds 400 items in other partitions, and 3 in
// partition "p:wanted"; the test reads its counters.
func crowdedTable(t *testing.T) (*Standin, *dynamodb.Client) {
	t.Helper()
	ctx := context.Background()
	st := New("us-east-1")
	ddb := client(t, st)
	createTable(t, ctx, ddb)
	for i := range 400 {
		put(t, ddb, fmt.Sprintf("p:other%03d", i%40), fmt.Sprintf("s%03d", i))
	}
	for _, sk := range []string{"c", "a", "b"} {
		put(t, ddb, "p:wanted", sk)
	}
	return st, ddb
}

func put(t *testing.T, ddb *dynamodb.Client, pk, sk string) {
	t.Helper()
	if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk), "n": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
		t.Fatal(err)
	}
}

// sks are the sort keys of items.
func sks(items []map[string]types.AttributeValue) []string {
	var out []string
	for _, it := range items {
		out = append(out, it["sk"].(*types.AttributeValueMemberS).Value)
	}
	return out
}

// A base-table Query names one partition: the stand-in reads that
// partition's items, in sort-key order, and asks minidyn for no Query
// (whose key condition minidyn evaluated over every item of the table).
func TestABaseTableQueryReadsItsPartitionNotTheTable(t *testing.T) {
	ctx := context.Background()
	st, ddb := crowdedTable(t)
	before, queries := evaluated.Load(), st.minidynCalls["Query"]
	out, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression:    aws.String("#pk = :p AND sk > :from"),
		FilterExpression:          aws.String("n = :one"),
		ExpressionAttributeNames:  map[string]string{"#pk": "pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p:wanted"), ":from": s("a"), ":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sks(out.Items), []string{"b", "c"}; !slices.Equal(got, want) || out.ScannedCount != 2 || out.ConsumedCapacity == nil {
		t.Errorf("items %v ScannedCount %d capacity %v; want %v, 2 and a capacity", got, out.ScannedCount, out.ConsumedCapacity, want)
	}
	if n := st.minidynCalls["Query"] - queries; n != 0 {
		t.Errorf("the query asked minidyn %d Query requests, want 0", n)
	}
	if n := evaluated.Load() - before; n > 2*3 {
		t.Errorf("a query of a 3-item partition in a table of 403 items evaluated %d items", n)
	}
}

// A Scan page costs what it reads: the stand-in evaluates the filter over
// the page only, asks minidyn for no Scan after the first page has read
// the table once, and a paged Scan sees every item, including one
// written between two pages.
func TestAScanPageReadsThePageNotTheTableAndThePagesSeeEveryWrite(t *testing.T) {
	ctx := context.Background()
	st, ddb := crowdedTable(t)
	before := evaluated.Load()
	in := &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(10), FilterExpression: aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p:")}}
	out, err := ddb.Scan(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 10 || out.ScannedCount != 10 || out.LastEvaluatedKey == nil {
		t.Fatalf("first page: %d items, ScannedCount %d, LastEvaluatedKey %v; want 10, 10 and a key", len(out.Items), out.ScannedCount, out.LastEvaluatedKey)
	}
	if n := evaluated.Load() - before; n > 10 {
		t.Errorf("a 10-item page of a 403-item table evaluated %d items", n)
	}
	// The first page read the table once into the stand-in's copy; no
	// later page asks minidyn.
	scans := st.minidynCalls["Scan"]
	put(t, ddb, "p:zzz-late", "late")
	seen := len(out.Items)
	for in.ExclusiveStartKey = out.LastEvaluatedKey; in.ExclusiveStartKey != nil; in.ExclusiveStartKey = out.LastEvaluatedKey {
		if out, err = ddb.Scan(ctx, in); err != nil {
			t.Fatal(err)
		}
		seen += len(out.Items)
	}
	if seen != 404 {
		t.Errorf("the pages held %d items, want 404", seen)
	}
	if n := st.minidynCalls["Scan"] - scans; n != 0 {
		t.Errorf("the scan asked minidyn %d Scan requests, want 0", n)
	}
}

// minidyn copies every table a TransactWriteItems names before it applies
// it; the stand-in applies a transaction whose conditions hold itself,
// reading only its items, and leaves minidyn only the cancelled ones, whose
// reasons are unchanged.
func TestATransactionReadsOnlyItsItemsAndACancelledOneKeepsItsReasons(t *testing.T) {
	ctx := context.Background()
	st, ddb := crowdedTable(t)
	transacts := st.minidynCalls["TransactWriteItems"]
	items := []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("p:wanted", "a"), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("p:wanted"), "sk": s("d")},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: &types.Update{TableName: aws.String(table), Key: key("p:wanted", "b"), UpdateExpression: aws.String("SET n = n + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
		{Delete: &types.Delete{TableName: aws.String(table), Key: key("p:wanted", "c")}},
	}
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		t.Fatal(err)
	}
	if n := st.minidynCalls["TransactWriteItems"] - transacts; n != 0 {
		t.Errorf("a transaction whose conditions hold asked minidyn %d TransactWriteItems, want 0", n)
	}
	out, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p:wanted")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sks(out.Items), []string{"a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("after the transaction the partition holds %v, want %v", got, want)
	} else if n := out.Items[1]["n"].(*types.AttributeValueMemberN).Value; n != "2" {
		t.Errorf("the updated item's n = %s, want 2", n)
	}

	// The same put again: its condition fails, nothing of the transaction
	// is applied, and the reasons name the failing item only.
	items[3] = types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: key("p:other000", "s000")}}
	_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	cancelled, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		t.Fatalf("err = %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range cancelled.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if want := []string{"None", "ConditionalCheckFailed", "None", "None"}; !slices.Equal(codes, want) {
		t.Errorf("reasons %v, want %v", codes, want)
	}
	if out, err = ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p:wanted")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := sks(out.Items), []string{"a", "b", "d"}; !slices.Equal(got, want) || out.Items[1]["n"].(*types.AttributeValueMemberN).Value != "2" {
		t.Errorf("after the cancelled transaction the partition holds %v (n of b %v), want %v and n 2", got, out.Items[1]["n"], want)
	}
	if got, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("p:other000", "s000")}); err != nil || got.Item == nil {
		t.Errorf("the cancelled transaction's delete took effect (%v)", err)
	}
}
