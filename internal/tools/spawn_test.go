package tools_test

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
)

// The attack: a harness that enforces forbidden_tools lets a subagent call
// any tool the list forgot (escalate, tokens.*, approvals.*, …). Every
// registered tool is either allowed or forbidden in every spawn request.
func TestEverySpawnRequestAllowsOrForbidsEveryTool(t *testing.T) {
	f := newFixture(t)
	claim := f.verified()
	var registry []string
	for _, tl := range tools.All() {
		registry = append(registry, tl.Name)
	}
	sort.Strings(registry)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"assume", map[string]any{"id": claim, "mode": string(spawn.ModeHarness)}},
		{"guess", map[string]any{"question": "what boils water?", "mode": string(spawn.ModeHarness)}},
	} {
		res := f.call(c.tool, c.args)
		var req spawn.Request
		b, _ := json.Marshal(res.Data)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		seen := map[string]int{}
		for _, n := range req.Context.AllowedTools {
			seen[n]++
		}
		for _, n := range req.Context.ForbiddenTools {
			seen[n]++
		}
		for _, n := range registry {
			if seen[n] != 1 {
				t.Errorf("%s: tool %s is in allowed_tools and forbidden_tools %d times, want once", c.tool, n, seen[n])
			}
			delete(seen, n)
		}
		if len(seen) != 0 {
			t.Errorf("%s: the lists name tools that do not exist: %v", c.tool, seen)
		}
		for _, must := range []string{"escalate", "approvals.approve", "tokens.create", "confirmations.confirm", "spawns.cancel", "sessions.open"} {
			found := false
			for _, n := range req.Context.ForbiddenTools {
				found = found || n == must
			}
			if !found {
				t.Errorf("%s: %s is not forbidden", c.tool, must)
			}
		}
	}
}
