package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/storetest"
)

func TestHookConformance(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T) storetest.HookStores {
		s := newStore(t)
		return storetest.HookStores{Hooks: s, Store: s, Approvals: s, Confirmations: s}
	})
}
