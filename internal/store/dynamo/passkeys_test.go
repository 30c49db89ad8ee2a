package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestPasskeyConformance(t *testing.T) {
	storetest.RunPasskeys(t, func(t *testing.T) service.PasskeyStore { return newStore(t) })
}
