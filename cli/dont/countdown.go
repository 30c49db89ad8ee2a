package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
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
func (a *app) startCountdown(cd *countdown, label, tail string, deadline time.Time) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.ended || cd.stop != nil || !a.countdownOn() {
		return
	}
	cd.stop, cd.done = make(chan struct{}), make(chan struct{})
	start := time.Now()
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
			fmt.Fprintf(a.stderr, "\r\x1b[K%s: %s%s", label, left, tail)
			select {
			case <-tick.C:
			case <-cd.stop:
				fmt.Fprint(a.stderr, "\r\x1b[K")
				return
			}
		}
	}()
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
				a.startCountdown(cd, "waiting for an answer to "+visible.Line(ap.ID), " (until "+ap.Deadline.Local().Format("15:04:05")+"; Ctrl-C stops waiting)", ap.Deadline)
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
