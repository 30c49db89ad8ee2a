package dynamo

import (
	"context"
	"fmt"
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

// WriteTailsHistoryItem puts the history item of entity's tail as an
// inline commit's flush does (flushTail), without the put that follows:
// what a crash between the two leaves.
func WriteTailsHistoryItem(ctx context.Context, s *Store, entity string) error {
	it, err := s.getItem(ctx, key(s.entityPK(), entity))
	if err != nil || it == nil {
		return fmt.Errorf("entity %s: %v", entity, err)
	}
	e, st, err := decodeEntity(it)
	if err != nil || len(st.tail) == 0 {
		return fmt.Errorf("entity %s has no tail (%v)", entity, err)
	}
	h, err := eventsItem(s.historyPK(entity), st.tailKey(e.Version), st.tail, st.tailSpawn, st.tailRecord)
	if err != nil {
		return err
	}
	return s.flushTail(ctx, h)
}
