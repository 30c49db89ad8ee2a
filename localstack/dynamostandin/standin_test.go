package main

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	miniserver "github.com/truora/minidyn/server"
)

const (
	table   = "dont"
	pending = "pending_expiry"
)

// client is the real aws-sdk-go-v2 DynamoDB client pointed at h.
func client(t *testing.T, h http.Handler) *dynamodb.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// createTable creates dont's single table as infra/stack defines it.
func createTable(t *testing.T, ctx context.Context, ddb *dynamodb.Client) *dynamodb.CreateTableOutput {
	t.Helper()
	out, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gsi1pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("expires_at"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(pending),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("gsi1pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("expires_at"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return out
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
}

func str(t *testing.T, it map[string]types.AttributeValue, attr string) string {
	t.Helper()
	v, ok := it[attr].(*types.AttributeValueMemberS)
	if !ok {
		t.Fatalf("attribute %s is %T in %v", attr, it[attr], it)
	}
	return v.Value
}

// ts formats a time as the store must: fixed-width RFC 3339 in UTC, so
// that string order is time order.
func ts(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func TestCreateTableReportsActive(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	out := createTable(t, ctx, ddb)
	if got := out.TableDescription.TableStatus; got != types.TableStatusActive {
		t.Errorf("CreateTable TableStatus = %q, want ACTIVE", got)
	}
	desc, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	if got := desc.Table.TableStatus; got != types.TableStatusActive {
		t.Errorf("DescribeTable TableStatus = %q, want ACTIVE", got)
	}
	if len(desc.Table.AttributeDefinitions) != 4 || desc.Table.BillingModeSummary == nil ||
		desc.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("DescribeTable lacks attribute definitions or billing mode: %+v", desc.Table)
	}
	if len(desc.Table.GlobalSecondaryIndexes) != 1 || desc.Table.GlobalSecondaryIndexes[0].IndexStatus != types.IndexStatusActive {
		t.Errorf("GSI not ACTIVE: %+v", desc.Table.GlobalSecondaryIndexes)
	}
	waiter := dynamodb.NewTableExistsWaiter(ddb)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Second); err != nil {
		t.Errorf("TableExistsWaiter: %v", err)
	}
	list, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || !slices.Equal(list.TableNames, []string{table}) {
		t.Errorf("ListTables = %v, %v; want [%s]", list, err, table)
	}
	_, err = ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("missing")})
	if _, ok := errors.AsType[*types.ResourceNotFoundException](err); !ok {
		t.Errorf("DescribeTable of a missing table: %v, want ResourceNotFoundException", err)
	}
	_, err = ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if _, ok := errors.AsType[*types.ResourceInUseException](err); !ok {
		t.Errorf("second CreateTable: %v, want ResourceInUseException", err)
	}
}

