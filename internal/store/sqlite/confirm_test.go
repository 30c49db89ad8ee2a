package sqlite_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestConfirmationConformance(t *testing.T) {
	storetest.RunConfirmations(t, func(t *testing.T) service.ConfirmationStore { return newStore(t) })
}
