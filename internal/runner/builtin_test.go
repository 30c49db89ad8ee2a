package runner_test

import (
	"slices"
	"testing"

	"github.com/dont-cli/dont/internal/runner"
	"github.com/dont-cli/dont/internal/settings"
)

// The names config files may not redefine are exactly the built-in
// profiles: a new built-in is protected the day it is added.
func TestTheBuiltinProfileNamesAreTheOnesNoConfigMayRedefine(t *testing.T) {
	got, want := runner.BuiltinNames(), slices.Sorted(slices.Values(settings.BuiltinProfiles))
	if !slices.Equal(got, want) {
		t.Fatalf("runner.Builtin has %v, settings.BuiltinProfiles %v", got, want)
	}
}
