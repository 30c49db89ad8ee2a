// Package mcp serves dont's tool surface over the Model Context Protocol on
// stdio, with the official Go SDK. It is a transport adapter and nothing
// more: every tool of internal/tools is listed (dots in names become
// underscores), its input and output schemas are generated from the
// registry (the output schema is the envelope, with data typed per
// envelope kind), every call goes through tools.CallGated, and every
// result is the envelope — as structured content and as JSON text, with
// isError set on failures. Spawn verbs always run in harness mode: an MCP
// client is a harness.
//
// Blocking tools report progress while they wait, a client that goes
// away ends the question it waited on as client-gone (progress.go);
// pending spawns and open questions are subscribable resources
// (resources.go); and the commands in a result's text are rendered as
// MCP tool calls (text.go). docs/harnesses.md, "MCP hosts".
//
// Every tool carries the registry's human title. A result's warnings are
// also sent as log messages (level warning) to a client that asked for
// them, and a call the client cancels gets no response (standard.go).
//
// What a client sees follows the protocol version it negotiated: fields
// later versions added (annotations, outputSchema, structuredContent, …)
// are left out of the answers to an older client (standard.go).
//
// A gated call is confirmed by the person in the MCP host when the client
// declares the elicitation capability: the server asks with
// elicitation/create (the preview escaped by internal/visible) and runs the
// call only on accept; decline or cancel refuse it and nothing is written.
// Without the capability a gated call is held, and an interactive-only one
// refused, as before (docs/security.md, "Confirmation over MCP").
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
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
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
	// asked are the confirmations asked through a multi round-trip
	// request and not yet answered: request state → the call it is for.
	asked asked
	// watches are the subscribed resources (resources.go).
	watches watches
}

const instructions = `dont is a ledger of claims with enforced doubt. Every tool result is a dont envelope {ok, envelope_kind, data, hints, warnings, meta}; on failure envelope_kind is "error" and data.remediation lists what to run next.
assume, overlook and guess return envelope_kind "spawn_request": start a clean-context subagent with data.context (prompt, allowed_tools) and let it finish with dismiss or trust (answer for guess) passing data.request_id as request_id.
Gated tools (lock, ignore, spawns_cancel, spawns_manage with op "cancel") ask the person using this client to confirm through elicitation when the client supports it, and run only if they accept; otherwise the call is held for an approver (data.status "pending_confirmation").
escalate waits for a person (up to its deadline: 120 s by default, or the deadline you ask for within the person's range, refused with deadline-out-of-range outside it) and sends progress notifications while it waits when the request carries a progressToken; if your host gives up sooner, call escalate with no_wait and then approvals_wait with max_wait (e.g. "30s") again while it answers approval-still-open.
Pending spawns and open questions are resources: dont://spawns/pending and dont://approvals/open (subscribable).`

// New builds the server with every tool of the registry.
func New(version string, open Opener) *Server {
	s := &Server{open: open}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "dont", Version: version}, &sdk.ServerOptions{
		Instructions: instructions,
		// Logging: a result's warnings are also sent as log messages at
		// level warning, for hosts that show a log (logging.go).
		Capabilities: capabilities(),
		// Pending spawns and open questions, subscribable (resources.go).
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
	})
	s.addResources()
	schemas := toolSchemas()
	for _, t := range Tools() {
		s.srv.AddTool(&sdk.Tool{
			Name:         ToolName(t.Name),
			Title:        t.Title,
			Description:  t.Summary,
			InputSchema:  schemas[t.Name].input,
			OutputSchema: schemas[t.Name].output,
			Annotations:  Annotations(t),
		}, s.handler(t))
	}
	return s
}

// toolSchemas are every tool's input and output schemas as JSON, built
// once per process: a server is made per connection (per test, per
// `dont mcp`), and building and encoding the schemas was most of the
// cost of making one. The SDK reads and sends them as they are.
var toolSchemas = sync.OnceValue(func() map[string]struct{ input, output json.RawMessage } {
	out := map[string]struct{ input, output json.RawMessage }{}
	for _, t := range Tools() {
		// The new-contract view: no skip parameters to teach a model.
		in, err := json.Marshal(t.ArgsSchema(false, false))
		if err != nil {
			panic(err) // maps of JSON values: cannot fail
		}
		o, err := json.Marshal(t.OutputSchema())
		if err != nil {
			panic(err)
		}
		out[t.Name] = struct{ input, output json.RawMessage }{in, o}
	}
	return out
})

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

