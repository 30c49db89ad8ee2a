package confirm

import (
	"time"

	"github.com/dont-cli/dont/internal/errs"
)

// Arrival is how a call reached the server-side gate.
type Arrival struct {
	// Contract: the server-side gate (a server setting) is on, so the
	// server honours cli_confirmed.
	Contract bool
	// CLIConfirmed is the body's cli_confirmed. It counts only under the
	// contract; anywhere else it is ignored and the server's own flow applies.
	CLIConfirmed bool
}

// Verdict is what the server does with a call.
type Verdict int

// Server verdicts.
const (
	// Execute the call now.
	Execute Verdict = iota
	// Hold it as a pending confirmation; it runs once an approver confirms.
	Hold
)

// Admit is the server-side gate. It returns the arguments to run (a gated
// action's skip parameters removed: they are instructions to the gate,
// not to the tool) and the verdict. A gated call runs at once when its
// arguments are exempt, when a client confirmed it with a person while the
// gate is on (cli_confirmed), or —
// deprecated, and never for an interactive-only action, whose skip
// parameters are stripped — when a skip parameter is true.
func Admit(g Gate, args map[string]any, a Arrival) (map[string]any, Verdict, error) {
	if !g.Gated() {
		return args, Execute, nil
	}
	skips, err := SkipValues(args)
	if err != nil {
		return nil, Hold, err
	}
	run := WithoutSkip(args)
	switch {
	case g.Exempted(run):
		return run, Execute, nil
	case a.Contract && a.CLIConfirmed:
		return run, Execute, nil
	case !g.InteractiveOnly && anyTrue(skips):
		return run, Execute, nil
	}
	return run, Hold, nil
}

// State is where a pending confirmation stands.
type State string

// States of a pending confirmation. pending → executing → executed is the
// confirm path (the first conditional write from pending wins, so the call
// runs at most once); pending → refused and pending → expired end it
// without running anything.
const (
	StatePending   State = "pending"
	StateExecuting State = "executing"
	StateExecuted  State = "executed"
	StateRefused   State = "refused"
	StateExpired   State = "expired"
	// StateRevoked: the token that asked was revoked before anyone
	// confirmed; the held call never runs.
	StateRevoked State = "revoked"
)

// Valid reports whether s is one of the states.
func (s State) Valid() bool {
	switch s {
	case StatePending, StateExecuting, StateExecuted, StateRefused, StateExpired, StateRevoked:
		return true
	}
	return false
}

// DefaultTTL is how long a pending confirmation waits for an approver.
const DefaultTTL = time.Hour

// Pending is a held call waiting for an approver.
type Pending struct {
	ID          string         `json:"confirmation_id"`
	Tool        string         `json:"tool"`
	Args        map[string]any `json:"args"`
	State       State          `json:"state"`
	RequestedBy string         `json:"requested_by,omitempty"`
	RequestedAt time.Time      `json:"requested_at"`
	ExpiresAt   time.Time      `json:"expires_at"`
	DecidedBy   string         `json:"decided_by,omitempty"`
	DecidedAt   *time.Time     `json:"decided_at,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	// Outcome summarises what the confirmed call did. It never holds the
	// call's data: a created token's secret is shown once, to the confirmer.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Outcome is the summary of an executed call.
type Outcome struct {
	OK      bool   `json:"ok"`
	Kind    string `json:"envelope_kind"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Codes of the server's own flow.
const (
	NotFound    errs.Code = "confirmation-not-found"
	Closed      errs.Code = "confirmation-closed"
	Unavailable errs.Code = "confirmations-unavailable"
	// Revoked: the held call's requester lost its token; nothing ran.
	Revoked errs.Code = "confirmation-revoked"
	// NeverHeld: an interactive-only action reached the server with no
	// person's confirmation. Such calls are refused, never held: only a
	// person at a client may confirm them.
	NeverHeld errs.Code = "interactive-only"
	// Declined: the person asked to confirm a gated call at their client
	// (an MCP host's elicitation) declined or dismissed it; nothing ran and
	// nothing is held.
	Declined errs.Code = "confirmation-declined"
)

// StateAt is the state as of now: a pending confirmation past its deadline is expired.
func (p Pending) StateAt(now time.Time) State {
	if p.State == StatePending && !now.Before(p.ExpiresAt) {
		return StateExpired
	}
	return p.State
}

// Claim is the write a confirm makes. dup is true when another confirm
// got there first (executing or executed): the caller changes nothing and
// reports the existing state. A refused or expired confirmation is closed.
func (p Pending) Claim(by string, now time.Time) (next Pending, dup bool, err error) {
	switch p.StateAt(now) {
	case StatePending:
		next = p
		next.State, next.DecidedBy, next.DecidedAt = StateExecuting, by, &now
		return next, false, nil
	case StateExecuting, StateExecuted:
		return p, true, nil
	case StateRevoked:
		return p, false, errs.E(Revoked, p.ID+" was dropped when "+p.RequestedBy+", the token that asked, was revoked; nothing ran").
			On(p.ID).In("confirm.claim").Unmet("the requester's token is live")
	case StateExpired:
		return p, false, errs.E(Closed, p.ID+" expired at "+p.ExpiresAt.Format(time.RFC3339)+" before anyone confirmed it; nothing ran").
			On(p.ID).In("confirm.claim").Unmet("confirmed before expires_at")
	}
	return p, false, errs.E(Closed, p.ID+" was "+string(p.State)+" by "+orSomeone(p.DecidedBy)+"; nothing ran").
		On(p.ID).In("confirm.claim").Unmet("state pending")
}

// Refuse ends a pending confirmation without running it.
func (p Pending) Refuse(by, reason string, now time.Time) (Pending, error) {
	switch st := p.StateAt(now); st {
	case StatePending:
		p.State, p.DecidedBy, p.DecidedAt, p.Reason = StateRefused, by, &now, reason
		return p, nil
	case StateExpired:
		return p, errs.E(Closed, p.ID+" already expired; nothing ran").On(p.ID).In("confirm.refuse").Unmet("state pending")
	default:
		return p, errs.E(Closed, p.ID+" is already "+string(st)+"; a refusal cannot undo it").
			On(p.ID).In("confirm.refuse").Unmet("state pending")
	}
}

// Revoke records that the requester's token was revoked (a conditional
// write from pending).
func (p Pending) Revoke(now time.Time) Pending {
	p.State, p.DecidedAt, p.Reason = StateRevoked, &now, "the token that asked was revoked"
	return p
}

// Expire records that the deadline passed (a conditional write from pending).
func (p Pending) Expire() Pending {
	p.State = StateExpired
	return p
}

// Finish records what the claimed call did.
func (p Pending) Finish(o Outcome) Pending {
	p.State, p.Outcome = StateExecuted, &o
	return p
}

func orSomeone(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}
