package confirm

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/present"
)

func str(s string) *string { return &s }

var (
	whole       = Gate{RequiresConfirmation: true}
	interactive = Gate{RequiresConfirmation: true, InteractiveOnly: true}
	// withDefault is "tokens manage": --op list|create|revoke, default list.
	withDefault = Gate{RequiresConfirmation: true, ConfirmationExempt: &Exempt{Param: "op", Values: []string{"list"}, Default: str("list")}}
	// noDefault is "spawns manage": --op list|show|cancel, no default.
	noDefault = Gate{RequiresConfirmation: true, ConfirmationExempt: &Exempt{Param: "op", Values: []string{"list", "show"}}}
)

func TestExemptionsMatchExactlyOnTheFinalArguments(t *testing.T) {
	cases := []struct {
		name string
		gate Gate
		args map[string]any
		want bool // exempt
	}{
		{"exempt value", withDefault, map[string]any{"op": "list"}, true},
		{"one of several exempt values", noDefault, map[string]any{"op": "show"}, true},
		{"omitted argument with a declared default", withDefault, map[string]any{}, true},
		{"omitted argument without a declared default", noDefault, map[string]any{}, false},
		{"another spelling", withDefault, map[string]any{"op": "LIST"}, false},
		{"surrounding whitespace", withDefault, map[string]any{"op": " list"}, false},
		{"non-string", withDefault, map[string]any{"op": 1.0}, false},
		{"null is not an omission", withDefault, map[string]any{"op": nil}, false},
		{"a list holding the value", withDefault, map[string]any{"op": []any{"list"}}, false},
		{"a gated value", withDefault, map[string]any{"op": "create"}, false},
		{"no exemption at all", whole, map[string]any{"op": "list"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.gate.Exempted(c.args); got != c.want {
				t.Fatalf("Exempted(%v) = %v, want %v", c.args, got, c.want)
			}
			if got := c.gate.Needs(c.args); got == c.want {
				t.Fatalf("Needs(%v) = %v", c.args, got)
			}
		})
	}
}

