package confirmclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"golang.org/x/term"
)

// Preview lists the typed arguments, one per line, values as JSON (so a
// value cannot fake a line of its own) with every control and bidi
// character escaped (package visible): the tool's parameters in order,
// then any other key. dont has no attachments; were there any, they would
// be listed by name only.
func Preview(t *tools.Tool, args map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	line := func(k string) {
		b, _ := json.Marshal(args[k])
		out = append(out, "  "+visible.Line(k)+": "+string(visible.JSON(b)))
		seen[k] = true
	}
	for _, p := range t.Params {
		if _, ok := args[p.Name]; ok && !p.Internal {
			line(p.Name)
		}
	}
	rest := []string{}
	for k := range args {
		if !seen[k] && k != "mode" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		line(k)
	}
	return out
}

// ReadLine reads up to a newline, byte by byte so nothing after the answer
// is consumed. Content before EOF counts as the answer.
func ReadLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 1)
		for {
			n, err := r.Read(buf)
			if n == 1 {
				if buf[0] == '\n' {
					done <- result{b.String(), nil}
					return
				}
				b.WriteByte(buf[0])
			}
			if err != nil {
				done <- result{b.String(), err}
				return
			}
		}
	}()
	select {
	case res := <-done:
		return res.s, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// StdinTerminal reports whether the prompt's answer is typed at a terminal
// (which echoes its newline).
func StdinTerminal(r io.Reader) bool {
	f, ok := r.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// HeldID returns data.confirmation_id of an envelope whose data.status is
// "pending_confirmation".
func HeldID(env envelope.Envelope) (string, bool) {
	var d struct {
		Status string `json:"status"`
		ID     string `json:"confirmation_id"`
	}
	if !env.OK || json.Unmarshal(env.Data, &d) != nil || d.Status != confirm.StatusPending {
		return "", false
	}
	return d.ID, true
}

// Note ends a gated command's --help (feature on only).
func Note(t *tools.Tool, g confirm.Gate) string {
	q := `"` + strings.TrimSpace(confirm.Prompt(confirm.Display(t.Name))) + `"`
	var b strings.Builder
	b.WriteString("\nConfirmation:\n")
	if g.InteractiveOnly {
		fmt.Fprintf(&b, "  Interactive-only: it always asks %s on stderr and reads one line from stdin\n", q)
		b.WriteString("  before it sends anything. --yes (-y) does not skip the prompt; --no-input exits 2 and sends nothing.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  It asks %s on stderr and reads one line from stdin\n", q)
	b.WriteString("  before it sends anything (EOF or anything but y/yes: \"Aborted, nothing was sent.\", exit 1).\n")
	b.WriteString("  --yes (-y) confirms without asking; --no-input exits 2 instead of asking and sends nothing.\n")
	if e := g.ConfirmationExempt; e != nil {
		flag := "--" + strings.ReplaceAll(e.Param, "_", "-")
		fmt.Fprintf(&b, "  %s %s runs without asking", flag, strings.Join(e.Values, " or "))
		if e.Default != nil && contains(e.Values, *e.Default) {
			fmt.Fprintf(&b, ", and so does an omitted %s (%s is its default)", flag, *e.Default)
		}
		b.WriteString("; values match exactly (case-sensitive).\n")
	}
	return b.String()
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// GateRefusal gives a refusal of the CLI gate what to type next: the gate
// says which rule is unmet, the CLI knows the command line (path). The
// cases follow confirm.Decide's: --no-input comes before stdin.
func GateRefusal(e *errs.Error, path string, interactiveOnly, noInput, stdin bool) *errs.Error {
	if e.Code != confirm.ConfirmationRequired {
		return e // an invalid skip parameter: its code's default says it all
	}
	var step errs.Step
	switch {
	case interactiveOnly && !noInput && stdin:
		step = errs.Step{Command: path + " --args-file <file>", Description: "pass the arguments in a file and answer the prompt"}
	case interactiveOnly:
		step = errs.Step{Command: path + " …", Description: "run it at a terminal and answer the prompt (--yes does not skip it)"}
	case !noInput && stdin:
		step = errs.Step{Command: path + " --args-file - --yes", Description: "confirm on the command line"}
	default:
		step = errs.Step{Command: path + " … --yes", Description: "confirm on the command line"}
	}
	e.Remediation = []errs.Step{step}
	return e
}

// StaleError is the refusal of a call the server held although the
// schema this CLI gated by said it needs no confirmation: that schema is
// out of date. Nothing ran, and the CLI never replays the call.
func StaleError(heldID string) *errs.Error {
	return errs.E(confirm.SchemaStale, "the server held the call as "+heldID+" although the cached schema said it needs no confirmation; nothing ran and it was not replayed",
		errs.Step{Command: "dont --refresh tools", Description: "re-fetch the tool schema, then run the command again"},
		errs.Step{Command: "dont confirmations refuse " + heldID, Description: "an approver drops the held call (it also expires by itself)"})
}
