package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// countdown is the status line a long wait redraws on stderr once a
// second: what it waits for and the time left (or, without a deadline,
// the time so far). It is shown only when stderr is a terminal and --json
// was not given, so a machine reading either stream gets nothing extra;
// it erases itself when the wait ends.
type countdown struct {
	mu    sync.Mutex
	ended bool
	stop  chan struct{}
	done  chan struct{}
}

// countdownOn reports whether a wait may draw its countdown.
func (a *app) countdownOn() bool { return !a.jsonOut && isTerminal(a.stderr) }

// startCountdown draws label with the time left until deadline (zero:
// the time since now) until stopped. Only one runs at a time.
func (a *app) startCountdown(cd *countdown, label string, tails []string, deadline time.Time) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.ended || cd.stop != nil || !a.countdownOn() {
		return
	}
	cd.stop, cd.done = make(chan struct{}), make(chan struct{})
	start := time.Now()
	width := a.countdownWidth()
	go func() {
		defer close(cd.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			now := time.Now()
			left := "waiting " + render.Countdown(now.Sub(start))
			if !deadline.IsZero() {
				left = render.Countdown(deadline.Sub(now)) + " left"
			}
			fmt.Fprintf(a.stderr, "\r\x1b[K%s", fitCountdown(label, left, tails, width))
			select {
			case <-tick.C:
			case <-cd.stop:
				fmt.Fprint(a.stderr, "\r\x1b[K")
				return
			}
		}
	}()
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

// fitCountdown is the countdown line within width columns: label, the
// time left and the first of tails (longest first) that fits; else no
// tail, and then label cut (…) so that the time left is always seen.
func fitCountdown(label, left string, tails []string, width int) string {
	for _, tail := range append(tails, "") {
		if line := label + ": " + left + tail; render.Width(line) <= width {
			return line
		}
	}
	return render.Cut(label, max(width-render.Width(": "+left), 1)) + ": " + left
}

// end erases the line; it returns once the line is gone. A nil
// countdown has nothing to end.
func (cd *countdown) end() {
	if cd == nil {
		return
	}
	cd.mu.Lock()
	defer cd.mu.Unlock()
	cd.ended = true // it never starts again
	if cd.stop != nil {
		close(cd.stop)
		<-cd.done
		cd.stop = nil
	}
}

// waitCountdown wraps `approvals wait`: at a terminal it reads the
// request once for its deadline and counts down while the wait blocks.
func (a *app) waitCountdown(c *cobra.Command) {
	run := c.RunE
	c.RunE = func(c *cobra.Command, argv []string) error {
		cd := &countdown{}
		a.waiting = cd
		defer cd.end()
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
