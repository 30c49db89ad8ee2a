package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/storetest"
)

func TestKeyedPutConformance(t *testing.T) {
	storetest.RunKeyedPuts(t, func(t *testing.T) storetest.KeyedPutStore { return newStore(t) })
}
