package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite/sqlitetest"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve connects an SDK client to the server in memory; every call runs
// against one SQLite store. calls counts the opener's uses.
func serve(t *testing.T) (*sdk.ClientSession, *int) {
	t.Helper()
	st := sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "dont.db"))
	t.Cleanup(func() { st.Close() })
	var mu sync.Mutex
	calls := 0
	srv := mcp.New("test", func(context.Context, *tools.Tool) (*service.Service, func(), error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Author: "mcp-test"}), func() {}, nil
	})
	cs := connect(t, srv, nil, nil)
	return cs, &calls
}

func envelopeOf(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSpawnVerbsRunInHarnessModeOverMCP(t *testing.T) {
	cs, _ := serve(t)
	ctx := context.Background()
	c, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "conclude", Arguments: map[string]any{"statement": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	id := envelopeOf(t, c)["data"].(map[string]any)["id"].(string)
	a, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "assume", Arguments: map[string]any{"id": id}})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopeOf(t, a)
	if a.IsError || env["envelope_kind"] != "spawn_request" || env["meta"].(map[string]any)["mode"] != "harness" || env["data"].(map[string]any)["mode"] != "harness" {
		t.Fatalf("assume over MCP: %v", env)
	}
}

func TestConcurrentCallsEachGetTheirEnvelope(t *testing.T) {
	cs, calls := serve(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "conclude", Arguments: map[string]any{"statement": fmt.Sprint("claim ", i)}})
			if err != nil {
				errs <- err
				return
			}
			var env map[string]any
			json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &env)
			if env["data"].(map[string]any)["statement"] != fmt.Sprint("claim ", i) {
				errs <- fmt.Errorf("call %d got %v", i, env["data"])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if *calls != 16 {
		t.Fatalf("opener called %d times", *calls)
	}
}

func TestToolNamesReplaceDots(t *testing.T) {
	if got := mcp.ToolName("approvals.approve"); got != "approvals_approve" {
		t.Fatal(got)
	}
}
