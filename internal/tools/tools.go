// Package tools is dont's tool surface: one definition per verb, with its
// parameters and annotations. The CLI's commands and flags, the HTTP API's
// routes and OpenAPI document, `GET /v1/tools` and the MCP tool list are all
// generated from it, and every transport executes a call through Call.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
)

// Param types, as JSON Schema names them.
const (
	String  = "string"
	Number  = "number"
	Integer = "integer"
	Boolean = "boolean"
	Strings = "array" // of strings
)

// Param is one argument of a tool.
type Param struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Required    bool     `json:"required,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Default     any      `json:"default,omitempty"`
	// Positional params come from the command line's arguments, in order.
	Positional bool `json:"-"`
	// Short is a one-letter CLI alias.
	Short string `json:"-"`
	// Env is an environment variable the CLI reads when the flag is absent.
	Env string `json:"-"`
	// Internal params are set by front ends, never by callers (mode).
	Internal bool `json:"-"`
}

// Annotations tell clients how to treat a tool before calling it.
type Annotations struct {
	ReadOnly bool `json:"read_only,omitempty"`
	// Destructive: the call ends something for good or takes a power away
	// (lock, ignore, cancelling a spawn, revoking tokens). The ledger keeps
	// every event, but the effect cannot be taken back by the caller.
	Destructive bool `json:"destructive,omitempty"`
	// Presence: answering it is a person's decision (approving or refusing
	// an escalation, confirming a held call). At the embedded CLI the answer
	// is read from the controlling terminal, never from stdin, and never
	// under a harness signal (docs/security.md).
	Presence bool `json:"presence,omitempty"`
	// PersonOnly: at the embedded CLI only the person may make the call
	// (minting or revoking tokens: a token answers over the API), so it
	// needs the approver passphrase typed at the controlling terminal
	// after its usual confirmation; an exempt call (tokens manage --op
	// list) does not. Over the API the token's role decides, as for every
	// tool (docs/security.md).
	PersonOnly bool `json:"person_only,omitempty"`
	// Gate: requires_confirmation, interactive_only, confirmation_exempt
	// (see confirm.go).
	confirm.Gate
}

// NeedsPerson reports whether the call, at the embedded CLI, needs the
// person proven by the approver passphrase: every presence tool, and a
// person-only tool unless its arguments make it exempt.
func (t *Tool) NeedsPerson(args map[string]any) bool {
	return t.Annotations.Presence || t.Annotations.PersonOnly && !t.Annotations.Gate.Exempted(args)
}

// Tool is one verb. A name with a dot ("approvals.approve") is an action of
// a group: the CLI nests it (`dont approvals approve`).
type Tool struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Title is the human name hosts show (titles.go).
	Title       string      `json:"title"`
	Params      []Param     `json:"params"`
	Annotations Annotations `json:"annotations"`
	// Roles may call the tool over the API; nil means the default for its
	// annotations (read-only: every role; otherwise harness and admin).
	Roles []string `json:"roles"`
	// Exclusive: the service applies the call at most once by its own
	// conditions, so that a concurrent duplicate is refused there (one
	// pending verification spawn per entity); an Idempotency-Key then
	// needs no claim before the call runs.
	Exclusive bool `json:"-"`
	// answer presents the result the service commits a keyed call's
	// response with (idempotency.Pending), when the tool's write is one
	// commit of the service that carries it: an Idempotency-Key then
	// needs no claim either, as the key is recorded by that commit or the
	// call applies nothing (CommitsKey). nil: presentResult, for the
	// exclusive tools and a callback token's calls.
	answer func(result any, warns []envelope.Warning) (Output, bool)
	run    func(ctx context.Context, s *service.Service, a Args) (Output, error)
	// runWith runs, instead of run, a tool that takes what the transport
	// hands the call beside its arguments (CallOptions): its keyed
	// response, escalate's asked notice.
	runWith func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error)
	// The cross-cutting policy (see call): check refuses bad arguments
	// before anything runs; approvals says the tool needs the approvals
	// port; sweep says whether, and when, the call sweeps (nil: never).
	check     func(a Args) error
	approvals bool
	sweep     func(a Args) sweepOrder
}

// CommitsKey reports whether every write of the tool is one commit of the
// service that carries a keyed call's response (idempotency.Pending), so
// that the transport records the key in that commit and claims nothing
// before it (docs/design.md, idempotency).
func (t *Tool) CommitsKey() bool { return t.answer != nil }

// Args are a call's arguments after validation.
type Args map[string]any

// Str returns a string argument or "".
func (a Args) Str(name string) string { s, _ := a[name].(string); return s }

// Strs returns a list argument.
func (a Args) Strs(name string) []string {
	switch v := a[name].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// Float returns a number argument, or nil when absent.
func (a Args) Float(name string) *float64 {
	if f, ok := a[name].(float64); ok {
		return &f
	}
	return nil
}

// Int returns an integer argument or 0.
func (a Args) Int(name string) int {
	f, _ := a[name].(float64)
	return int(f)
}

// Bool returns a boolean argument.
func (a Args) Bool(name string) bool { b, _ := a[name].(bool); return b }

// All returns the tools, sorted by name.
func All() []*Tool {
	return slices.Clone(sortedTools().tools)
}

// toolList is the registry sorted by name, and the names.
type toolList struct {
	tools []*Tool
	names []string
}

// sorted is the registry's toolList, built on first use: the registry is
// fixed once the package's init has run, and every call's spawn request
// and gate read it.
var sorted = sync.OnceValue(func() *toolList {
	l := &toolList{names: Names(), tools: make([]*Tool, 0, len(registry))}
	for _, n := range l.names {
		l.tools = append(l.tools, registry[n].tool())
	}
	return l
})

func sortedTools() *toolList { return sorted() }

// Names lists every tool's name, sorted, without building the tools.
func Names() []string { return slices.Clone(names()) }

var names = sync.OnceValue(func() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
})

// AllowedRoles is the list of bearer roles that may call the tool.
func (t *Tool) AllowedRoles() []string {
	switch {
	case t.Roles != nil:
		return t.Roles
	case t.Annotations.ReadOnly:
		return []string{auth.RoleHarness, auth.RoleApprover, auth.RoleAdmin}
	}
	return []string{auth.RoleHarness, auth.RoleAdmin}
}

// Lookup finds a tool by exact name.
func Lookup(name string) (*Tool, bool) {
	e, ok := registry[name]
	if !ok {
		return nil, false
	}
	return e.tool(), true
}

// registry holds every tool by name, each built on its first use: a CLI
// run looks up one tool, and building all of them (their parameters,
// gates and closures) was a measurable part of its start
// (bench/results/report.md, "CLI cold start").
var registry = map[string]*registered{}

// registered is one tool of the registry, built once by build.
type registered struct {
	name  string
	build func() *Tool
	once  sync.Once
	t     *Tool
}

func (r *registered) tool() *Tool {
	r.once.Do(func() {
		t := r.build()
		if t.Name != r.name {
			panic("tools: " + r.name + " builds the tool " + t.Name)
		}
		if t.Roles == nil {
			t.Roles = t.AllowedRoles()
		}
		if t.Title == "" {
			t.Title = titles[t.Name]
		}
		applyGate(t)
		t.Annotations.Destructive = t.Annotations.Destructive || destructive[t.Name]
		r.t = t
	})
	if r.t == nil {
		// Its build panicked once; every later lookup says so too.
		panic("tools: building the tool " + r.name + " failed")
	}
	return r.t
}

var groupSummaries = map[string]string{}

// GroupSummary describes a group of tools, for help.
func GroupSummary(group string) string { return groupSummaries[group] }

// RegisterGroup describes a group of dotted tool names.
func RegisterGroup(group, summary string) { groupSummaries[group] = summary }

// register adds the tool build makes under name; it is built on first use.
func register(name string, build func() *Tool) {
	if _, dup := registry[name]; dup {
		panic("tools: duplicate tool " + name)
	}
	registry[name] = &registered{name: name, build: build}
}

// Call validates raw arguments and runs the tool under its policy
// (execute), ungated: what a confirmed call ends in, and what tests and
// the linearizability checker call. Transports call CallGated or
// CallWith.
func Call(ctx context.Context, s *service.Service, name string, raw map[string]any) (Output, error) {
	return execute(ctx, s, name, raw, nil, CallOptions{})
}

// unknownTool is the refusal of a name no tool has.
func unknownTool(name string) error {
	return errs.E(errs.Usage, "unknown tool "+quote(name), errs.Step{Command: "dont tools", Description: "list the tools"})
}

// Validate checks types, required params and unknown names. JSON numbers
// arrive as float64; lists may arrive as []any or []string.
func (t *Tool) Validate(raw map[string]any) (Args, error) {
	a := Args{}
	known := map[string]*Param{}
	for i := range t.Params {
		known[t.Params[i].Name] = &t.Params[i]
	}
	for k, v := range raw {
		p, ok := known[k]
		if !ok {
			return nil, t.usage("unknown parameter " + quote(k))
		}
		if v == nil {
			continue
		}
		nv, ok := coerce(p.Type, v)
		if !ok {
			return nil, t.usage(fmt.Sprintf("parameter %s must be %s", p.Name, typeName(p.Type)))
		}
		if len(p.Enum) > 0 && !contains(p.Enum, nv) {
			return nil, t.usage(fmt.Sprintf("parameter %s must be one of %s", p.Name, strings.Join(p.Enum, ", ")))
		}
		a[k] = nv
	}
	for _, p := range t.Params {
		if _, ok := a[p.Name]; ok {
			continue
		}
		if p.Required {
			return nil, t.usage("missing required parameter " + p.Name)
		}
		if p.Default != nil {
			a[p.Name], _ = coerce(p.Type, p.Default)
		}
	}
	return a, nil
}

func (t *Tool) usage(msg string) error {
	return errs.E(errs.Usage, t.Name+": "+msg, errs.Step{Command: "dont " + cliPath(t.Name) + " --help", Description: "see the parameters of " + cliPath(t.Name)}).Unmet(msg)
}

func coerce(typ string, v any) (any, bool) {
	switch typ {
	case String:
		s, ok := v.(string)
		return s, ok
	case Boolean:
		b, ok := v.(bool)
		return b, ok
	case Number:
		f, ok := toFloat(v)
		return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
	case Integer:
		f, ok := toFloat(v)
		return f, ok && f == math.Trunc(f) && math.Abs(f) < 1<<31
	case Strings:
		switch l := v.(type) {
		case []string:
			return l, true
		case []any:
			out := make([]string, 0, len(l))
			for _, x := range l {
				s, ok := x.(string)
				if !ok {
					return nil, false
				}
				out = append(out, s)
			}
			return out, true
		}
	}
	return nil, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func contains(enum []string, v any) bool {
	s, _ := v.(string)
	for _, e := range enum {
		if e == s {
			return true
		}
	}
	return false
}

func typeName(t string) string {
	if t == Strings {
		return "a list of strings"
	}
	return "a " + t
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}
