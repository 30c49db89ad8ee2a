package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/storetest"
)

// The same window as on SQLite: a key older than 24 hours is absent.
func TestIdempotencyRecordsExpireAfter24Hours(t *testing.T) {
	storetest.RunIdempotency(t, func(t *testing.T) idempotency.Store { return newStore(t) })
}
