package httpapi

import (
	"net/http"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
)

// ToolView is one tool as GET /v1/tools describes it.
type ToolView = tools.View

// toolList answers GET /v1/tools for the caller's capabilities
// (X-Dont-CLI-Caps) and the server-side gate:
//
//   - features.interactive_confirm is true only when the caller declares
//     cli-confirm-v1 and the gate is on;
//   - a caller declaring cli-confirm-v1 and cli-yes-only-v1, inside the
//     gate, gets the new-contract view: gated tools without the deprecated
//     skip parameters;
//   - a CLI declaring only cli-confirm-v1, and every other caller, gets the
//     legacy view, in which skip_confirmation and auto_skip_confirmation
//     are visible parameters of every gated tool.
func (s *server) toolList(w http.ResponseWriter, r *http.Request) {
	caps := confirm.ParseCaps(r.Header.Get(confirm.CapsHeader))
	on := !s.opts.DisableInteractiveConfirm
	schema := tools.SchemaFor(on && caps.YesOnly(), on && caps.Confirms())
	w.Header().Set("Vary", confirm.CapsHeader)
	s.write(w, r, http.StatusOK, tools.Output{Kind: envelope.KindTools, Data: schema}, time.Now())
}

// arrival tells the server-side gate how a call came in: cli_confirmed
// (a person confirmed it on the client: the CLI's [y/N] prompt or --yes,
// a button on the approvals page) counts only from a caller that declared
// cli-confirm-v1 in X-Dont-CLI-Caps, while the gate is on. From anyone
// else, or with the gate off, it is ignored and the call is held.
func (s *server) arrival(r *http.Request, req callRequest) confirm.Arrival {
	caps := confirm.ParseCaps(r.Header.Get(confirm.CapsHeader))
	return confirm.Arrival{Contract: !s.opts.DisableInteractiveConfirm && caps.Confirms(), CLIConfirmed: req.CLIConfirmed}
}

// okStatus is 202 for a held call (nothing ran yet), 200 otherwise.
func okStatus(res tools.Output) int {
	if tools.Held(res) {
		return http.StatusAccepted
	}
	return http.StatusOK
}

const heldDescription = `held: data.status is "pending_confirmation" and data.confirmation_id names the call; nothing ran. ` +
	`An approver or admin runs it once with POST /v1/tools/confirmations.confirm: never the token that asked, and for a tool a harness may not call, only a principal that may call it; ` +
	`revoking the requester's token drops it.`

func capsParameter() map[string]any {
	return map[string]any{"name": confirm.CapsHeader, "in": "header", "required": false,
		"schema": map[string]any{"type": "string", "example": confirm.CLICaps},
		"description": "CLI capabilities, comma-separated: cli-confirm-v1 (the CLI confirms gated calls itself and sends cli_confirmed), " +
			"cli-yes-only-v1 (with cli-confirm-v1: the schema omits the deprecated skip parameters)"}
}

// callProperties are the fields of a POST /v1/tools/{name} body. The args
// schema is the legacy view, which every caller may send.
func callProperties(t *tools.Tool) map[string]any {
	return map[string]any{
		"args": t.ArgsSchema(true, true),
		"cli_confirmed": map[string]any{"type": "boolean",
			"description": "set by a client declaring cli-confirm-v1 in X-Dont-CLI-Caps after its own [y/N] prompt or --yes; a gated call then runs at once. " +
				"Ignored (the call is held, or refused if interactive-only) when the request does not declare cli-confirm-v1 and when the server's gate is off."},
	}
}
