// Package invariants is the guard every concurrency test, load run and
// `dont doctor` ends with. Check is a pure function over the data a store
// holds: it says whether each spawn (and approval) has at most one terminal
// event, whether each entity's stored status is the fold of its events, and
// whether anything pending is past its deadline. Read gathers that data
// through a small port that every store satisfies.
package invariants

import (
	"fmt"
	"sort"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Rules the checker enforces; each violation names one.
const (
	// RuleOneTerminal: a spawn or approval has at most one terminal event.
	RuleOneTerminal = "one-terminal-event"
	// RuleStatusIsFold: an entity's stored status equals ledger.Fold of its events.
	RuleStatusIsFold = "status-is-fold"
	// RuleNoOverdue: after a sweep, nothing pending is past its deadline.
	RuleNoOverdue = "no-overdue-pending"
	// RuleResolvedHasEvent: a resolved spawn has exactly the terminal event
	// that resolved it, with the same outcome; a pending one has none.
	RuleResolvedHasEvent = "resolution-recorded"
	// RulePendingLink: an entity's pending_spawn names a pending spawn of
	// that entity, and an entity has at most one pending verification spawn.
	RulePendingLink = "pending-link"
	// RuleFrameLog: the approvals frame-log audit (approvals.Audit) is clean.
	RuleFrameLog = "frame-log"
)

// TerminalKinds are the event kinds that end a spawn or an approval.
var TerminalKinds = map[ledger.EventKind]bool{
	ledger.EvSpawnResolved:    true,
	ledger.EvSpawnTimeout:     true,
	ledger.EvSpawnFailed:      true,
	ledger.EvSpawnCancelled:   true,
	ledger.EvApprovalResolved: true,
}

// Data is everything the checker looks at.
type Data struct {
	Entities []ledger.Entity
	// Events holds every event, in commit order per entity (entity-less
	// events, such as a guess spawn's request, included).
	Events []ledger.Event
	Spawns []spawn.Spawn
	// Approvals and Frames come from stores that hold tier escalations:
	// an approval's terminal event is the ending frame on its session's log.
	Approvals []approvals.Approval
	Frames    []approvals.Frame
}

// Violation is one broken rule.
type Violation struct {
	Rule      string `json:"rule"`
	ID        string `json:"id"`
	Message   string `json:"message"`
	Remediate string `json:"remediation"`
}

// Report is what Check found.
type Report struct {
	Entities   int         `json:"entities"`
	Events     int         `json:"events"`
	Spawns     int         `json:"spawns"`
	Approvals  int         `json:"approvals"`
	Violations []Violation `json:"violations"`
}

// OK reports whether no rule is broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Error summarises the violations (for tests: t.Fatal(rep.Error())).
func (r Report) Error() string {
	if r.OK() {
		return "no violations"
	}
	s := fmt.Sprintf("%d invariant violation(s):", len(r.Violations))
	for i, v := range r.Violations {
		if i == 20 {
			s += fmt.Sprintf("\n  … and %d more", len(r.Violations)-20)
			break
		}
		s += "\n  " + v.Rule + " " + v.ID + ": " + v.Message
	}
	return s
}

// Check applies every rule to d as of now (the time the sweep that
// preceded the read ran at). It does no I/O.
func Check(d Data, now time.Time) Report {
	rep := Report{Entities: len(d.Entities), Events: len(d.Events), Spawns: len(d.Spawns), Approvals: len(d.Approvals), Violations: []Violation{}}
	add := func(rule, id, remedy, format string, a ...any) {
		rep.Violations = append(rep.Violations, Violation{Rule: rule, ID: id, Message: fmt.Sprintf(format, a...), Remediate: remedy})
	}

	// Terminal events per request id.
	terminal := map[string][]ledger.Event{}
	byEntity := map[string][]ledger.Event{}
	for _, ev := range d.Events {
		if ev.EntityID != "" {
			byEntity[ev.EntityID] = append(byEntity[ev.EntityID], ev)
		}
		if TerminalKinds[ev.Kind] && ev.RequestID != "" {
			terminal[ev.RequestID] = append(terminal[ev.RequestID], ev)
		}
	}
	for _, f := range d.Frames {
		if f.Kind == approvals.FrameResolved {
			terminal[f.RequestID] = append(terminal[f.RequestID], ledger.Event{Kind: ledger.EvApprovalResolved, RequestID: f.RequestID, Outcome: string(f.Verdict)})
		}
	}
	for _, id := range sortedKeys(terminal) {
		if evs := terminal[id]; len(evs) > 1 {
			kinds := make([]string, len(evs))
			for i, ev := range evs {
				kinds[i] = string(ev.Kind) + "(" + ev.Outcome + ")"
			}
			add(RuleOneTerminal, id, "dont show "+evs[0].EntityID+" --history",
				"%d terminal events %v; exactly one resolver may commit per request id", len(evs), kinds)
		}
	}

	// Stored status is the fold of the entity's events.
	for _, e := range d.Entities {
		evs := byEntity[e.ID]
		if len(evs) == 0 {
			add(RuleStatusIsFold, e.ID, "dont show "+e.ID+" --history", "stored status %s but no events: nothing is written without its event", e.Status)
			continue
		}
		if f := ledger.Fold(evs); f != e.Status {
			add(RuleStatusIsFold, e.ID, "dont show "+e.ID+" --history", "stored status %s, but its %d events fold to %s", e.Status, len(evs), f)
		}
	}

	// Spawns: resolution recorded once, nothing overdue, pending links.
	pendingOf := map[string][]string{}
	spawns := map[string]spawn.Spawn{}
	for _, sp := range d.Spawns {
		spawns[sp.ID] = sp
		evs := terminal[sp.ID]
		switch sp.State {
		case spawn.Pending:
			if len(evs) > 0 {
				add(RuleResolvedHasEvent, sp.ID, "dont spawns --all --json", "pending, yet a terminal %s event was recorded", evs[0].Kind)
			}
			if !now.Before(sp.ExpiresAt) {
				add(RuleNoOverdue, sp.ID, "dont sweep", "pending past its deadline %s (checked at %s)",
					sp.ExpiresAt.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
			}
			if sp.EntityID != "" {
				pendingOf[sp.EntityID] = append(pendingOf[sp.EntityID], sp.ID)
			}
		case spawn.Resolved:
			if len(evs) == 0 {
				add(RuleResolvedHasEvent, sp.ID, "dont spawns --all --json", "resolved (%s) with no terminal event: a half-applied resolution", sp.Outcome)
			} else if evs[0].Outcome != string(sp.Outcome) && !(sp.Outcome == spawn.Failed && evs[0].Kind == ledger.EvSpawnFailed) {
				add(RuleResolvedHasEvent, sp.ID, "dont spawns --all --json", "resolved as %s but its terminal event says %s", sp.Outcome, evs[0].Outcome)
			}
		default:
			add(RuleResolvedHasEvent, sp.ID, "dont spawns --all --json", "unknown state %q", sp.State)
		}
	}
	for id := range terminal {
		if _, ok := spawns[id]; !ok && len(d.Spawns) > 0 && isSpawnID(id) {
			add(RuleResolvedHasEvent, id, "dont spawns --all --json", "a terminal event for a spawn the store does not hold")
		}
	}
	for _, e := range d.Entities {
		pend := pendingOf[e.ID]
		if len(pend) > 1 {
			sort.Strings(pend)
			add(RulePendingLink, e.ID, "dont spawns --pending --json", "%d pending verification spawns %v; at most one is allowed", len(pend), pend)
		}
		if e.PendingSpawn == "" {
			continue
		}
		sp, ok := spawns[e.PendingSpawn]
		switch {
		case !ok:
			add(RulePendingLink, e.ID, "dont show "+e.ID, "pending_spawn %s does not exist", e.PendingSpawn)
		case sp.State != spawn.Pending:
			add(RulePendingLink, e.ID, "dont show "+e.ID, "pending_spawn %s is already %s (%s)", e.PendingSpawn, sp.State, sp.Outcome)
		case sp.EntityID != e.ID:
			add(RulePendingLink, e.ID, "dont show "+e.ID, "pending_spawn %s belongs to %s", e.PendingSpawn, sp.EntityID)
		}
	}
	entities := make(map[string]ledger.Entity, len(d.Entities))
	for _, e := range d.Entities {
		entities[e.ID] = e
	}
	for _, sp := range d.Spawns {
		if sp.State != spawn.Pending || sp.EntityID == "" || sp.Kind == spawn.Guess {
			continue
		}
		if e, ok := entities[sp.EntityID]; ok && e.PendingSpawn != sp.ID {
			add(RulePendingLink, sp.ID, "dont show "+e.ID, "pending, but its entity %s names %q as its pending spawn", e.ID, e.PendingSpawn)
		}
	}

	// Approvals: one ending each, announced once resolved, none pending
	// past its deadline; and the approvals' own frame-log audit.
	for _, a := range d.Approvals {
		evs := terminal[a.ID]
		show := "dont approvals show " + a.ID
		switch {
		case a.State == approvals.Pending && len(evs) > 0:
			add(RuleResolvedHasEvent, a.ID, show, "pending, yet an ending frame (%s) was announced", evs[0].Outcome)
		case a.State == approvals.Pending && a.Asked && !now.Before(a.Deadline):
			add(RuleNoOverdue, a.ID, "dont sweep", "question pending past its deadline %s (checked at %s)", a.Deadline.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
		case a.State == approvals.Resolved && a.Asked && len(evs) == 0:
			add(RuleResolvedHasEvent, a.ID, show, "resolved (%s) but its ending was never announced", a.Verdict)
		case a.State == approvals.Resolved && len(evs) == 1 && evs[0].Outcome != string(a.Verdict):
			add(RuleResolvedHasEvent, a.ID, show, "resolved as %s but its ending frame says %s", a.Verdict, evs[0].Outcome)
		}
	}
	if len(d.Approvals) > 0 || len(d.Frames) > 0 {
		for _, f := range approvals.Audit(d.Approvals, d.Frames).Findings {
			id := f.RequestID
			if id == "" {
				id = f.SessionID
			}
			add(RuleFrameLog, id, "dont approvals audit --json", "frame %d of %s: %s", f.Cursor, f.SessionID, f.Problem)
		}
	}
	return rep
}

func isSpawnID(id string) bool { return len(id) > 6 && id[:6] == "spawn:" }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
