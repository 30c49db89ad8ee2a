package confirm

import (
	"strings"

	"github.com/dont-cli/dont/internal/errs"
)

// Call is what the CLI knows when it is about to send one call.
type Call struct {
	// Path is the command line that runs the action: "dont lock",
	// "dont tokens create".
	Path string
	Gate Gate
	// Feature: the server advertises features.interactive_confirm (the
	// embedded binary always does).
	Feature bool
	// Args are the final merged arguments: positional, flags, short
	// aliases and the args file, deprecated skip parameters included.
	Args map[string]any
	// Yes is --yes / -y; NoInput is --no-input.
	Yes, NoInput bool
	// StdinArgs: --args-file - consumed stdin, so it cannot answer a prompt.
	StdinArgs bool
}

// Step is what the CLI does next.
type Step int

// The CLI's next step.
const (
	// Send the call now, without asking.
	Send Step = iota
	// Ask: preview, prompt, read one line; on y/yes send with cli_confirmed.
	Ask
	// Refuse: exit with Plan.Err; nothing is sent.
	Refuse
)

// Plan is the CLI gate's decision for one call.
type Plan struct {
	Step Step
	// Args are the arguments to send (after a yes, for Ask).
	Args map[string]any
	// CLIConfirmed: the request carries cli_confirmed: true (for Ask:
	// once the person said yes).
	CLIConfirmed bool
	// Warning is printed on stderr before anything else (an
	// interactive-only action asked to skip its prompt).
	Warning string
	// Deprecated is set when a truthy skip parameter is what bypassed the
	// prompt: print DeprecatedLine (once per process).
	Deprecated bool
	Err        *errs.Error
}

// Decide applies the table of docs/design.md §7.2 to one call.
func Decide(c Call) Plan {
	skips, err := SkipValues(c.Args)
	if err != nil && c.Gate.Gated() {
		return Plan{Step: Refuse, Err: errs.As(err)}
	}
	switch {
	case !c.Feature:
		// Old server or feature off: never prompt; the server's own flow
		// applies, and skip parameters are ordinary visible parameters.
		return Plan{Step: Send, Args: c.Args}
	case !c.Gate.Gated():
		// Skip parameters here are unknown parameters: the server refuses them.
		return Plan{Step: Send, Args: c.Args}
	case c.Gate.Exempted(c.Args):
		// A read value: neither cli_confirmed nor a skip parameter is sent.
		return Plan{Step: Send, Args: WithoutSkip(c.Args)}
	}
	args := WithoutSkip(c.Args)
	if c.Gate.InteractiveOnly {
		p := Plan{Step: Ask, Args: args}
		if c.Yes || len(skips) > 0 {
			p.Warning = "warning: " + c.Path + " is interactive-only: --yes and skip parameters do not skip its confirmation prompt."
		}
		switch {
		case c.NoInput:
			p.Step, p.Err = Refuse, errs.E(ConfirmationRequired, c.Path+" is interactive-only and --no-input forbids its prompt; nothing was sent").
				Unmet("a person answers the prompt")
		case c.StdinArgs:
			p.Step, p.Err = Refuse, errs.E(ConfirmationRequired, c.Path+" is interactive-only and --args-file - took stdin, so nobody can answer its prompt; nothing was sent").
				Unmet("a person answers the prompt")
		}
		return p
	}
	switch {
	case c.Yes:
		return Plan{Step: Send, Args: args, CLIConfirmed: true}
	case anyTrue(skips):
		// Deprecated: forwarded verbatim, no cli_confirmed; the server honours it.
		return Plan{Step: Send, Args: c.Args, Deprecated: true}
	case c.NoInput:
		return Plan{Step: Refuse, Err: errs.E(ConfirmationRequired, c.Path+" needs confirmation and --no-input forbids the prompt; nothing was sent").Unmet("--yes or an answer to the prompt")}
	case c.StdinArgs:
		return Plan{Step: Refuse, Err: errs.E(ConfirmationRequired, c.Path+" needs confirmation and --args-file - took stdin, so nobody can answer the prompt; nothing was sent — pass --yes").Unmet("--yes or an answer to the prompt")}
	}
	return Plan{Step: Ask, Args: args}
}

// Yes reports whether a prompt answer proceeds: "y" or "yes", in any case,
// surrounding spaces ignored. Anything else, and EOF, declines.
func Yes(answer string) bool {
	a := strings.TrimSpace(answer)
	return strings.EqualFold(a, "y") || strings.EqualFold(a, "yes")
}

// Display names a tool the way the prompt says "<tool> <action>": a
// grouped name "tokens.create" is "tokens create"; a top-level verb
// "lock" is the action of the tool "dont", "dont lock".
func Display(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i] + " " + name[i+1:]
		}
	}
	return "dont " + name
}

// Prompt is the question, without a trailing newline.
func Prompt(command string) string {
	return "About to execute " + command + ". Proceed? [y/N] "
}
