package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestSlackLinkConformance(t *testing.T) {
	storetest.RunSlackLinks(t, func(t *testing.T) store.SlackLinkStore { return newStore(t) })
}
