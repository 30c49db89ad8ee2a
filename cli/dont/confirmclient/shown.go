package confirmclient

// What a person answers is what they saw (docs/approvals.md, "What the
// person saw"): before `approvals approve|refuse` and `confirmations
// confirm|refuse` prompt, the CLI reads the question (or held call), shows
// it whole and sends the digest of what it showed.

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/visible"
)

// answerShows names, for each answer, the read that shows what it answers.
var answerShows = map[string]string{
	"approvals.approve":     "approvals.show",
	"approvals.refuse":      "approvals.show",
	"confirmations.confirm": "confirmations.show",
	"confirmations.refuse":  "confirmations.show",
}

// ShowFor is the read that shows what the answer tool answers, if it is one.
func ShowFor(answer string) (string, bool) {
	show, ok := answerShows[answer]
	return show, ok
}

// HeldCallLines shows a held call whole: its tool, who asked, until when,
// and every argument (as JSON, made visible), wrapped, never cut.
func HeldCallLines(d map[string]any, width int) []string {
	s := func(k string) string { v, _ := d[k].(string); return v }
	head := visible.Line(s("confirmation_id")) + ": held call " + visible.Line(s("tool"))
	if by := s("requested_by"); by != "" {
		head += " asked by " + visible.Line(by)
	}
	if until, err := time.Parse(time.RFC3339Nano, s("expires_at")); err == nil {
		head += ", until " + until.Local().Format("15:04:05")
	}
	out := render.Wrap("", "    ", head+" ("+visible.Line(s("state"))+")", width)
	args, _ := d["args"].(map[string]any)
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, _ := json.Marshal(args[k])
		out = append(out, render.Wrap("  "+visible.Line(k)+": ", "    ", string(visible.JSON(b)), width)...)
	}
	if len(keys) == 0 {
		out = append(out, "  (no arguments)")
	}
	return out
}
