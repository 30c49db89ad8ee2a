package mcp_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dont-cli/dont/internal/spawn/spawntest"
)

// A newcomer follows the MCP server's call to spawn.Apply in at most five
// of this repository's functions, none of which calls back up into a
// higher layer: a callback recorded where Apply decides it.
func TestACallbackOverMCPReachesSpawnApplyInAtMostFiveFunctionsWithNoClimbBack(t *testing.T) {
	cs, _ := serve(t)
	ctx := context.Background()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		env := envelopeOf(t, res)
		if res.IsError {
			t.Fatalf("%s: %v", name, env)
		}
		return env["data"].(map[string]any)
	}
	id := call("conclude", map[string]any{"statement": "water boils at 100 C"})["id"].(string)
	rid := call("assume", map[string]any{"id": id})["request_id"].(string)
	paths := spawntest.RecordCallbacks(t, rid)
	call("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/steam-tables"}, "request_id": rid})
	got := paths()
	if len(got) == 0 {
		t.Fatal("the callback never reached spawn.Apply")
	}
	for _, p := range got {
		between := spawntest.CheckPath(t, p, "github.com/dont-cli/dont/internal/mcp.(*Server).call")
		t.Logf("Server.call → %s → spawn.Apply", strings.ReplaceAll(strings.Join(between, " → "), "github.com/dont-cli/dont/", ""))
	}
}