func TestResponsesCarryCRC32(t *testing.T) {
	srv := httptest.NewServer(New("us-east-1"))
	defer srv.Close()
	for _, op := range []string{"ListTables", "DescribeTable", "NoSuchOperation"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"TableName":"x"}`))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
		if got := resp.Header.Get("X-Amz-Crc32"); got != want {
			t.Errorf("%s: X-Amz-Crc32 = %q, want %q for body %s", op, got, want, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
			t.Errorf("%s: Content-Type = %q", op, ct)
		}
	}
}

func TestUnsupportedOperationIsAnAPIError(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	_, err := ddb.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)})
	if apiErr, ok := errors.AsType[smithy.APIError](err); !ok || apiErr.ErrorCode() != "UnknownOperationException" {
		t.Errorf("DescribeContinuousBackups: %v, want UnknownOperationException", err)
	}
}

func TestConditionalPut(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	put := &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                map[string]types.AttributeValue{"pk": s("claim:01"), "sk": s("entity"), "status": s("unverified"), "version": n(1)},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}
	if _, err := ddb.PutItem(ctx, put); err != nil {
		t.Fatalf("first conditional PutItem: %v", err)
	}
	put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err := ddb.PutItem(ctx, put)
	ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	if !ok {
		t.Fatalf("second conditional PutItem: %v, want ConditionalCheckFailedException", err)
	}
	if len(ccf.Item) == 0 || str(t, ccf.Item, "status") != "unverified" {
		t.Errorf("ConditionalCheckFailedException.Item = %v, want the stored item (ALL_OLD)", ccf.Item)
	}
	_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(table),
		Key:                                 key("claim:01", "entity"),
		ConditionExpression:                 aws.String("version = :v"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":v": n(9)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); !ok || len(ccf.Item) == 0 {
		t.Errorf("conditional DeleteItem: %v, want ConditionalCheckFailedException with the old item", err)
	}

	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key("claim:01", "entity"),
		UpdateExpression:          aws.String("SET #s = :new, version = version + :one"),
		ConditionExpression:       aws.String("version = :v"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":new": s("doubted"), ":one": n(1), ":v": n(1)},
	})
	if err != nil {
		t.Fatalf("conditional UpdateItem on the right version: %v", err)
	}
	got, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("claim:01", "entity"), ConsistentRead: aws.Bool(true)})
	if err != nil || str(t, got.Item, "status") != "doubted" || got.Item["version"].(*types.AttributeValueMemberN).Value != "2" {
		t.Errorf("after update: %v, %v", got, err)
	}
}

// resolution is the store's terminal resolution of a spawn: the spawn
// conditioned on pending, the entity on its version, and the event put.
func resolution(spawnStatus string, entityVersion int) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                           aws.String(table),
			Key:                                 key("spawn:01", "spawn"),
			UpdateExpression:                    aws.String("SET #st = :resolved REMOVE gsi1pk"),
			ConditionExpression:                 aws.String("#st = :pending"),
			ExpressionAttributeNames:            map[string]string{"#st": "state"},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":resolved": s(spawnStatus), ":pending": s("pending")},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       key("claim:01", "entity"),
			UpdateExpression:          aws.String("SET #s = :verified, version = :next"),
			ConditionExpression:       aws.String("version = :v"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":verified": s("verified"), ":next": n(entityVersion + 1), ":v": n(entityVersion)},
		}},
		{Put: &types.Put{
			TableName:                           aws.String(table),
			Item:                                map[string]types.AttributeValue{"pk": s("claim:01"), "sk": s("event:01"), "kind": s("dismissed")},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}}
}

func seedSpawn(t *testing.T, ctx context.Context, ddb *dynamodb.Client, version int) {
	t.Helper()
	for _, it := range []map[string]types.AttributeValue{
		{"pk": s("claim:01"), "sk": s("entity"), "status": s("unverified"), "version": n(version)},
		{"pk": s("spawn:01"), "sk": s("spawn"), "state": s("pending"), "gsi1pk": s("pending"), "expires_at": s(ts(time.Now().Add(time.Hour)))},
	} {
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
}

func reasonCodes(t *testing.T, err error) []string {
	t.Helper()
	tce, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		t.Fatalf("error is %T (%v), want *types.TransactionCanceledException", err, err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	return codes
}

func TestTransactWriteItems(t *testing.T) {
	ctx := context.Background()

	t.Run("commits all items", func(t *testing.T) {
		ddb := client(t, New("us-east-1"))
		createTable(t, ctx, ddb)
		seedSpawn(t, ctx, ddb, 3)
		if _, err := ddb.TransactWriteItems(ctx, resolution("callback-applied", 3)); err != nil {
			t.Fatalf("TransactWriteItems: %v", err)
		}
		got, _ := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("claim:01", "entity")})
		if str(t, got.Item, "status") != "verified" {
			t.Errorf("entity = %v", got.Item)
		}
	})

	t.Run("entity version mismatch cancels with the entity's reason", func(t *testing.T) {
		ddb := client(t, New("us-east-1"))
		createTable(t, ctx, ddb)
		seedSpawn(t, ctx, ddb, 4)
		_, err := ddb.TransactWriteItems(ctx, resolution("callback-applied", 3))
		if got, want := reasonCodes(t, err), []string{"None", "ConditionalCheckFailed", "None"}; !slices.Equal(got, want) {
			t.Errorf("CancellationReasons = %v, want %v", got, want)
		}
		// Nothing was applied.
		spawn, _ := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("spawn:01", "spawn")})
		if str(t, spawn.Item, "state") != "pending" || spawn.Item["gsi1pk"] == nil {
			t.Errorf("spawn changed by a cancelled transaction: %v", spawn.Item)
		}
		event, _ := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("claim:01", "event:01")})
		if event.Item != nil {
			t.Errorf("event written by a cancelled transaction: %v", event.Item)
		}
	})

	t.Run("every failing condition is reported, with ALL_OLD items", func(t *testing.T) {
		ddb := client(t, New("us-east-1"))
		createTable(t, ctx, ddb)
		seedSpawn(t, ctx, ddb, 3)
		if _, err := ddb.TransactWriteItems(ctx, resolution("timeout-restored", 3)); err != nil {
			t.Fatalf("first resolver: %v", err)
		}
		// A late callback: the spawn is no longer pending, the entity has
		// moved on and the event exists. DynamoDB reports all three.
		_, err := ddb.TransactWriteItems(ctx, resolution("callback-applied", 3))
		if got, want := reasonCodes(t, err), []string{"ConditionalCheckFailed", "ConditionalCheckFailed", "ConditionalCheckFailed"}; !slices.Equal(got, want) {
			t.Errorf("CancellationReasons = %v, want %v", got, want)
		}
		tce, _ := errors.AsType[*types.TransactionCanceledException](err)
		if old := tce.CancellationReasons[0].Item; old == nil || str(t, old, "state") != "timeout-restored" {
			t.Errorf("reason 0 Item = %v, want the spawn with state timeout-restored", old)
		}
		if old := tce.CancellationReasons[1].Item; old != nil {
			t.Errorf("reason 1 Item = %v, want none (ReturnValuesOnConditionCheckFailure not set)", old)
		}
		if old := tce.CancellationReasons[2].Item; old == nil || str(t, old, "kind") != "dismissed" {
			t.Errorf("reason 2 Item = %v, want the existing event (Put with ALL_OLD)", old)
		}
		if !strings.Contains(tce.ErrorMessage(), "[ConditionalCheckFailed, ConditionalCheckFailed, ConditionalCheckFailed]") {
			t.Errorf("message = %q", tce.ErrorMessage())
		}
	})

	t.Run("two operations on one item are a validation error", func(t *testing.T) {
		ddb := client(t, New("us-east-1"))
		createTable(t, ctx, ddb)
		seedSpawn(t, ctx, ddb, 3)
		in := resolution("callback-applied", 3)
		in.TransactItems[2].Put.Item["sk"] = s("entity")
		_, err := ddb.TransactWriteItems(ctx, in)
		if apiErr, ok := errors.AsType[smithy.APIError](err); !ok || apiErr.ErrorCode() != "ValidationException" {
			t.Errorf("err = %v, want ValidationException", err)
		}
	})
}

// putSpawn writes a spawn item; pendingKey "" leaves it out of the index.
func putSpawn(t *testing.T, ctx context.Context, ddb *dynamodb.Client, id, pendingKey string, expires time.Time) {
	t.Helper()
	it := map[string]types.AttributeValue{"pk": s(id), "sk": s("spawn"), "expires_at": s(ts(expires))}
	if pendingKey != "" {
		it["gsi1pk"] = s(pendingKey)
	}
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatalf("PutItem %s: %v", id, err)
	}
}

// due queries the sparse GSI as a sweep does and returns the spawn ids.
func due(t *testing.T, ctx context.Context, ddb *dynamodb.Client, now time.Time, limit int32) []string {
	t.Helper()
	var ids []string
	var start map[string]types.AttributeValue
	for range 100 {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			IndexName:                 aws.String(pending),
			KeyConditionExpression:    aws.String("gsi1pk = :p AND expires_at <= :now"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending"), ":now": s(ts(now))},
			ExclusiveStartKey:         start,
		}
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		out, err := ddb.Query(ctx, in)
		if err != nil {
			t.Fatalf("Query %s: %v", pending, err)
		}
		for _, it := range out.Items {
			ids = append(ids, str(t, it, "pk"))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return ids
		}
		start = out.LastEvaluatedKey
	}
	t.Fatal("pagination did not end")
	return nil
}

// Keys DynamoDB refuses are refused in every operation that names an
// item, before anything is written; the largest keys it accepts are kept.
func TestKeysBeyondDynamoDBLimitsAreValidationErrors(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	wantValidation := func(what string, err error, detail string) {
		t.Helper()
		apiErr, ok := errors.AsType[smithy.APIError](err)
		if !ok || apiErr.ErrorCode() != "ValidationException" || !strings.Contains(apiErr.ErrorMessage(), detail) {
			t.Errorf("%s: err = %v, want a ValidationException about %q", what, err, detail)
		}
	}
	longSK, longPK := strings.Repeat("k", 1025), strings.Repeat("p", 2049)
	wideSK := strings.Repeat("€", 342) // 342 runes, 1026 bytes
	for _, tc := range []struct {
		what, pk, sk, detail string
	}{
		{"sort key of 1025 bytes", "p", longSK, "range keys has exceeded the size limit of 1024 bytes"},
		{"sort key of 1026 UTF-8 bytes", "p", wideSK, "range keys has exceeded the size limit of 1024 bytes"},
		{"partition key of 2049 bytes", longPK, "s", "hashkey has exceeded the maximum size limit of 2048 bytes"},
		{"empty sort key", "p", "", "cannot contain an empty string value. Key: sk"},
		{"empty partition key", "", "s", "cannot contain an empty string value. Key: pk"},
	} {
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key(tc.pk, tc.sk)})
		wantValidation("PutItem, "+tc.what, err, tc.detail)
		_, err = ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(tc.pk, tc.sk)})
		wantValidation("GetItem, "+tc.what, err, tc.detail)
		_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key(tc.pk, tc.sk)})
		wantValidation("DeleteItem, "+tc.what, err, tc.detail)
		_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(tc.pk, tc.sk),
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n(1)}})
		wantValidation("UpdateItem, "+tc.what, err, tc.detail)
		_, err = ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			table: {{PutRequest: &types.PutRequest{Item: key("fine", "fine")}}, {PutRequest: &types.PutRequest{Item: key(tc.pk, tc.sk)}}}}})
		wantValidation("BatchWriteItem, "+tc.what, err, tc.detail)
		_, err = ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: []map[string]types.AttributeValue{key(tc.pk, tc.sk)}}}})
		wantValidation("BatchGetItem, "+tc.what, err, tc.detail)
		_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(table), Item: key("fine", "fine")}},
			{Put: &types.Put{TableName: aws.String(table), Item: key(tc.pk, tc.sk), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		}})
		wantValidation("TransactWriteItems, "+tc.what, err, tc.detail)
		_, err = ddb.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: aws.String(table), Key: key(tc.pk, tc.sk)}}}})
		wantValidation("TransactGetItems, "+tc.what, err, tc.detail)
	}
	// Nothing of a refused request was written.
	if got, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("fine", "fine")}); err != nil || got.Item != nil {
		t.Errorf("an item of a refused request was written: %v %v", got.Item, err)
	}
	// The limits themselves are accepted.
	for _, k := range []map[string]types.AttributeValue{key("p", strings.Repeat("k", 1024)), key(strings.Repeat("p", 2048), "s")} {
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: k}); err != nil {
			t.Errorf("PutItem at the limit: %v", err)
		}
	}
}

func TestTransactWriteItemsClientRequestToken(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	seedSpawn(t, ctx, ddb, 3)

	// A retry of a committed transaction (its response was lost) succeeds
	// without writing again, instead of failing its own conditions.
	in := resolution("callback-applied", 3)
	in.ClientRequestToken = aws.String("resolve-spawn-01")
	for i := range 2 {
		if _, err := ddb.TransactWriteItems(ctx, in); err != nil {
			t.Fatalf("attempt %d with the same token: %v", i+1, err)
		}
	}
	// The same token with other parameters is refused.
	other := resolution("timeout-restored", 3)
	other.ClientRequestToken = in.ClientRequestToken
	_, err := ddb.TransactWriteItems(ctx, other)
	if api, ok := errors.AsType[smithy.APIError](err); !ok || api.ErrorCode() != "IdempotentParameterMismatchException" {
		t.Fatalf("same token, other parameters: %v, want IdempotentParameterMismatchException", err)
	}
	// A new token is a new request: this one is a second resolver and loses.
	other.ClientRequestToken = aws.String("resolve-spawn-01-again")
	_, err = ddb.TransactWriteItems(ctx, other)
	if got := reasonCodes(t, err); !slices.Contains(got, "ConditionalCheckFailed") {
		t.Fatalf("a second resolver with a new token: reasons %v, want a failed condition", got)
	}
	// A cancelled request's token is not remembered: it may be retried.
	seedSpawn(t, ctx, ddb, 3)
	del := &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("claim:01", "event:01")}
	if _, err := ddb.DeleteItem(ctx, del); err != nil {
		t.Fatal(err)
	}
	if _, err := ddb.TransactWriteItems(ctx, other); err != nil {
		t.Fatalf("a retry of a cancelled token once the conditions hold: %v", err)
	}
}

func TestSparseIndexQuery(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	putSpawn(t, ctx, ddb, "spawn:b", "pending", now.Add(-1*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:a", "pending", now.Add(-2*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:c", "pending", now.Add(time.Hour))
	putSpawn(t, ctx, ddb, "spawn:resolved", "", now.Add(-3*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:exact", "pending", now)

	t.Run("expired pending spawns, oldest first", func(t *testing.T) {
		if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:a", "spawn:b", "spawn:exact"}; !slices.Equal(got, want) {
			t.Errorf("due = %v, want %v", got, want)
		}
	})
	t.Run("paginated with Limit", func(t *testing.T) {
		if got, want := due(t, ctx, ddb, now, 1), []string{"spawn:a", "spawn:b", "spawn:exact"}; !slices.Equal(got, want) {
			t.Errorf("due = %v, want %v", got, want)
		}
	})
	t.Run("newest first, filtered and projected", func(t *testing.T) {
		out, err := ddb.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			IndexName:                 aws.String(pending),
			KeyConditionExpression:    aws.String("#g = :p AND expires_at <= :now"),
			FilterExpression:          aws.String("pk <> :skip"),
			ProjectionExpression:      aws.String("pk, #e"),
			ExpressionAttributeNames:  map[string]string{"#g": "gsi1pk", "#e": "expires_at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending"), ":now": s(ts(now)), ":skip": s("spawn:b")},
			ScanIndexForward:          aws.Bool(false),
		})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		var ids []string
		for _, it := range out.Items {
			ids = append(ids, str(t, it, "pk"))
			if len(it) != 2 {
				t.Errorf("projection returned %v", it)
			}
		}
		if want := []string{"spawn:exact", "spawn:a"}; !slices.Equal(ids, want) || out.ScannedCount != 3 {
			t.Errorf("items %v ScannedCount %d; want %v and 3", ids, out.ScannedCount, want)
		}
	})
	t.Run("resolving removes the spawn from the index", func(t *testing.T) {
		_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        aws.String(table),
			Key:              key("spawn:a", "spawn"),
			UpdateExpression: aws.String("REMOVE gsi1pk"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:b", "spawn:exact"}; !slices.Equal(got, want) {
			t.Errorf("due = %v, want %v", got, want)
		}
	})
	t.Run("an update can bring an item into the index", func(t *testing.T) {
		// This and the next step break minidyn's own index bookkeeping.
		_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       key("spawn:resolved", "spawn"),
			UpdateExpression:          aws.String("SET gsi1pk = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending")},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       key("spawn:upserted", "spawn"),
			UpdateExpression:          aws.String("SET gsi1pk = :p, expires_at = :e"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending"), ":e": s(ts(now.Add(-90 * time.Second)))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:resolved", "spawn:upserted", "spawn:b", "spawn:exact"}; !slices.Equal(got, want) {
			t.Errorf("due = %v, want %v", got, want)
		}
	})
	t.Run("deleting an item that left the index", func(t *testing.T) {
		_, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("spawn:a", "spawn")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := due(t, ctx, ddb, now, 0), []string{"spawn:resolved", "spawn:upserted", "spawn:b", "spawn:exact"}; !slices.Equal(got, want) {
			t.Errorf("due = %v, want %v", got, want)
		}
	})
	t.Run("consistent reads are refused on a GSI", func(t *testing.T) {
		_, err := ddb.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			IndexName:                 aws.String(pending),
			KeyConditionExpression:    aws.String("gsi1pk = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending")},
			ConsistentRead:            aws.Bool(true),
		})
		if apiErr, ok := errors.AsType[smithy.APIError](err); !ok || apiErr.ErrorCode() != "ValidationException" {
			t.Errorf("err = %v, want ValidationException", err)
		}
	})
}

// TestMinidynIndexBookkeeping records, without failing, whether minidyn's
// own GSI query still loses items after the updates above. If it stops
// losing them, the stand-in's index-query rewrite can go.
func TestMinidynIndexBookkeeping(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ddb := client(t, miniserver.NewServer())
	createTable(t, ctx, ddb)
	putSpawn(t, ctx, ddb, "spawn:a", "pending", now.Add(-2*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:b", "pending", now.Add(-1*time.Minute))
	putSpawn(t, ctx, ddb, "spawn:c", "", now.Add(-3*time.Minute))
	_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key("spawn:c", "spawn"),
		UpdateExpression:          aws.String("SET gsi1pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("pending")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := due(t, ctx, ddb, now, 0)
	want := []string{"spawn:c", "spawn:a", "spawn:b"}
	if slices.Equal(got, want) {
		t.Logf("minidyn's own GSI query is now right (%v): the stand-in's rewrite may be removable", got)
	} else {
		t.Logf("minidyn's own GSI query returns %v, want %v: the stand-in answers index queries itself", got, want)
	}
}

func TestUpdateRemovesTopLevelAttributes(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	seed := func() {
		t.Helper()
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": s("spawn:01"), "sk": s("spawn"), "state": s("pending"), "gsi1pk": s("pending"), "note": s("x"),
			"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), s("b")}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("spawn:01", "spawn")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}

	t.Run("UpdateItem with ReturnValues", func(t *testing.T) {
		seed()
		out, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       key("spawn:01", "spawn"),
			UpdateExpression:          aws.String("SET #st = :r REMOVE gsi1pk, #n, #l[0]"),
			ExpressionAttributeNames:  map[string]string{"#st": "state", "#n": "note", "#l": "list"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": s("resolved")},
			ReturnValues:              types.ReturnValueUpdatedOld,
		})
		if err != nil {
			t.Fatal(err)
		}
		it := get()
		if it["gsi1pk"] != nil || it["note"] != nil || str(t, it, "state") != "resolved" {
			t.Errorf("after REMOVE: %v", it)
		}
		if l := it["list"].(*types.AttributeValueMemberL).Value; len(l) != 1 {
			t.Errorf("list after REMOVE #l[0]: %v", l)
		}
		if out.Attributes["gsi1pk"] == nil || out.Attributes["note"] == nil || str(t, out.Attributes, "state") != "pending" {
			t.Errorf("UPDATED_OLD = %v, want old state, gsi1pk and note", out.Attributes)
		}
	})
	t.Run("ALL_NEW leaves removed attributes out", func(t *testing.T) {
		seed()
		out, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        aws.String(table),
			Key:              key("spawn:01", "spawn"),
			UpdateExpression: aws.String("remove gsi1pk"),
			ReturnValues:     types.ReturnValueAllNew,
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.Attributes["gsi1pk"] != nil || out.Attributes["note"] == nil {
			t.Errorf("ALL_NEW = %v", out.Attributes)
		}
	})
	t.Run("TransactWriteItems", func(t *testing.T) {
		seed()
		_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       key("spawn:01", "spawn"),
			UpdateExpression:          aws.String("SET #st = :r REMOVE #g"),
			ConditionExpression:       aws.String("#st = :p"),
			ExpressionAttributeNames:  map[string]string{"#st": "state", "#g": "gsi1pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": s("resolved"), ":p": s("pending")},
		}}}})
		if err != nil {
			t.Fatal(err)
		}
		if it := get(); it["gsi1pk"] != nil || str(t, it, "state") != "resolved" {
			t.Errorf("after transactional REMOVE: %v", it)
		}
	})
	t.Run("a placeholder named like a clause is not a clause", func(t *testing.T) {
		if got := topLevelRemovals("SET a = :remove, b = :set REMOVE c ADD d :add", nil); !slices.Equal(got, []string{"c"}) {
			t.Errorf("topLevelRemovals = %v, want [c]", got)
		}
	})
}

func TestTableQueryPages(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	for i := range 5 {
		for _, pk := range []string{"session:a", "session:b"} {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"pk": s(pk), "sk": s(fmt.Sprintf("frame:%03d", i)),
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, forward := range []bool{true, false} {
		var got []string
		var start map[string]types.AttributeValue
		for range 10 {
			out, err := ddb.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(table),
				KeyConditionExpression:    aws.String("pk = :pk AND sk > :cursor"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("session:a"), ":cursor": s("frame:000")},
				Limit:                     aws.Int32(2),
				ExclusiveStartKey:         start,
				ScanIndexForward:          aws.Bool(forward),
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				got = append(got, str(t, it, "sk"))
			}
			if start = out.LastEvaluatedKey; len(start) == 0 {
				break
			}
		}
		want := []string{"frame:001", "frame:002", "frame:003", "frame:004"}
		if !forward {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("forward=%v: frames %v, want %v", forward, got, want)
		}
	}
}

func TestTimeToLive(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	createTable(t, ctx, ddb)
	ttl := func() *dynamodb.DescribeTimeToLiveOutput {
		out, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("DescribeTimeToLive: %v", err)
		}
		return out
	}
	if got := ttl().TimeToLiveDescription.TimeToLiveStatus; got != types.TimeToLiveStatusDisabled {
		t.Errorf("initial status %q", got)
	}
	update := &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	}
	out, err := ddb.UpdateTimeToLive(ctx, update)
	if err != nil {
		t.Fatalf("UpdateTimeToLive: %v", err)
	}
	if aws.ToString(out.TimeToLiveSpecification.AttributeName) != "ttl" || !aws.ToBool(out.TimeToLiveSpecification.Enabled) {
		t.Errorf("UpdateTimeToLive = %+v", out.TimeToLiveSpecification)
	}
	if d := ttl().TimeToLiveDescription; d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "ttl" {
		t.Errorf("after enabling: %+v", d)
	}
	if _, err := ddb.UpdateTimeToLive(ctx, update); err == nil {
		t.Error("enabling TTL twice succeeded; DynamoDB refuses it")
	}
	update.TableName = aws.String("missing")
	if _, err := ddb.UpdateTimeToLive(ctx, update); !isCode(err, "ResourceNotFoundException") {
		t.Errorf("UpdateTimeToLive on a missing table: %v", err)
	}
}

func isCode(err error, code string) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && apiErr.ErrorCode() == code
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if err := run(addr, "us-east-1", Options{}, 1); err == nil || !strings.Contains(fmt.Sprint(err), "loopback") {
			t.Errorf("run(%q) = %v, want a loopback refusal", addr, err)
		}
	}
}

// TestRunningStandin talks to the stand-in process that
// localstack/standins.sh started, when DONT_DYNAMO_ENDPOINT names it.
func TestRunningStandin(t *testing.T) {
	endpoint := os.Getenv("DONT_DYNAMO_ENDPOINT")
	if endpoint == "" {
		t.Skip("DONT_DYNAMO_ENDPOINT is unset: start the stand-ins with `eval \"$(bash localstack/standins.sh start)\"` to check the running process")
	}
	ctx := context.Background()
	ddb := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	name := fmt.Sprintf("dont-smoke-%d", time.Now().UnixNano())
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	defer func() {
		if _, err := ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("DeleteTable: %v", err)
		}
	}()
	if err := dynamodb.NewTableExistsWaiter(ddb).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Second); err != nil {
		t.Errorf("TableExistsWaiter: %v", err)
	}
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{"pk": s("x")}}); err != nil {
		t.Errorf("PutItem: %v", err)
	}
}
