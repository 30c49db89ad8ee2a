package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/spawn/spawntest"
)

// A newcomer follows the embedded CLI's tool call to spawn.Apply in at
// most five of this repository's functions, none of which calls back up
// into a higher layer: the binary records the callback where Apply
// decides it (DONT_TEST_TRACE_APPLY, a test build's hook).
func TestACallbackAtTheEmbeddedCLIReachesSpawnApplyInAtMostFiveFunctionsWithNoClimbBack(t *testing.T) {
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level", "--json").str("id")
	rid := p.ok("assume", id, "--json").str("request_id")
	trace := filepath.Join(t.TempDir(), "apply.trace")
	r := p.runEnv([]string{"DONT_TEST_TRACE_APPLY=" + trace}, "dismiss", id, "--evidence", "https://example.org/boiling", "--request-id", rid, "--json")
	if r.exit != 0 {
		t.Fatalf("dismiss: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("the callback never reached spawn.Apply: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var path []string
		if err := json.Unmarshal([]byte(line), &path); err != nil {
			t.Fatal(err)
		}
		between := spawntest.CheckPath(t, path, "main.(*app).call")
		t.Logf("app.call → %s → spawn.Apply", strings.ReplaceAll(strings.Join(between, " → "), "github.com/dont-cli/dont/", ""))
	}
}
