package dynamo

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// EntityKey, SpawnKey and CurieKey are the keys of s's items, for tests
// that rewrite them the way a version before the list indexes left them.
func EntityKey(s *Store, id string) map[string]types.AttributeValue { return key(s.entityPK(), id) }
func SpawnKey(s *Store, id string) map[string]types.AttributeValue  { return key(s.spawnPK(), id) }
func CurieKey(s *Store, curie string) map[string]types.AttributeValue {
	return key(s.curiePK(), curieSortKey(curie))
}
