package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Confirmation over MCP is the protocol's own elicitation: the server asks
// the client to show a message to its user and return accept, decline or
// cancel. The host renders it to the person and the model never sees or
// answers it, so an accept counts as a person's confirmation at a client,
// like the CLI's [y/N] prompt; a host that auto-accepts is trusted the way
// a terminal that types "y" is (docs/security.md).

// confirmKey names the one input request of a multi round-trip call.
const confirmKey = "confirm"

// canElicit reports whether the client declared form elicitation.
func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // neither set means form
}

// multiRoundTrip reports whether the session's protocol version asks for
// input through the tool result (SEP-2322) instead of a request from the
// server while the call is open.
func multiRoundTrip(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// confirm asks the person in the host to confirm the call. It returns true
// on accept; a refusal (confirmation-declined) on decline, cancel or a
// failed request; or, on a multi round-trip protocol, the result that asks
// the client for the answer first.
func (s *Server) confirm(ctx context.Context, t *tools.Tool, args map[string]any, req *sdk.CallToolRequest) (bool, *sdk.CallToolResult, error) {
	params := elicitation(t, args)
	var answer *sdk.ElicitResult
	if multiRoundTrip(req.Session) {
		call := fingerprint(t, args)
		if state := req.Params.RequestState; state != "" && s.asked.take(state, call) {
			answer, _ = req.Params.InputResponses[confirmKey].(*sdk.ElicitResult)
		}
		if answer == nil {
			return false, &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{confirmKey: params}, RequestState: s.asked.put(call)}, nil
		}
	} else {
		var err error
		answer, err = req.Session.Elicit(ctx, params)
		if err != nil {
			return false, nil, errs.E(confirm.Declined, ToolName(t.Name)+" was not confirmed: the confirmation request to the client failed ("+err.Error()+"); nothing ran").
				Unmet("a person accepts the confirmation")
		}
	}
	if answer.Action != "accept" {
		return false, nil, errs.E(confirm.Declined, "the person "+declined(answer.Action)+" "+ToolName(t.Name)+"; nothing ran and nothing is held").
			Unmet("a person accepts the confirmation")
	}
	return true, nil, nil
}

func declined(action string) string {
	if action == "decline" {
		return "declined"
	}
	return "dismissed"
}

// elicitation is the question: the action, then every argument on a line
// of its own, names and values escaped (internal/visible) so that text an
// agent wrote cannot hide or forge a line, as in the CLI's preview.
func elicitation(t *tools.Tool, args map[string]any) *sdk.ElicitParams {
	var b strings.Builder
	b.WriteString("An agent asks to run " + ToolName(t.Name) + ": " + t.Summary + "\n")
	keys := make([]string, 0, len(args))
	for k := range args {
		if k != "mode" {
			keys = append(keys, k)
		}
	}
	order := map[string]int{}
	for i, p := range t.Params {
		order[p.Name] = i + 1
	}
	sort.Slice(keys, func(i, j int) bool {
		oi, oj := order[keys[i]], order[keys[j]]
		if oi != oj && oi != 0 && oj != 0 {
			return oi < oj
		}
		if (oi == 0) != (oj == 0) {
			return oi != 0
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		v, _ := json.Marshal(args[k])
		b.WriteString("  " + visible.Line(k) + ": " + string(visible.JSON(v)) + "\n")
	}
	b.WriteString("Accept runs it once. Decline or cancel, and nothing runs.")
	return &sdk.ElicitParams{Mode: "form", Message: b.String(),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// fingerprint names a call: its tool and its arguments, canonically.
func fingerprint(t *tools.Tool, args map[string]any) string {
	b, _ := json.Marshal(args) // map keys are sorted
	return t.Name + "\x00" + string(b)
}

// asked holds the confirmations a multi round-trip call asked for: each
// request state is random, answers one call with the same arguments, and
// is used once, so an accept cannot be replayed onto another call.
type asked struct {
	mu    sync.Mutex
	calls map[string]string
	order []string
}

const maxAsked = 256

func (a *asked) put(call string) string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	state := hex.EncodeToString(r[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == nil {
		a.calls = map[string]string{}
	}
	a.calls[state] = call
	a.order = append(a.order, state)
	for len(a.order) > maxAsked {
		delete(a.calls, a.order[0])
		a.order = a.order[1:]
	}
	return state
}

func (a *asked) take(state, call string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.calls[state]
	delete(a.calls, state)
	return ok && got == call
}
