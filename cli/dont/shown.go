package main

// What a person answers is what they saw (docs/approvals.md, "What the
// person saw"): before `approvals approve|refuse` and `confirmations
// confirm|refuse` prompt, the CLI reads the question (or held call), shows
// it whole — both tiers, session, requester, reason, the command wrapped to
// the terminal's width and never cut — and sends the digest of what it
// showed, so that the server answers nothing if it is another one by then.

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"golang.org/x/term"
)

// answerShows names, for each answer, the read that shows what it answers.
var answerShows = map[string]string{
	"approvals.approve":     "approvals.show",
	"approvals.refuse":      "approvals.show",
	"confirmations.confirm": "confirmations.show",
	"confirmations.refuse":  "confirmations.show",
}

// showAnswered reads what an answer answers, keeps its lines for the
// prompt (confirmState.shown) and puts its digest into args, unless the
// caller named one (--shown-digest: what they saw elsewhere). It reads
// nothing under a harness signal at the embedded CLI, which the prompt
// refuses anyway.
func (a *app) showAnswered(ctx context.Context, t *tools.Tool, args map[string]any) error {
	a.confirm.shown = nil
	show, ok := answerShows[t.Name]
	id, _ := args["id"].(string)
	if !ok || id == "" || id == "-" || (a.remote() == "" && a.harnessSignal() != "") {
		return nil
	}
	call, closeCall, err := a.watchCaller()
	if err != nil {
		return err
	}
	defer closeCall()
	env := call(ctx, show, map[string]any{"id": id})
	if !env.OK {
		return envelope.ErrorOf(env)
	}
	var d map[string]any
	if err := json.Unmarshal(env.Data, &d); err != nil {
		return err
	}
	if given, _ := args["shown_digest"].(string); given == "" {
		args["shown_digest"], _ = d["shown_digest"].(string)
	}
	if show == "approvals.show" {
		q := render.QuestionOf(d, nil)
		if ses := call(ctx, "sessions.show", map[string]any{"id": q.Session}); ses.OK {
			var s struct{ Name string }
			json.Unmarshal(ses.Data, &s)
			q.SessionName = s.Name
		}
		a.confirm.shown = func(width int) []string { return render.QuestionLines(q, width) }
	} else {
		a.confirm.shown = func(width int) []string { return heldCallLines(d, width) }
	}
	return nil
}

// heldCallLines shows a held call whole: its tool, who asked, until when,
// and every argument (as JSON, made visible), wrapped, never cut.
func heldCallLines(d map[string]any, width int) []string {
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

// promptLines are the lines shown before a [y/N]: what an answer answers
// when showAnswered read it, else the call's arguments.
func (a *app) promptLines(t *tools.Tool, args map[string]any, f *os.File) []string {
	if a.confirm.shown != nil {
		return a.confirm.shown(a.promptWidth(f))
	}
	return preview(t, args)
}

// promptWidth is the width of the terminal the prompt is written to, else
// $COLUMNS, else 100.
func (a *app) promptWidth(f *os.File) int {
	if f != nil {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if w, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && w > 0 {
		return w
	}
	return 100
}
