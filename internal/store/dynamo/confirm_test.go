package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestConfirmationConformance(t *testing.T) {
	storetest.RunConfirmations(t, func(t *testing.T) store.ConfirmationStore { return newStore(t) })
}