// Annotations are a tool's MCP hints, read from the registry and true to
// what it does: reads are read-only; lock, ignore, cancels, refusals and
// revocations are destructive (their effect cannot be taken back by the
// caller); reads and closures are idempotent (tools.Tool.Idempotent);
// nothing reaches outside dont — over MCP the spawn verbs run in harness
// mode and call no provider.
func Annotations(t *tools.Tool) *sdk.ToolAnnotations {
	destructive, openWorld := t.Annotations.Destructive && !t.Annotations.ReadOnly, false
	return &sdk.ToolAnnotations{
		ReadOnlyHint:    t.Annotations.ReadOnly,
		IdempotentHint:  t.Idempotent(),
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
	ctx, stop := context.WithCancel(ctx)
	defer stop() // ends the resource watches of this run
	s.watches.mu.Lock()
	if s.watches.base == nil {
		s.watches.base = ctx
		defer func() {
			s.watches.mu.Lock()
			s.watches.base, s.watches.by = nil, nil
			s.watches.mu.Unlock()
		}()
	}
	s.watches.mu.Unlock()
	return s.srv.Run(ctx, standardTransport{t})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (s *Server) handler(t *tools.Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		ctx, done := clientGone(ctx)
		defer done()
		res, mode, ask, err := s.call(ctx, t, req)
		if ask != nil {
			return ask, nil
		}
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
		// Commands in the text are MCP tool calls here (text.go).
		mcpText(&env)
		env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds(), RequestID: ids.New(ids.Request, start), Mode: mode}
		logWarnings(ctx, req.Session, t, env.Warnings)
		return Result(env), nil
	}
}

// call runs one call. ask, when not nil, is the answer that asks the
// client for the person's confirmation first (multi round-trip requests).
func (s *Server) call(ctx context.Context, t *tools.Tool, req *sdk.CallToolRequest) (res tools.Output, mode string, ask *sdk.CallToolResult, err error) {
	raw := req.Params.Arguments
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return tools.Output{}, "", nil, errs.E(errs.Usage, ToolName(t.Name)+": arguments must be a JSON object").Unmet("arguments is an object")
		}
	}
	for _, name := range confirm.SkipParams {
		if _, set := args[name]; set {
			return tools.Output{}, "", nil, errs.E(errs.Usage, ToolName(t.Name)+": unknown parameter \""+name+"\"",
				errs.Step{Command: "tools/list", Description: "send only the parameters of the tool's input schema"}).Unmet("only the parameters of the input schema")
		}
	}
	for _, p := range t.Params {
		if !p.Internal {
			continue
		}
		if _, set := args[p.Name]; set {
			return tools.Output{}, "", nil, errs.E(errs.Usage, ToolName(t.Name)+": unknown parameter \""+p.Name+"\"").Unmet("only the parameters of the input schema")
		}
		if p.Name == "mode" {
			mode = string(spawn.ModeHarness)
			args["mode"] = mode
		}
	}
	svc, release, err := s.open(ctx, t)
	if err != nil {
		return tools.Output{}, mode, nil, err
	}
	defer release()
	ctx = service.WithPrincipal(ctx, Principal(svc.Author))
	// The server-side contract: no prompts on stdio (stdin is the
	// protocol). A gated call is confirmed by the person in the host when
	// the client can elicit; otherwise it is held for an approver, and an
	// interactive-only one is refused.
	var arrival confirm.Arrival
	if t.Annotations.Gated() && !t.Annotations.Exempted(args) && canElicit(req.Session) {
		// Ask only about a call that would run: its principal may call it
		// and its arguments are valid.
		if err := tools.Authorize(ctx, svc, t, args); err != nil {
			return tools.Output{}, mode, nil, err
		}
		if _, err := t.Validate(args); err != nil {
			return tools.Output{}, mode, nil, err
		}
		confirmed, ask, err := s.confirm(ctx, t, args, req)
		if ask != nil || err != nil {
			return tools.Output{}, mode, ask, err
		}
		arrival = confirm.Arrival{Contract: confirmed, CLIConfirmed: confirmed}
	}
	var look func() (approvals.Approval, bool)
	if t.Name == "approvals.wait" {
		look = func() (approvals.Approval, bool) {
			id, _ := args["id"].(string)
			v, err := svc.Escalations.Show(ctx, id)
			return v.Approval, err == nil
		}
	}
	asked, stop := withProgress(ctx, req, blocking(t, args), look)
	res, err = tools.CallWith(ctx, svc, t.Name, args, arrival, tools.CallOptions{Asked: asked})
	stop()
	return res, mode, nil, err
}

// clientGone returns the context a call runs under: it ends when the
// request's does — the client cancelled the request or went away — with
// cause service.ErrAskingClientGone, so that a question the call was
// waiting on is cancelled with that reason for the person to read, not
// as a bare withdrawal.
func clientGone(ctx context.Context) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(service.ErrAskingClientGone) })
	return cctx, func() { stop(); cancel(nil) }
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
