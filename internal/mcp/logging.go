//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 but kept in its deprecation window; hosts still show it.

package mcp

import (
	"context"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// capabilities are the server's: tools, logging (it sends log messages:
// logWarnings) and subscribable resources (resources.go).
func capabilities() *sdk.ServerCapabilities {
	return &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Logging: &sdk.LoggingCapabilities{},
		Resources: &sdk.ResourceCapabilities{Subscribe: true}}
}

// logWarnings sends each warning of a result as a log message at level
// warning (logger "dont", data {tool, code, message}), before the result
// itself. The SDK sends nothing until the client sets a level
// (logging/setLevel), and nothing below it. The warnings stay in the
// envelope: the log is for the person watching the host, the envelope for
// the agent.
func logWarnings(ctx context.Context, ss *sdk.ServerSession, t *tools.Tool, warnings []envelope.Warning) {
	if ss == nil {
		return
	}
	for _, w := range warnings {
		// Best effort: a log message that cannot be sent changes nothing.
		_ = ss.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "dont", Data: map[string]string{
			"tool": ToolName(t.Name), "code": string(w.Code), "message": w.Message,
		}})
	}
}
