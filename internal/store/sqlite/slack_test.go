package sqlite_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestSlackLinkConformance(t *testing.T) {
	storetest.RunSlackLinks(t, func(t *testing.T) service.SlackLinkStore { return newStore(t) })
}
