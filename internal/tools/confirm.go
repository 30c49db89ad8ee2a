package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

func ptr(s string) *string { return &s }

// gates is the confirmation table: every gated tool, by name. It is kept
// apart from the definitions so that one table shows what asks for a
// confirmation, and so that a name may be listed before its tool exists:
// approvals.approve (built on its own branch) is interactive-only from the
// moment it is registered.
var gates = map[string]confirm.Gate{
	// Gated as a whole.
	"lock":   {RequiresConfirmation: true},
	"ignore": {RequiresConfirmation: true},
	// A reopen undoes an ignore (or a doubt, a verdict): it needs what an
	// ignore needs, or an agent would take back a confirmed ignore unasked.
	"reopen":        {RequiresConfirmation: true},
	"spawns.cancel": {RequiresConfirmation: true},
	"tokens.create": {RequiresConfirmation: true},
	"tokens.revoke": {RequiresConfirmation: true},
	"hooks.add":     {RequiresConfirmation: true},
	"hooks.remove":  {RequiresConfirmation: true},
	"hooks.test":    {RequiresConfirmation: true},
	// Interactive-only: a person answers the prompt; --yes and skip
	// parameters do not skip it.
	"tokens.revoke-all": {InteractiveOnly: true},
	"approvals.approve": {InteractiveOnly: true},
	"approvals.refuse":  {RequiresConfirmation: true},
	// Dispatched on --op. tokens manage declares list as the value of an
	// omitted --op; spawns manage declares no default (an omitted --op is
	// a validation error), so a missing --op is gated.
	"tokens.manage": {RequiresConfirmation: true, ConfirmationExempt: &confirm.Exempt{Param: "op", Values: []string{"list"}, Default: ptr("list")}},
	"spawns.manage": {RequiresConfirmation: true, ConfirmationExempt: &confirm.Exempt{Param: "op", Values: []string{"list", "show"}}},
}

// applyGate gives a tool its row of the confirmation table (a gate set in
// the definition itself wins) and checks that an exemption names a real
// parameter and agrees with its declared default.
func applyGate(t *Tool) {
	if !t.Annotations.Gate.Gated() {
		t.Annotations.Gate = gates[t.Name]
	}
	t.Annotations.Gate = t.Annotations.Gate.Normal()
	e := t.Annotations.ConfirmationExempt
	if e == nil {
		return
	}
	for _, p := range t.Params {
		if p.Name != e.Param {
			continue
		}
		def, _ := p.Default.(string)
		if (e.Default == nil) != (p.Default == nil) || (e.Default != nil && *e.Default != def) {
			panic("tools: " + t.Name + ": confirmation_exempt.default must be the parameter's declared default")
		}
		return
	}
	panic("tools: " + t.Name + ": confirmation_exempt names no parameter " + e.Param)
}

// CallGated runs a call the way a server answers it: the server-side gate
// first (confirm.Admit), then the tool — or, for a gated call nobody
// confirmed, a pending confirmation that an approver confirms later. The
// HTTP API, MCP and the embedded CLI (after its own prompt) call this, or
// CallWith; Call is the ungated execution a confirmed call ends in.
//
// The call runs as the principal its transport put on ctx
// (service.WithPrincipal), whose powers are checked here, for every
// transport at once.
func CallGated(ctx context.Context, s *service.Service, name string, raw map[string]any, a confirm.Arrival) (Output, error) {
	return execute(ctx, s, name, raw, &a, CallOptions{})
}

// CallWith is CallGated with what the transport hands the call beside
// its arguments (CallOptions).
func CallWith(ctx context.Context, s *service.Service, name string, raw map[string]any, a confirm.Arrival, o CallOptions) (Output, error) {
	return execute(ctx, s, name, raw, &a, o)
}

// admit is the gate of a call (gate nil: none): the principal's powers,
// then the server-side confirmation gate. It returns the arguments to run
// with, or the result to answer instead (held: a pending confirmation).
func admit(ctx context.Context, s *service.Service, t *Tool, raw map[string]any, gate *confirm.Arrival, key *idempotency.Pending) (args map[string]any, held Output, ran bool, err error) {
	if gate == nil {
		return raw, Output{}, false, nil
	}
	if err := Authorize(ctx, s, t, raw); err != nil {
		return nil, Output{}, true, err
	}
	args, verdict, err := confirm.Admit(t.Annotations.Gate, raw, *gate)
	if err != nil {
		return nil, Output{}, true, err
	}
	if verdict == confirm.Execute {
		return args, Output{}, false, nil
	}
	held, err = hold(ctx, s, t, args, key)
	return nil, held, true, err
}

