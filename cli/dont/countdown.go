package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"time"

	"github.com/dont-cli/dont/cli/dont/watchscreen"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// countdownOn reports whether a wait may draw its countdown.
func (a *app) countdownOn() bool { return !a.jsonOut && isTerminal(a.stderr) }

// startCountdown draws the countdown of a wait (watchscreen.Countdown)
// on stderr when a wait may draw one.
func (a *app) startCountdown(cd *watchscreen.Countdown, label string, tails []string, deadline time.Time) {
	if a.countdownOn() {
		cd.Start(a.stderr, a.countdownWidth(), label, tails, deadline)
	}
}

// countdownWidth is the number of columns the countdown may fill: one
// less than the terminal's width (a line that fills the last column
// wraps on many terminals, and each redraw would then start a new line),
// else $COLUMNS, else 80.
func (a *app) countdownWidth() int {
	if f, ok := a.stderr.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return max(w-1, 20)
		}
	}
	if w, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && w > 0 {
		return max(w-1, 20)
	}
	return 79
}

// waitCountdown wraps `approvals wait`: at a terminal it reads the
// request once for its deadline and counts down while the wait blocks.
func (a *app) waitCountdown(c *cobra.Command) {
	run := c.RunE
	c.RunE = func(c *cobra.Command, argv []string) error {
		cd := &watchscreen.Countdown{}
		a.waiting = cd
		defer cd.End()
		if a.countdownOn() && len(argv) == 1 {
			if ap, ok := a.pendingApproval(c.Context(), argv[0]); ok {
				until := " (until " + ap.Deadline.Local().Format("15:04:05")
				a.startCountdown(cd, "waiting for "+visible.Line(ap.ID), []string{until + "; Ctrl-C stops waiting)", until + ")"}, ap.Deadline)
			}
		}
		return run(c, argv)
	}
}

// pendingApproval reads a request, embedded or over the API, and reports
// whether it is a question still waiting for its answer.
func (a *app) pendingApproval(ctx context.Context, id string) (approvals.Approval, bool) {
	show, _ := tools.Lookup("approvals.show")
	one, release, err := a.caller(show)
	if err != nil {
		return approvals.Approval{}, false
	}
	defer release()
	env, _ := one(service.WithPrincipal(ctx, a.principal()), map[string]any{"id": id})
	var ap approvals.Approval
	if !env.OK || json.Unmarshal(env.Data, &ap) != nil {
		return ap, false
	}
	return ap, ap.State == approvals.Pending && ap.Asked
}
