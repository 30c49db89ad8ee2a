package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/visible"
)

// renderHuman prints an envelope for a person at a terminal, styled with
// st (no styling at all when colour is off: NO_COLOR, --plain, TERM=dumb or
// not a terminal). Every string from the envelope is agent-written as far
// as this code knows, so each goes through package visible: a statement,
// a preview or a reason cannot move the cursor, erase a line or reorder
// what the person reads. The JSON envelope keeps the exact bytes.
func renderHuman(out, errOut io.Writer, env envelope.Envelope, st styles) {
	var data map[string]any
	_ = json.Unmarshal(env.Data, &data)
	switch env.Kind {
	case "claim", "term":
		renderEntity(out, data, st.out)
	case "spawn_request":
		prompt, _ := data["context"].(map[string]any)
		fmt.Fprintf(out, "spawn request %s (%s) expires %s\n\n%s\n", st.out.bold(shown(data["request_id"])), shown(data["request_kind"]), shown(data["expires_at"]),
			visible.Text(fmt.Sprint(prompt["prompt"])))
	case "list":
		for _, e := range asList(data["entities"]) {
			renderEntity(out, e, st.out)
		}
		fmt.Fprintf(out, "%s entities\n", shown(data["count"]))
	case "spawns":
		for _, s := range asList(data["spawns"]) {
			fmt.Fprintf(out, "%s  %-8s %-9s %-16s %s  expires %s\n", shown(s["request_id"]), shown(s["request_kind"]), shown(s["state"]), shown(orDash(s["outcome"])), shown(orDash(s["entity_id"])), shown(s["expires_at"]))
		}
		fmt.Fprintf(out, "%s spawns (%s)\n", shown(data["count"]), shown(data["view"]))
	default:
		b, _ := json.MarshalIndent(data, "", "  ")
		fmt.Fprintln(out, string(visible.JSON(b)))
	}
	for _, w := range env.Warnings {
		fmt.Fprintf(errOut, "%s %s: %s\n", st.err.yellow("warning:"), visible.Line(string(w.Code)), visible.Line(w.Message))
	}
	for _, h := range env.Hints {
		fmt.Fprintf(errOut, "%s %s\n", st.err.dim("hint:"), visible.Line(h))
	}
}

func renderEntity(out io.Writer, e map[string]any, p palette) {
	text := shown(e["statement"])
	if e["kind"] == string(ledger.KindTerm) {
		text = shown(e["curie"]) + " — " + shown(e["definition"])
	}
	fmt.Fprintf(out, "%s [%s] %s\n", shown(e["id"]), p.status(shown(e["status"])), text)
	if r, ok := e["resolution"].(map[string]any); ok {
		fmt.Fprintf(out, "  resolution: %s (%s, applied=%s)\n", shown(r["request_id"]), shown(r["outcome"]), shown(r["applied"]))
	}
	for _, h := range asList(e["history"]) {
		fmt.Fprintf(out, "  %s %-16s %s→%s %s%s\n", shown(h["at"]), shown(h["kind"]), shown(orDash(h["from"])), shown(orDash(h["to"])), visible.Line(orEmpty(h["reason"])), visible.Line(orEmpty(h["request_id"])))
	}
}

func renderError(w io.Writer, e *errs.Error, p palette) {
	fmt.Fprintf(w, "%s %s: %s\n", p.red("error:"), visible.Line(string(e.Code)), visible.Line(e.Message))
	for _, s := range e.Remediation {
		fmt.Fprintf(w, "  try: %s  — %s\n", visible.Line(s.Command), visible.Line(s.Description))
	}
}

// shown is a value of an envelope's data as one line for a person.
func shown(v any) string { return visible.Line(fmt.Sprint(v)) }

func asList(v any) []map[string]any {
	l, _ := v.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func orDash(v any) any {
	if v == nil || v == "" {
		return "-"
	}
	return v
}

func orEmpty(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v, " ")
}
