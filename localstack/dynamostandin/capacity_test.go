package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Reads report the capacity DynamoDB would bill: a filtered query what it
// read before the filter, an index query what it read of the index (for
// a keys-only index, the keys), each half a unit per 4 KB.
func TestQueriesReportTheCapacityOfWhatTheyRead(t *testing.T) {
	ctx := context.Background()
	ddb := client(t, New("us-east-1"))
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{str("pk"), str("sk"), str("es")},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("entity_status"),
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("es"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Repeat("x", 1000)
	for i := range 200 { // 200 KB of items, 3 of them doubted
		it := key("P#a#E", fmt.Sprintf("%03d", i))
		it["doc"], it["es"] = s(doc), s("unverified")
		if i%70 == 0 {
			it["es"] = s("doubted")
		}
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	filtered, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression: aws.String("pk = :pk"), FilterExpression: aws.String("es = :es"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("P#a#E"), ":es": s("doubted")},
		ConsistentRead:            aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	if filtered.Count != 3 || filtered.ScannedCount != 200 || filtered.ConsumedCapacity == nil ||
		aws.ToFloat64(filtered.ConsumedCapacity.CapacityUnits) < 50 {
		t.Fatalf("a filtered query of 200 KB returning 3: count %d, scanned %d, capacity %+v", filtered.Count, filtered.ScannedCount, filtered.ConsumedCapacity)
	}
	indexed, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("entity_status"),
		KeyConditionExpression:    aws.String("pk = :pk AND es = :es"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("P#a#E"), ":es": s("doubted")},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes})
	if err != nil {
		t.Fatal(err)
	}
	c := indexed.ConsumedCapacity
	if indexed.Count != 3 || c == nil || aws.ToFloat64(c.CapacityUnits) != 0.5 || c.GlobalSecondaryIndexes["entity_status"].CapacityUnits == nil {
		t.Fatalf("a keys-only index query of 3: count %d, capacity %+v", indexed.Count, c)
	}
	if _, ok := indexed.Items[0]["doc"]; ok {
		t.Fatalf("a keys-only index returned %v", indexed.Items[0])
	}
}
