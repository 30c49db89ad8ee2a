package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// putSpawnItem writes the item of a spawn issued on an entity before the
// commit that issues it. It is conditional on absence, so that it never
// overwrites another spawn; finding its own item (a retry after a lost
// response, or an earlier commit of the same spawn that failed) is fine,
// and the commit decides. An item left by a failed commit names a spawn
// its entity never had: reads treat it as absent.
func (s *Store) putSpawnItem(ctx context.Context, sp spawn.Spawn) error {
	it, err := s.spawnItem(sp)
	if err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	return s.putOnce(ctx, in, sp.ID, nil)
}

// putOnce runs a conditional PutItem. A failed condition is a
// ConditionFailed on owner, unless the stored item is exactly the one
// being written: then an earlier attempt, whose response was lost, wrote
// it, and the put has succeeded. An item that later writes changed no
// longer matches; when the put was retried, landed says (if given)
// whether an earlier attempt landed all the same.
func (s *Store) putOnce(ctx context.Context, in *dynamodb.PutItemInput, owner string, landed func(context.Context) (bool, error)) error {
	attempts := 0
	err := s.write(ctx, func(ctx context.Context) error {
		attempts++
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	old := ccf.Item
	if old == nil {
		// Servers that do not return the old item: read it.
		if old, err = s.getItem(ctx, key(attrString(in.Item, PartitionKey), attrString(in.Item, SortKey))); err != nil {
			return err
		}
	}
	if sameItem(old, in.Item) {
		return nil
	}
	if attempts > 1 && landed != nil {
		ok, err := landed(ctx)
		if err != nil || ok {
			return err
		}
	}
	return &store.ConditionFailed{ID: owner}
}

// issued says whether the commit that issues sp on its entity landed.
// Only that commit names sp (a new id) on the entity, and only a commit
// that resolves sp clears it, recording sp on the entity's tail (which
// moves into a history item with it) or in a history item in the same
// transaction: so sp was issued if the entity names it, pending or on its
// tail, or, read after the entity, a history item does. Later commits on
// the entity (a move, the spawn's resolution) are why the entity's item
// is no longer the one the issue wrote.
func (s *Store) issued(ctx context.Context, sp spawn.Spawn) (bool, error) {
	it, err := s.getItem(ctx, key(s.entityPK(), sp.EntityID))
	if err != nil || it == nil {
		return false, err
	}
	if attrString(it, "ps") == sp.ID {
		return true, nil
	}
	if _, st, err := decodeEntity(it); err != nil || (st.tailSpawn != nil && st.tailSpawn.ID == sp.ID) {
		return err == nil, err
	}
	ended, err := s.resolutions(ctx, sp.EntityID, sp.ID)
	_, ok := ended[sp.ID]
	return ok, err
}

func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if ScalarText(v) != ScalarText(b[k]) {
			return false
		}
	}
	return true
}

// ScalarText is a comparable form of the scalar values these items hold
// (strings, numbers, binaries: every key attribute), tagged by type.
func ScalarText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	}
	return fmt.Sprintf("?%T", v)
}
