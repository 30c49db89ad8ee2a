package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// CreateTable makes the table the store expects, as infra/stack deploys it
// (on-demand, pk/sk strings, the sparse pending_expiry index with every
// attribute projected, the sparse entity_status index with the keys
// only), waits until it is ACTIVE and turns TTL on for the
// ttl attribute. It is for tests and local stand-ins; in AWS the CDK stack
// owns the table. A table that already exists is left as it is and
// waited for.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{s(PartitionKey), s(SortKey), s(PendingKey), s(ExpiresAtKey), s(StatusKey)},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(SortKey), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(PendingExpiryIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(PendingKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ExpiresAtKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, {
			IndexName: aws.String(EntityStatusIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(StatusKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	var api smithy.APIError
	if err != nil && !(errors.As(err, &api) && api.ErrorCode() == "ValidationException") {
		// ValidationException: TTL is already enabled.
		return fmt.Errorf("enable TTL on %s: %w", table, err)
	}
	return nil
}

// waitActive polls DescribeTable until the table and its indexes are ACTIVE.
func waitActive(ctx context.Context, client *dynamodb.Client, table string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var missing *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &missing) {
			return fmt.Errorf("describe table %s: %w", table, err)
		}
		if err == nil && out.Table.TableStatus == types.TableStatusActive {
			active := true
			for _, g := range out.Table.GlobalSecondaryIndexes {
				active = active && (g.IndexStatus == "" || g.IndexStatus == types.IndexStatusActive)
			}
			if active {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("table %s did not become ACTIVE within 5 minutes", table)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
