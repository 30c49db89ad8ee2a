package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/storetest"
)

// The stand-in keeps items whose ttl has passed, as DynamoDB does until
// its TTL process gets to them; the fixture's apply deletes them, which
// is what that process does.
func TestRetentionConformance(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T, frames, deliveries time.Duration) (storetest.HookStores, func(*testing.T, time.Time)) {
		needServer(t)
		client := newClient(nil, nil)
		project := "test-" + randomName()
		s := dynamo.New(client, table, project)
		s.SetFrameRetention(frames)
		s.SetDeliveryRetention(deliveries)
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}, func(t *testing.T, now time.Time) {
			t.Helper()
			expireByTTL(t, client, project, now)
		}
	})
}

// expireByTTL deletes the project's items whose ttl is at or before now.
func expireByTTL(t *testing.T, client *dynamodb.Client, project string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table),
		FilterExpression:          aws.String("begins_with(pk, :p) AND attribute_exists(#ttl)"),
		ExpressionAttributeNames:  map[string]string{"#ttl": dynamo.TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "P#" + project + "#"}}})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			n, _ := it[dynamo.TTLAttribute].(*types.AttributeValueMemberN)
			if n == nil {
				continue
			}
			if at, err := strconv.ParseInt(n.Value, 10, 64); err != nil || at > now.Unix() {
				continue
			}
			if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
				Key: map[string]types.AttributeValue{dynamo.PartitionKey: it[dynamo.PartitionKey], dynamo.SortKey: it[dynamo.SortKey]}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
