package watchscreen

import (
	"strings"
	"testing"

	"github.com/dont-cli/dont/cli/dont/render"
)

func TestFitCountdownKeepsTheTimeLeft(t *testing.T) {
	tails := []string{" (until 15:04:05; Ctrl-C stops waiting)", " (until 15:04:05)"}
	for _, c := range []struct {
		label, left string
		width       int
		want        string
	}{
		{"waiting", "5 s left", 79, "waiting: 5 s left (until 15:04:05; Ctrl-C stops waiting)"},
		{"waiting for apr:01M8WPDFSVCJCK1T3ZS20W5CNT", "4 min 59 s left", 79, "waiting for apr:01M8WPDFSVCJCK1T3ZS20W5CNT: 4 min 59 s left (until 15:04:05)"},
		{"waiting for an answer to apr:01M8WPDFSVCJCK1T3ZS20W5CNT", "4 min 59 s left", 79, "waiting for an answer to apr:01M8WPDFSVCJCK1T3ZS20W5CNT: 4 min 59 s left"},
		{"waiting for an answer to apr:01M8WPDFSVCJCK1T3ZS20W5CNT", "4 min 59 s left", 39, "waiting for an answer…: 4 min 59 s left"},
		{"問題の答えを待っています apr:01M8WPDFSVCJCK1T3ZS20W5CNT", "5 s left", 30, ""},
	} {
		got := Fit(c.label, c.left, tails, c.width)
		if render.Width(got) > c.width || !strings.Contains(got, ": "+c.left) || c.want != "" && got != c.want {
			t.Errorf("Fit(%q, %d) = %q (%d columns)", c.label, c.width, got, render.Width(got))
		}
	}
}
