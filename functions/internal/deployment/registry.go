package deployment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// RegistryPartition is the partition key of the project registry in the
// store's table: one item per project, sort key = the project's name. The
// store's own keys start with P#, T# or S#, so the registry cannot collide
// with them.
//
// The registry exists for the scheduled sweep: the pending-expiry index is
// partitioned per project, and the functions may not Scan, so the sweep
// needs the list of projects. A project is registered when its first
// spawn is scheduled (once per project per warm process), which is
// exactly the set of projects the backstop has to visit.
const RegistryPartition = "R#projects"

// RegistryAPI is the part of the DynamoDB client the registry uses.
type RegistryAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Registry lists the projects of a deployment.
type Registry struct {
	Client RegistryAPI
	Table  string
	Now    func() time.Time

	known sync.Map // project -> struct{}: registered by this process
}

// Ensure registers project once; later calls in this process are free.
func (r *Registry) Ensure(ctx context.Context, project string) error {
	if _, ok := r.known.Load(project); ok {
		return nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	_, err := r.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(r.Table),
		Item: map[string]types.AttributeValue{
			"pk":    &types.AttributeValueMemberS{Value: RegistryPartition},
			"sk":    &types.AttributeValueMemberS{Value: project},
			"since": &types.AttributeValueMemberS{Value: now().UTC().Format(time.RFC3339)},
		},
		// Keep the first registration; a second is a no-op.
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var exists *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register project %s: %w", project, err)
	}
	r.known.Store(project, struct{}{})
	return nil
}

// List returns every registered project, in name order.
func (r *Registry) List(ctx context.Context) ([]string, error) {
	var names []string
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: RegistryPartition}},
		ProjectionExpression:      aws.String("sk"),
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := r.Client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list projects: %w", err)
		}
		for _, it := range out.Items {
			if s, ok := it["sk"].(*types.AttributeValueMemberS); ok {
				names = append(names, s.Value)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return names, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
