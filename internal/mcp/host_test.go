//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 but kept in its deprecation window; these tests check it.

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hosts show a tool's title instead of its name: every tool has the
// registry's human one.
func TestEveryToolCarriesTheRegistrysTitle(t *testing.T) {
	cs, _ := client(t, nil, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, tl := range mcp.Tools() {
		byName[mcp.ToolName(tl.Name)] = tl.Title
	}
	for _, tl := range list.Tools {
		if tl.Title == "" || tl.Title != byName[tl.Name] {
			t.Errorf("%s: title %q, want the registry's %q", tl.Name, tl.Title, byName[tl.Name])
		}
	}
	if hb, _ := tools.Lookup("spawns.heartbeat"); hb.Title != "Heartbeat a spawn" || byName["spawns_heartbeat"] != hb.Title {
		t.Errorf("spawns_heartbeat title %q", byName["spawns_heartbeat"])
	}
}

// The server declares logging, and a result's warnings reach a client
// that asked for them as log messages at level warning, naming the tool and
// the warning's code.
func TestAResultsWarningsAreSentAsLogMessagesAtLevelWarning(t *testing.T) {
	logs := make(chan *sdk.LoggingMessageParams, 16)
	cs, _ := client(t, &sdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) { logs <- r.Params }}, nil)
	ctx := context.Background()
	if cs.InitializeResult().Capabilities.Logging == nil {
		t.Fatal("the server does not declare the logging capability")
	}
	_, env := call(t, cs, "assume", map[string]any{"id": verified(t, cs, "water boils at 100 C at sea level")})
	rid := data(env)["request_id"].(string)
	// Asked for a month, the heartbeat is capped at the lease: a warning.
	// At 2026-07-28 a client asks for log messages per request, in _meta.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "spawns_heartbeat", Arguments: map[string]any{"request_id": rid, "extend": "720h"},
		Meta: sdk.Meta{sdk.MetaKeyLogLevel: "info"}})
	if err != nil {
		t.Fatal(err)
	}
	env = envelopeOf(t, res)
	warns, _ := env["warnings"].([]any)
	if len(warns) == 0 || warns[0].(map[string]any)["code"] != "spawn-lease-capped" {
		t.Fatalf("heartbeat warnings %v, want spawn-lease-capped", env["warnings"])
	}
	select {
	case p := <-logs:
		d, _ := p.Data.(map[string]any)
		if p.Level != "warning" || p.Logger != "dont" || d["tool"] != "spawns_heartbeat" || d["code"] != "spawn-lease-capped" || d["message"] != warns[0].(map[string]any)["message"] {
			t.Fatalf("log message %+v", p)
		}
	case <-time.After(10 * time.Second): // a bound on a failure, not a wait for a race
		t.Fatal("no log message for the warning")
	}
}

// A client of an older version sets its level with logging/setLevel; the
// warning's log message comes before the call's answer.
func TestAnOlderClientThatSetALevelGetsWarningsAsLogMessages(t *testing.T) {
	w := dial(t, "2025-06-18", `{}`)
	w.request("logging/setLevel", `{"level":"warning"}`)
	id := data(w.request("tools/call", `{"name":"conclude","arguments":{"statement":"water boils at 100 C"}}`)["structuredContent"].(map[string]any))["id"].(string)
	w.request("tools/call", fmt.Sprintf(`{"name":"dismiss","arguments":{"id":%q,"evidence":["https://example.org/e"]}}`, id))
	rid := data(w.request("tools/call", fmt.Sprintf(`{"name":"assume","arguments":{"id":%q}}`, id))["structuredContent"].(map[string]any))["request_id"].(string)
	w.id++
	fmt.Fprintf(w.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"spawns_heartbeat","arguments":{"request_id":%q,"extend":"720h"}}}`+"\n", w.id, rid)
	var note struct {
		Method string `json:"method"`
		Params struct {
			Level string         `json:"level"`
			Data  map[string]any `json:"data"`
		} `json:"params"`
	}
	line, err := w.out.ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &note) != nil {
		t.Fatalf("%v %s", err, line)
	}
	if note.Method != "notifications/message" || note.Params.Level != "warning" || note.Params.Data["code"] != "spawn-lease-capped" {
		t.Fatalf("first message after the call: %s", line)
	}
	if line, err := w.out.ReadString('\n'); err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d`, w.id)) {
		t.Fatalf("the call's answer: %v %s", err, line)
	}
}
