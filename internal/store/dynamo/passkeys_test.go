package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestPasskeyConformance(t *testing.T) {
	storetest.RunPasskeys(t, func(t *testing.T) store.PasskeyStore { return newStore(t) })
}
