package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// renderHuman prints an envelope for a person at a terminal, styled with
// st (no styling at all when colour is off: NO_COLOR, --plain, TERM=dumb or
// not a terminal).
func renderHuman(out, errOut io.Writer, env envelope.Envelope, st styles) {
	var data map[string]any
	_ = json.Unmarshal(env.Data, &data)
	switch env.Kind {
	case "claim", "term":
		renderEntity(out, data, st.out)
	case "spawn_request":
		fmt.Fprintf(out, "spawn request %s (%v) expires %v\n\n%v\n", st.out.bold(fmt.Sprint(data["request_id"])), data["request_kind"], data["expires_at"],
			data["context"].(map[string]any)["prompt"])
	case "list":
		for _, e := range asList(data["entities"]) {
			renderEntity(out, e, st.out)
		}
		fmt.Fprintf(out, "%v entities\n", data["count"])
	case "spawns":
		for _, s := range asList(data["spawns"]) {
			fmt.Fprintf(out, "%v  %-8v %-9v %-16v %v  expires %v\n", s["request_id"], s["request_kind"], s["state"], orDash(s["outcome"]), orDash(s["entity_id"]), s["expires_at"])
		}
		fmt.Fprintf(out, "%v spawns (%v)\n", data["count"], data["view"])
	default:
		b, _ := json.MarshalIndent(data, "", "  ")
		fmt.Fprintln(out, string(b))
	}
	for _, w := range env.Warnings {
		fmt.Fprintf(errOut, "%s %s: %s\n", st.err.yellow("warning:"), w.Code, w.Message)
	}
	for _, h := range env.Hints {
		fmt.Fprintf(errOut, "%s %s\n", st.err.dim("hint:"), h)
	}
}

func renderEntity(out io.Writer, e map[string]any, p palette) {
	text := e["statement"]
	if e["kind"] == "term" {
		text = fmt.Sprintf("%v — %v", e["curie"], e["definition"])
	}
	fmt.Fprintf(out, "%v [%s] %v\n", e["id"], p.status(fmt.Sprint(e["status"])), text)
	if r, ok := e["resolution"].(map[string]any); ok {
		fmt.Fprintf(out, "  resolution: %v (%v, applied=%v)\n", r["request_id"], r["outcome"], r["applied"])
	}
	for _, h := range asList(e["history"]) {
		fmt.Fprintf(out, "  %v %-16v %v→%v %v%v\n", h["at"], h["kind"], orDash(h["from"]), orDash(h["to"]), orEmpty(h["reason"]), orEmpty(h["request_id"]))
	}
}

func renderError(w io.Writer, e *errs.Error, p palette) {
	fmt.Fprintf(w, "%s %s: %s\n", p.red("error:"), e.Code, e.Message)
	for _, s := range e.Remediation {
		fmt.Fprintf(w, "  try: %s  — %s\n", s.Command, s.Description)
	}
}

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