func TestDecideFollowsTheFlagsAndExitCodesTable(t *testing.T) {
	lock := map[string]any{"id": "claim:x"}
	with := func(k string, v any) map[string]any { return map[string]any{"id": "claim:x", k: v} }
	cases := []struct {
		name       string
		call       Call
		step       Step
		confirmed  bool
		deprecated bool
		warning    bool
		exit       int // for Refuse
		sent       map[string]any
	}{
		{"prompt on a normal gated action", Call{Gate: whole, Args: lock}, Ask, false, false, false, 0, lock},
		{"--yes on a normal action: no prompt, cli_confirmed", Call{Gate: whole, Args: lock, Yes: true}, Send, true, false, false, 0, lock},
		{"deprecated skip_confirmation true: forwarded verbatim, hint", Call{Gate: whole, Args: with(SkipParam, true)}, Send, false, true, false, 0, with(SkipParam, true)},
		{"deprecated auto_skip_confirmation true: forwarded verbatim, hint", Call{Gate: whole, Args: with(AutoSkipParam, true)}, Send, false, true, false, 0, with(AutoSkipParam, true)},
		{"falsy skip param prompts, no hint", Call{Gate: whole, Args: with(SkipParam, false)}, Ask, false, false, false, 0, lock},
		{"--yes with a skip param: cli_confirmed, skip dropped, no hint", Call{Gate: whole, Args: with(SkipParam, true), Yes: true}, Send, true, false, false, 0, lock},
		{"--yes on interactive-only: warning and prompt", Call{Gate: interactive, Args: lock, Yes: true}, Ask, false, false, true, 0, lock},
		{"skip param on interactive-only: warning and prompt, no hint", Call{Gate: interactive, Args: with(SkipParam, true)}, Ask, false, false, true, 0, lock},
		{"interactive-only without --yes: prompt, no warning", Call{Gate: interactive, Args: lock}, Ask, false, false, false, 0, lock},
		{"--no-input without --yes", Call{Gate: whole, Args: lock, NoInput: true}, Refuse, false, false, false, 2, nil},
		{"--no-input with --yes", Call{Gate: whole, Args: lock, NoInput: true, Yes: true}, Send, true, false, false, 0, lock},
		{"--no-input on interactive-only even with --yes", Call{Gate: interactive, Args: lock, NoInput: true, Yes: true}, Refuse, false, false, true, 2, nil},
		{"--args-file - without --yes", Call{Gate: whole, Args: lock, StdinArgs: true}, Refuse, false, false, false, 2, nil},
		{"--args-file - with --yes", Call{Gate: whole, Args: lock, StdinArgs: true, Yes: true}, Send, true, false, false, 0, lock},
		{"--args-file - with a truthy skip param (the cron caller)", Call{Gate: whole, Args: with(SkipParam, true), StdinArgs: true}, Send, false, true, false, 0, with(SkipParam, true)},
		{"--args-file - with an exempt value", Call{Gate: withDefault, Args: map[string]any{"op": "list"}, StdinArgs: true}, Send, false, false, false, 0, map[string]any{"op": "list"}},
		{"omitted argument with a declared exempt default", Call{Gate: withDefault, Args: map[string]any{}}, Send, false, false, false, 0, map[string]any{}},
		{"exempt value with a skip param: neither is sent, no hint", Call{Gate: withDefault, Args: map[string]any{"op": "list", SkipParam: true}}, Send, false, false, false, 0, map[string]any{"op": "list"}},
		{"another spelling is gated", Call{Gate: withDefault, Args: map[string]any{"op": "LIST"}}, Ask, false, false, false, 0, map[string]any{"op": "LIST"}},
		{"another spelling with --no-input exits 2", Call{Gate: withDefault, Args: map[string]any{"op": "LIST"}, NoInput: true}, Refuse, false, false, false, 2, nil},
		{"non-string is gated", Call{Gate: withDefault, Args: map[string]any{"op": 1.0}}, Ask, false, false, false, 0, map[string]any{"op": 1.0}},
		{"omitted without a declared default is gated", Call{Gate: noDefault, Args: map[string]any{}}, Ask, false, false, false, 0, map[string]any{}},
		{"skip_confirmation \"false\" exits 1", Call{Gate: whole, Args: with(SkipParam, "false")}, Refuse, false, false, false, 1, nil},
		{"skip_confirmation 1 exits 1", Call{Gate: whole, Args: with(SkipParam, 1.0)}, Refuse, false, false, false, 1, nil},
		{"skip_confirmation [] exits 1", Call{Gate: whole, Args: with(SkipParam, []any{})}, Refuse, false, false, false, 1, nil},
		{"auto_skip_confirmation null exits 1", Call{Gate: whole, Args: with(AutoSkipParam, nil)}, Refuse, false, false, false, 1, nil},
		{"non-gated tool: skip param sent as is (the server refuses it)", Call{Args: with(SkipParam, true)}, Send, false, false, false, 0, with(SkipParam, true)},
		{"feature off: never prompts, skip forwarded, no hint", Call{Gate: whole, Args: with(SkipParam, true)}, Send, false, false, false, 0, with(SkipParam, true)},
		{"feature off: --no-input does not refuse", Call{Gate: whole, Args: lock, NoInput: true}, Send, false, false, false, 0, lock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.call.Path = "dont lock"
			c.call.Feature = c.name[:11] != "feature off"
			p := Decide(c.call)
			if p.Step != c.step || p.CLIConfirmed != c.confirmed || p.Deprecated != c.deprecated || (p.Warning != "") != c.warning {
				t.Fatalf("plan %+v", p)
			}
			if c.step == Refuse {
				if present.Exit(p.Err) != c.exit {
					t.Fatalf("exit %d, want %d (%v)", present.Exit(p.Err), c.exit, p.Err)
				}
				if len(present.Remediation(p.Err)) == 0 {
					t.Fatal("no remediation")
				}
				return
			}
			if !reflect.DeepEqual(p.Args, c.sent) {
				t.Fatalf("sends %v, want %v", p.Args, c.sent)
			}
		})
	}
}

func TestTheSkipParameterErrorNamesTheParameterAndPrefersYes(t *testing.T) {
	p := Decide(Call{Path: "dont lock", Gate: whole, Feature: true, Args: map[string]any{AutoSkipParam: "true"}})
	if p.Err == nil || p.Err.Code != InvalidSkip || p.Err.Message[:47] != "auto_skip_confirmation must be a JSON boolean (" || !strings.Contains(p.Err.Message, "prefer --yes") {
		t.Fatalf("%+v", p.Err)
	}
}

func TestPromptAnswers(t *testing.T) {
	for _, a := range []string{"y", "yes", "Y", "YES", " yes \r\n", "y\n"} {
		if !Yes(a) {
			t.Errorf("%q declines", a)
		}
	}
	for _, a := range []string{"", "n", "no", "yess", "ye", "sure", "y y", "1", "true"} {
		if Yes(a) {
			t.Errorf("%q proceeds", a)
		}
	}
}

func TestDisplayMapsNamesToToolAndAction(t *testing.T) {
	for name, want := range map[string]string{"lock": "dont lock", "tokens.create": "tokens create", "spawns.cancel": "spawns cancel", "tokens.revoke-all": "tokens revoke-all"} {
		if got := Display(name); got != want {
			t.Errorf("Display(%s) = %s", name, got)
		}
	}
	if Prompt("dont lock") != "About to execute dont lock. Proceed? [y/N] " {
		t.Fatal(Prompt("dont lock"))
	}
}

