package mcp_test

import (
	"context"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over MCP a listing comes in pages too, and a cursor of another listing
// or an altered one reads nothing.
func TestAnAgentOverMCPWalksPagesAndCannotUseACursorOfAnotherListing(t *testing.T) {
	cs, _ := serve(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "conclude", Arguments: map[string]any{"statement": fmt.Sprint("claim ", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	args := map[string]any{"limit": 2}
	var first string
	for {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		data := envelopeOf(t, res)["data"].(map[string]any)
		for _, e := range data["entities"].([]any) {
			id := e.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("%s on two pages", id)
			}
			seen[id] = true
		}
		next, _ := data["next_cursor"].(string)
		if next == "" {
			break
		}
		if first == "" {
			first = next
		}
		args = map[string]any{"limit": 2, "cursor": next}
	}
	if len(seen) != 5 {
		t.Fatalf("the walk read %d of 5 claims", len(seen))
	}
	for what, call := range map[string]*sdk.CallToolParams{
		"another listing": {Name: "spawns", Arguments: map[string]any{"cursor": first}},
		"another status":  {Name: "list", Arguments: map[string]any{"status": "verified", "cursor": first}},
		"altered":         {Name: "list", Arguments: map[string]any{"cursor": first[:len(first)-1]}},
	} {
		res, err := cs.CallTool(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		env := envelopeOf(t, res)
		if !res.IsError || env["data"].(map[string]any)["code"] != "cursor-invalid" {
			t.Fatalf("%s: %v", what, env)
		}
	}
}
