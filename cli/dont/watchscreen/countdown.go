package watchscreen

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
)

// Countdown is the status line a long wait redraws on stderr once a
// second: what it waits for and the time left (or, without a deadline,
// the time so far). cli/dont starts it only when stderr is a terminal and
// --json was not given, so a machine reading either stream gets nothing
// extra; it erases itself when the wait ends.
type Countdown struct {
	mu    sync.Mutex
	ended bool
	stop  chan struct{}
	done  chan struct{}
}

// Start draws label on w, within width columns, with the time left until
// deadline (zero: the time since now) until End. Only one runs at a time,
// and none after End.
func (cd *Countdown) Start(w io.Writer, width int, label string, tails []string, deadline time.Time) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.ended || cd.stop != nil {
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
			fmt.Fprintf(w, "\r\x1b[K%s", Fit(label, left, tails, width))
			select {
			case <-tick.C:
			case <-cd.stop:
				fmt.Fprint(w, "\r\x1b[K")
				return
			}
		}
	}()
}

// Fit is the countdown line within width columns: label, the time left
// and the first of tails (longest first) that fits; else no tail, and
// then label cut (…) so that the time left is always seen.
func Fit(label, left string, tails []string, width int) string {
	for _, tail := range append(tails, "") {
		if line := label + ": " + left + tail; render.Width(line) <= width {
			return line
		}
	}
	return render.Cut(label, max(width-render.Width(": "+left), 1)) + ": " + left
}

// End erases the line; it returns once the line is gone. A nil
// countdown has nothing to end.
func (cd *Countdown) End() {
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