func TestServerAdmitsConfirmedExemptAndLegacySkipCallsAndHoldsTheRest(t *testing.T) {
	lock := map[string]any{"id": "claim:x"}
	with := func(k string, v any) map[string]any { return map[string]any{"id": "claim:x", k: v} }
	contract := Arrival{Contract: true, CLIConfirmed: true}
	cases := []struct {
		name    string
		gate    Gate
		args    map[string]any
		arrival Arrival
		want    Verdict
	}{
		{"ungated", Gate{}, lock, Arrival{}, Execute},
		{"gated, nobody confirmed", whole, lock, Arrival{}, Hold},
		{"cli_confirmed under the contract", whole, lock, contract, Execute},
		{"cli_confirmed outside the contract is ignored", whole, lock, Arrival{CLIConfirmed: true}, Hold},
		{"contract without cli_confirmed (stale CLI cache)", whole, lock, Arrival{Contract: true}, Hold},
		{"legacy skip_confirmation true", whole, with(SkipParam, true), Arrival{}, Execute},
		{"legacy auto_skip_confirmation true", whole, with(AutoSkipParam, true), Arrival{}, Execute},
		{"skip_confirmation false", whole, with(SkipParam, false), Arrival{}, Hold},
		{"skip params are stripped on interactive-only", interactive, with(SkipParam, true), Arrival{}, Hold},
		{"interactive-only confirmed by a CLI", interactive, lock, contract, Execute},
		{"exempt value", withDefault, map[string]any{"op": "list"}, Arrival{}, Execute},
		{"declared default", withDefault, map[string]any{}, Arrival{}, Execute},
		{"no default", noDefault, map[string]any{}, Arrival{}, Hold},
		{"other spelling", withDefault, map[string]any{"op": "List"}, Arrival{}, Hold},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, v, err := Admit(c.gate, c.args, c.arrival)
			if err != nil || v != c.want {
				t.Fatalf("verdict %v err %v", v, err)
			}
			if c.gate.Gated() {
				if _, ok := run[SkipParam]; ok {
					t.Fatal("skip param reaches the tool")
				}
			}
		})
	}
	if _, _, err := Admit(whole, with(SkipParam, "yes"), Arrival{}); present.Exit(err) != 1 {
		t.Fatalf("non-boolean skip: %v", err)
	}
	if run, v, err := Admit(Gate{}, with(SkipParam, "yes"), Arrival{}); err != nil || v != Execute || run[SkipParam] != "yes" {
		t.Fatal("an ungated tool must see the unknown parameter and refuse it itself")
	}
}

func TestPendingConfirmationLifecycle(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	p := Pending{ID: "conf:x", Tool: "lock", State: StatePending, RequestedAt: t0, ExpiresAt: t0.Add(DefaultTTL)}
	claimed, dup, err := p.Claim("tok:a", t0.Add(time.Minute))
	if err != nil || dup || claimed.State != StateExecuting || claimed.DecidedBy != "tok:a" {
		t.Fatalf("first claim: %+v %v %v", claimed, dup, err)
	}
	if _, dup, err := claimed.Claim("tok:b", t0.Add(2*time.Minute)); err != nil || !dup {
		t.Fatal("a second claim must be a duplicate")
	}
	done := claimed.Finish(Outcome{OK: true, Kind: "claim"})
	if _, dup, _ := done.Claim("tok:b", t0); !dup {
		t.Fatal("a claim after execution must be a duplicate")
	}
	if _, err := done.Refuse("tok:b", "", t0); present.Exit(err) != 1 {
		t.Fatal("an executed call cannot be refused")
	}
	if _, _, err := p.Claim("tok:a", t0.Add(DefaultTTL)); err == nil || p.StateAt(t0.Add(DefaultTTL)) != StateExpired {
		t.Fatal("an expired confirmation must not run")
	}
	refused, err := p.Refuse("tok:a", "no", t0)
	if err != nil || refused.State != StateRefused {
		t.Fatal(err)
	}
	if _, _, err := refused.Claim("tok:b", t0); present.Exit(err) != 1 {
		t.Fatal("a refused confirmation must not run")
	}
}

func TestCapsAndCacheNames(t *testing.T) {
	c := ParseCaps("cli-confirm-v1, cli-yes-only-v1")
	if !c.Confirms() || !c.YesOnly() {
		t.Fatal(c)
	}
	if c := ParseCaps("cli-confirm-v1"); !c.Confirms() || c.YesOnly() {
		t.Fatal(c)
	}
	if c := ParseCaps("cli-yes-only-v1"); c.Confirms() || c.YesOnly() {
		t.Fatal(c)
	}
	a, b := CacheName(CLICaps, "e1"), CacheName(CapConfirm, "e1")
	if a == b || a != "tools.cli-confirm-v1+cli-yes-only-v1.e1.json" {
		t.Fatalf("%s %s", a, b)
	}
}
