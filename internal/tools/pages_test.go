package tools_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/tools"
)

// The reads that can outgrow one response take limit and cursor in the
// one registry (so the CLI's flags, the OpenAPI document and MCP's
// inputSchema all have them), and their data schemas carry next_cursor.
func TestTheReadsThatCanOutgrowAResponseTakeLimitAndCursorAndNameTheNextPage(t *testing.T) {
	for _, name := range []string{"list", "spawns", "spawns.manage", "show", "hooks.deliveries"} {
		tl, ok := tools.Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		if !tl.Paged() {
			t.Errorf("%s takes no cursor", name)
		}
		props, _ := tl.InputSchema(false)["properties"].(map[string]any)
		for _, p := range []string{"limit", "cursor"} {
			if _, ok := props[p]; !ok {
				t.Errorf("%s's input schema has no %s", name, p)
			}
		}
		for _, k := range tl.OutputKinds() {
			if k != "list" && k != "spawns" && k != "claim" && k != "term" && k != "hook_deliveries" {
				continue
			}
			s, ok := tools.DataSchema(k)
			if !ok {
				t.Fatalf("kind %s has no data schema", k)
			}
			if props, _ := s["properties"].(map[string]any); props["next_cursor"] == nil {
				t.Errorf("%s's %s schema has no next_cursor: %v", name, k, s)
			}
		}
	}
}
