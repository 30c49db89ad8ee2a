// Package mcp serves dont's tool surface over the Model Context Protocol on
// stdio, with the official Go SDK. It is a transport adapter and nothing
// more: every tool of internal/tools is listed (dots in names become
// underscores), its input schema is generated from the registry, every call
// goes through tools.Call, and every result is the envelope — as structured
// content and as JSON text, with isError set on failures. Spawn verbs always
// run in harness mode: an MCP client is a harness.
//
// An MCP client is always a harness principal (it is how agents connect):
// the server lists and runs only the tools a harness may call, so the
// approver and admin tools (answering approvals, confirming held calls,
// tokens) do not exist here; its frame reads never make a session
// answerable; gated tools never advertise the deprecated skip parameters
// and refuse them as unknown (docs/security.md).
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Opener returns the service one call runs against and a function that
// releases it. The CLI opens the embedded store per call, as it does per
// invocation.
type Opener func(ctx context.Context, t *tools.Tool) (*service.Service, func(), error)

// Server is dont's MCP server.
type Server struct {
	open Opener
	srv  *sdk.Server
}

const instructions = `dont is a ledger of claims with enforced doubt. Every tool result is a dont envelope {ok, envelope_kind, data, hints, warnings, meta}; on failure envelope_kind is "error" and data.remediation lists what to run next.
assume, overlook and guess return envelope_kind "spawn_request": start a clean-context subagent with data.context (prompt, allowed_tools) and let it finish with dismiss or trust (answer for guess) passing data.request_id as request_id.`

// New builds the server with every tool of the registry.
func New(version string, open Opener) *Server {
	s := &Server{open: open}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "dont", Version: version}, &sdk.ServerOptions{
		Instructions: instructions,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, t := range Tools() {
		s.srv.AddTool(&sdk.Tool{
			Name:        ToolName(t.Name),
			Description: t.Summary,
			// The new-contract view: no skip parameters to teach a model.
			InputSchema: t.ArgsSchema(false, false),
			Annotations: Annotations(t),
		}, s.handler(t))
	}
	return s
}

// Principal is who every MCP call runs as.
func Principal(author string) auth.Principal { return auth.Harness("mcp:" + author) }

// Tools are the tools an MCP client may list and call: those a harness
// principal may call.
func Tools() []*tools.Tool {
	var out []*tools.Tool
	for _, t := range tools.All() {
		if t.ForPrincipal(auth.Harness("")) {
			out = append(out, t)
		}
	}
	return out
}

// Annotations are a tool's MCP hints, true to what it does: reads are
// read-only and idempotent; lock, ignore, cancels and revocations are
// destructive (their effect cannot be taken back by the caller); nothing
// reaches outside dont.
func Annotations(t *tools.Tool) *sdk.ToolAnnotations {
	destructive, openWorld := t.Annotations.Destructive, false
	return &sdk.ToolAnnotations{
		ReadOnlyHint:    t.Annotations.ReadOnly,
		IdempotentHint:  t.Annotations.ReadOnly,
		DestructiveHint: &destructive,
		OpenWorldHint:   &openWorld,
	}
}

// ToolName is the MCP name of a registry tool: "approvals.approve" becomes
// "approvals_approve", since many clients accept only [A-Za-z0-9_-].
func ToolName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// Run serves one client over in/out (stdio) until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.RunTransport(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
}

// RunTransport serves one client over any SDK transport.
func (s *Server) RunTransport(ctx context.Context, t sdk.Transport) error {
	return s.srv.Run(ctx, t)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (s *Server) handler(t *tools.Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		res, mode, err := s.call(ctx, t, req.Params.Arguments)
		var env envelope.Envelope
		if err == nil {
			env, err = envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
			if err != nil {
				err = errs.E(errs.Internal, "cannot encode the result").Wrap(err)
			}
		}
		if err != nil {
			env = envelope.Fail(err, res.Warnings)
		}
		env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds(), RequestID: ids.New(ids.Request, start), Mode: mode}
		return Result(env), nil
	}
}

func (s *Server) call(ctx context.Context, t *tools.Tool, raw json.RawMessage) (tools.Output, string, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return tools.Output{}, "", errs.E(errs.Usage, ToolName(t.Name)+": arguments must be a JSON object").Unmet("arguments is an object")
		}
	}
	for _, name := range confirm.SkipParams {
		if _, set := args[name]; set {
			return tools.Output{}, "", errs.E(errs.Usage, ToolName(t.Name)+": unknown parameter \""+name+"\"",
				errs.Step{Command: "tools/list", Description: "send only the parameters of the tool's input schema"}).Unmet("only the parameters of the input schema")
		}
	}
	mode := ""
	for _, p := range t.Params {
		if !p.Internal {
			continue
		}
		if _, set := args[p.Name]; set {
			return tools.Output{}, "", errs.E(errs.Usage, ToolName(t.Name)+": unknown parameter \""+p.Name+"\"").Unmet("only the parameters of the input schema")
		}
		if p.Name == "mode" {
			mode = string(spawn.ModeHarness)
			args["mode"] = mode
		}
	}
	svc, release, err := s.open(ctx, t)
	if err != nil {
		return tools.Output{}, mode, err
	}
	defer release()
	// The server-side contract: no prompts over MCP (stdin is the protocol);
	// a gated call nobody confirmed is held for an approver, and an
	// interactive-only one is refused.
	res, err := tools.CallGated(service.WithPrincipal(ctx, Principal(svc.Author)), svc, t.Name, args, confirm.Arrival{})
	return res, mode, err
}

// Result carries an envelope as an MCP tool result: the envelope itself as
// structured content, the same JSON as text, isError when it is a failure.
func Result(env envelope.Envelope) *sdk.CallToolResult {
	b := envelope.Marshal(env)
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(bytes.TrimSuffix(b, []byte("\n")))}},
		StructuredContent: json.RawMessage(b),
		IsError:           !env.OK,
	}
}
