package dynamo

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// SetRetry sets the store's retry bounds, for tests that count attempts.
func SetRetry(s *Store, attempts int, base, cap time.Duration) {
	s.retry = backoff{attempts: attempts, base: base, cap: cap}
}

// SpawnItem is the stored form of sp, for seeding benchmarks with BatchWriteItem.
func SpawnItem(s *Store, sp spawn.Spawn) map[string]types.AttributeValue {
	it, err := s.spawnItem(sp)
	if err != nil {
		panic(err)
	}
	return it
}

// EntityItem is the stored form of e with sp pending on it, for seeding benchmarks.
func EntityItem(s *Store, e ledger.Entity, sp spawn.Spawn) map[string]types.AttributeValue {
	it, err := s.entityItem(e, entityState{pending: sp.ID, expires: timeText(sp.ExpiresAt)})
	if err != nil {
		panic(err)
	}
	return it
}
