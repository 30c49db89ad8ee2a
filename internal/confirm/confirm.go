// Package confirm holds the rules of client-side confirmation
// (docs/design.md §7): which calls a tool's
// annotations gate, how a confirmation exemption is matched on the final
// merged arguments, what the CLI does with --yes, --no-input, --args-file -
// and the deprecated skip parameters, what the server does with a call
// that reaches it, the capability handshake, and the lifecycle of a
// server-side pending confirmation. It does no I/O.
package confirm

import (
	"fmt"
	"strings"

	"github.com/dont-cli/dont/internal/errs"
)

// The capability handshake.
const (
	// CapsHeader carries the CLI's capabilities on every request.
	CapsHeader = "X-Dont-CLI-Caps"
	// CapConfirm: the CLI confirms gated calls locally and sends cli_confirmed.
	CapConfirm = "cli-confirm-v1"
	// CapYesOnly: the CLI registers the deprecated skip parameters as hidden
	// flags and args-file keys itself, so its schema may omit them.
	CapYesOnly = "cli-yes-only-v1"
	// CLICaps is what this CLI declares.
	CLICaps = CapConfirm + "," + CapYesOnly
)

// The deprecated skip parameters.
const (
	SkipParam     = "skip_confirmation"
	AutoSkipParam = "auto_skip_confirmation"
)

// SkipParams lists both deprecated skip parameters.
var SkipParams = []string{SkipParam, AutoSkipParam}

// StatusPending is data.status of the answer to a held call.
const StatusPending = "pending_confirmation"

// The fixed lines of the CLI gate, exactly as docs/design.md §7.2 words them.
const (
	AbortedLine    = "Aborted, nothing was sent."
	DeprecatedLine = "[DEPRECATED] --skip_confirmation / --auto_skip_confirmation still work but are deprecated on this CLI — use --yes instead."
	StaleLine      = "schema cache stale, run 'dont --refresh tools' and retry"
)

// Error codes of the gate.
const (
	// ConfirmationRequired: a gated call could not be confirmed (--no-input,
	// or stdin carried the arguments) and nothing was sent.
	ConfirmationRequired errs.Code = "confirmation-required"
	// InvalidSkip: a deprecated skip parameter that is not a JSON boolean.
	InvalidSkip errs.Code = "invalid-skip-confirmation"
	// PersonRequired: an answer that only a person may give (approving,
	// confirming) was asked of the embedded CLI under a harness signal or
	// with no controlling terminal to read it from.
	PersonRequired errs.Code = "person-required"
	// SchemaStale: the server held a call this CLI thought it could send.
	SchemaStale errs.Code = "schema-cache-stale"
)

// Exempt names the read values of the argument an action dispatches on.
// Default is the value the server substitutes for an omitted argument; an
// omitted argument is exempt only when the default is declared and listed.
type Exempt struct {
	Param   string   `json:"param"`
	Values  []string `json:"values"`
	Default *string  `json:"default,omitempty"`
}

// Gate is the confirmation part of a tool's annotations, as GET /v1/tools
// publishes it.
type Gate struct {
	RequiresConfirmation bool    `json:"requires_confirmation,omitempty"`
	InteractiveOnly      bool    `json:"interactive_only,omitempty"`
	ConfirmationExempt   *Exempt `json:"confirmation_exempt,omitempty"`
}

// Normal is the gate in its canonical form: interactive-only implies
// requires-confirmation.
func (g Gate) Normal() Gate {
	if g.InteractiveOnly {
		g.RequiresConfirmation = true
	}
	return g
}

// Gated reports whether the action as a whole is confirmation-gated. Only
// gated actions accept the deprecated skip parameters.
func (g Gate) Gated() bool { return g.RequiresConfirmation || g.InteractiveOnly }

// Exempted reports whether the final merged arguments select one of the
// exempt read values: an exact, case-sensitive string match, or an omitted
// argument whose declared default is listed. A value in another spelling,
// a non-string (null included) or an omitted argument without a declared
// default is not exempt.
func (g Gate) Exempted(args map[string]any) bool {
	e := g.ConfirmationExempt
	if e == nil || e.Param == "" {
		return false
	}
	var s string
	v, present := args[e.Param]
	switch {
	case !present && e.Default == nil:
		return false
	case !present:
		s = *e.Default
	default:
		str, ok := v.(string)
		if !ok {
			return false
		}
		s = str
	}
	for _, x := range e.Values {
		if x == s {
			return true
		}
	}
	return false
}

// Needs reports whether this call must be confirmed: a gated action whose
// arguments are not exempt.
func (g Gate) Needs(args map[string]any) bool { return g.Gated() && !g.Exempted(args) }

// Caps is a parsed capability header.
type Caps map[string]bool

// ParseCaps reads a capability header: names separated by commas or spaces.
func ParseCaps(h string) Caps {
	c := Caps{}
	for _, f := range strings.FieldsFunc(h, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		c[f] = true
	}
	return c
}

// Confirms reports whether the caller is a CLI that confirms locally.
func (c Caps) Confirms() bool { return c[CapConfirm] }

// YesOnly reports whether the caller gets the new-contract view: it
// declares both capabilities, so the schema it receives omits the skip
// parameters.
func (c Caps) YesOnly() bool { return c[CapConfirm] && c[CapYesOnly] }

// CacheName is the file name of the schema cache for a capability string
// and a server: the name derives from the capabilities, so a cache written
// by a CLI with other capabilities is never read. endpointKey separates servers.
func CacheName(caps, endpointKey string) string {
	var b strings.Builder
	for _, r := range caps {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('+')
		}
	}
	return "tools." + b.String() + "." + endpointKey + ".json"
}

// SkipValues extracts the deprecated skip parameters from args. A value
// that is not a JSON boolean is refused (exit 1, no call), whatever it
// looks like: "false", 1, [] and null included.
func SkipValues(args map[string]any) (present map[string]bool, err error) {
	for _, name := range SkipParams {
		v, ok := args[name]
		if !ok {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return nil, errs.E(InvalidSkip, fmt.Sprintf("%s must be a JSON boolean (true or false), got %s; prefer --yes", name, describe(v))).
				Unmet(name + " is true or false")
		}
		if present == nil {
			present = map[string]bool{}
		}
		present[name] = b
	}
	return present, nil
}

// WithoutSkip returns a copy of args without the skip parameters.
func WithoutSkip(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if k != SkipParam && k != AutoSkipParam {
			out[k] = v
		}
	}
	return out
}

func anyTrue(m map[string]bool) bool {
	for _, v := range m {
		if v {
			return true
		}
	}
	return false
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case float64, int:
		return fmt.Sprintf("the number %v", x)
	}
	return fmt.Sprintf("%v", v)
}
