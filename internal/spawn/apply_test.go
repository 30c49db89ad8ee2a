package spawn_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/spawn/spawntest"
)

// TestScenarios runs the scenario files of testdata/ against spawn.Apply
// alone; internal/storetest runs the same files through the service's
// executor on each store (TestSpawnScenarios in internal/store/...).
func TestScenarios(t *testing.T) {
	spawntest.Run(t, "testdata", spawntest.NewPure)
}
