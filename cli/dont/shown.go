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
	"strconv"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
	"golang.org/x/term"
)

// showAnswered reads what an answer answers, keeps its lines for the
// prompt (confirmState.shown) and puts its digest into args, unless the
// caller named one (--shown-digest: what they saw elsewhere). It reads
// nothing under a harness signal at the embedded CLI, which the prompt
// refuses anyway.
func (a *app) showAnswered(ctx context.Context, t *tools.Tool, args map[string]any) error {
	a.confirm.shown = nil
	show, ok := confirmclient.ShowFor(t.Name)
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
		a.confirm.shown = func(width int) []string { return confirmclient.HeldCallLines(d, width) }
	}
	return nil
}

// promptLines are the lines shown before a [y/N]: what an answer answers
// when showAnswered read it, else the call's arguments.
func (a *app) promptLines(t *tools.Tool, args map[string]any, f *os.File) []string {
	if a.confirm.shown != nil {
		return a.confirm.shown(a.promptWidth(f))
	}
	return confirmclient.Preview(t, args)
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