// hold keeps a gated call nobody confirmed for an approver.
func hold(ctx context.Context, s *service.Service, t *Tool, args map[string]any, key *idempotency.Pending) (Output, error) {
	if t.Annotations.InteractiveOnly {
		// Held, it could be confirmed later by someone who is not at a
		// client; an interactive-only action waits for no one.
		return Output{}, errs.E(confirm.NeverHeld, t.Name+" is interactive-only: a person confirms it at a client; it is never held for later, and nothing ran",
			errs.Step{Command: "dont " + cliPath(t.Name) + " … (at a terminal)", Description: "answer the CLI's [y/N] prompt as a person"}).Unmet("a person's confirmation at a client")
	}
	// A held call must be a valid call: a bad one is refused now, not
	// when somebody confirms it.
	if _, err := t.Validate(args); err != nil {
		return Output{}, err
	}
	return held(s.Held.HoldKeyed(ctx, t.Name, args, key))
}

// Held reports whether a result is a held call (data.status "pending_confirmation").
func Held(res Output) bool {
	_, ok := res.Data.(service.HeldView)
	return ok
}

// View is one tool as GET /v1/tools and MCP describe it.
type View struct {
	Name        string         `json:"name"`
	Summary     string         `json:"summary"`
	InputSchema map[string]any `json:"input_schema"`
	Annotations Annotations    `json:"annotations"`
	Roles       []string       `json:"roles"`
}

// Features are the contract bits a server advertises with its schema.
type Features struct {
	InteractiveConfirm bool `json:"interactive_confirm,omitempty"`
}

// Schema is the tool schema a caller receives.
type Schema struct {
	Tools    []View   `json:"tools"`
	Features Features `json:"features"`
}

// SchemaFor builds the schema for one caller. yesOnly is the new-contract
// view (a CLI declaring cli-confirm-v1 and cli-yes-only-v1, inside the
// server-side gate): gated tools do not list the deprecated skip
// parameters. Everyone else gets the legacy view, in which they are
// visible parameters of every gated tool. feature advertises
// features.interactive_confirm.
func SchemaFor(yesOnly, feature bool) Schema {
	out := Schema{Tools: []View{}, Features: Features{InteractiveConfirm: feature}}
	for _, t := range All() {
		out.Tools = append(out.Tools, View{Name: t.Name, Summary: t.Summary, InputSchema: t.ArgsSchema(!yesOnly, true),
			Annotations: t.Annotations, Roles: t.AllowedRoles()})
	}
	return out
}

// ArgsSchema is the JSON Schema of the arguments a caller may send: the
// input schema (internal parameters only when asked for), plus — in the
// legacy view, for gated tools — the deprecated skip parameters. MCP
// clients get the legacy view without internal parameters.
func (t *Tool) ArgsSchema(legacy, withInternal bool) map[string]any {
	s := t.InputSchema(withInternal)
	if !legacy || !t.Annotations.Gated() {
		return s
	}
	desc := "deprecated: true runs the call without a confirmation (CLIs: use --yes)"
	if t.Annotations.InteractiveOnly {
		desc = "deprecated and ignored here: this action always needs a person's confirmation"
	}
	props := s["properties"].(map[string]any)
	for _, name := range confirm.SkipParams {
		props[name] = map[string]any{"type": Boolean, "description": desc, "deprecated": true}
	}
	return s
}

func outcomeOf(res Output, err error) confirm.Outcome {
	if err != nil {
		e := errs.As(err)
		return confirm.Outcome{Kind: envelope.KindError, Code: string(e.Code), Message: e.Message}
	}
	return confirm.Outcome{OK: true, Kind: res.Kind}
}

func warning(code envelope.WarningCode, msg string) envelope.Warning {
	return envelope.Warning{Code: code, Message: msg}
}
