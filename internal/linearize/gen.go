package linearize

import (
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ledger"
	"pgregory.net/rapid"
)

// Mix weighs the operations a generated scenario draws from.
type Mix struct {
	Expire    bool // the backend has a queue-driven timeout
	Cancel    bool // the backend offers spawns.cancel
	Approvals bool // the backend keeps sessions and approvals
	// TickMax bounds one clock advance; the spawn timeout is Timeout.
	TickMax time.Duration
	Timeout time.Duration
}

// GenScenario draws a scenario: 1–3 fresh entities, 2–6 clients, each with
// up to 12 steps mixing spawns, callbacks (latest, older and unknown
// request ids), plain moves, sweeps, expiries, reads and clock advances.
func GenScenario(t *rapid.T, m Mix) Scenario {
	shapes := []string{"mix", "spawn race"}
	if m.Approvals {
		shapes = append(shapes, "approval race")
	}
	switch rapid.SampledFrom(shapes).Draw(t, "shape") {
	case "spawn race":
		return GenRace(t, m)
	case "approval race":
		return GenApprovalRace(t, m)
	}
	sc := Scenario{Entities: rapid.IntRange(1, 3).Draw(t, "entities")}
	clients := rapid.IntRange(2, 6).Draw(t, "clients")
	kinds := []Kind{Assume, Assume, Assume, Callback, Callback, Callback, Callback, Move, Sweep, Sweep, Show, Guess, GuessAnswer, Heartbeat}
	if m.Expire {
		kinds = append(kinds, Expire, Expire)
	}
	if m.Cancel {
		kinds = append(kinds, SpawnCancel)
	}
	for c := 0; c < clients; c++ {
		n := rapid.IntRange(1, 12).Draw(t, "steps")
		steps := make([]Step, 0, n)
		for i := 0; i < n; i++ {
			if rapid.IntRange(0, 3).Draw(t, "tick?") == 0 {
				steps = append(steps, Step{Tick: time.Duration(rapid.Int64Range(1, int64(m.TickMax)).Draw(t, "tick"))})
				continue
			}
			st := Step{
				Kind:   rapid.SampledFrom(kinds).Draw(t, "kind"),
				Entity: rapid.IntRange(0, sc.Entities-1).Draw(t, "entity"),
				Target: rapid.SampledFrom([]Target{Latest, Latest, Latest, Latest, Older, Older, Unknown}).Draw(t, "target"),
			}
			switch st.Kind {
			case Callback:
				st.Action = rapid.SampledFrom([]ledger.Action{ledger.Verify, ledger.Doubt}).Draw(t, "verdict")
			case Move:
				st.Action = rapid.SampledFrom([]ledger.Action{ledger.Verify, ledger.Doubt, ledger.Reopen, ledger.Verify, ledger.Doubt, ledger.Lock}).Draw(t, "action")
			case Heartbeat:
				st.Extend = genExtend(t, m)
			}
			steps = append(steps, st)
		}
		sc.Clients = append(sc.Clients, steps)
	}
	return sc
}

// GenRace draws the race scenarios of docs/design.md §5.4 on one entity:
// a spawn is issued (perhaps after the entity was verified or doubted), its
// deadline perhaps passes, and then 2–6 clients race callbacks, sweeps,
// expiries, moves and reads — timeout against callback, duplicate
// callbacks, late callbacks.
func GenRace(t *rapid.T, m Mix) Scenario {
	if rapid.IntRange(0, 3).Draw(t, "guess race?") == 0 {
		return genGuessRace(t, m)
	}
	sc := Scenario{Entities: 1}
	if before := rapid.SampledFrom([]ledger.Action{"", ledger.Verify, ledger.Doubt}).Draw(t, "before"); before != "" {
		sc.Prelude = append(sc.Prelude, Step{Kind: Move, Action: before})
	}
	sc.Prelude = append(sc.Prelude, Step{Kind: Assume})
	if moved := rapid.SampledFrom([]ledger.Action{"", "", ledger.Verify, ledger.Doubt}).Draw(t, "moved under the spawn"); moved != "" {
		sc.Prelude = append(sc.Prelude, Step{Kind: Move, Action: moved})
	}
	if rapid.IntRange(0, 3).Draw(t, "expired?") > 0 {
		// land just before, at, or after the deadline
		d := m.Timeout + time.Duration(rapid.Int64Range(-int64(m.Timeout)/10, int64(m.Timeout)/5).Draw(t, "past"))
		sc.Prelude = append(sc.Prelude, Step{Tick: d})
	}
	kinds := []Kind{Callback, Callback, Callback, Sweep, Sweep, Move, Show, Assume, Heartbeat, Heartbeat}
	if m.Expire {
		kinds = append(kinds, Expire, Expire)
	}
	if m.Cancel {
		kinds = append(kinds, SpawnCancel, SpawnCancel)
	}
	clients := rapid.IntRange(2, 6).Draw(t, "clients")
	for c := 0; c < clients; c++ {
		n := rapid.IntRange(1, 4).Draw(t, "steps")
		var steps []Step
		for i := 0; i < n; i++ {
			st := Step{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Target: rapid.SampledFrom([]Target{Latest, Latest, Latest, Older}).Draw(t, "target")}
			switch st.Kind {
			case Callback:
				st.Action = rapid.SampledFrom([]ledger.Action{ledger.Verify, ledger.Doubt}).Draw(t, "verdict")
			case Move:
				st.Action = rapid.SampledFrom([]ledger.Action{ledger.Verify, ledger.Doubt, ledger.Reopen}).Draw(t, "action")
			case Heartbeat:
				st.Extend = genExtend(t, m)
			}
			steps = append(steps, st)
		}
		sc.Clients = append(sc.Clients, steps)
	}
	return sc
}

// GenApprovalRace draws tier-escalation races: a question is asked, its
// deadline perhaps passes, then 2–6 clients race approvals, refusals,
// cancellations, sweeps, expiries, reads — and perhaps another question.
// First answer wins; an answer at or after the deadline is a timeout.
func GenApprovalRace(t *rapid.T, m Mix) Scenario {
	sc := Scenario{Entities: 1, Prelude: []Step{{Kind: Ask}}}
	if rapid.IntRange(0, 2).Draw(t, "expired?") > 0 {
		d := m.Timeout + time.Duration(rapid.Int64Range(-int64(m.Timeout)/10, int64(m.Timeout)/5).Draw(t, "past"))
		sc.Prelude = append(sc.Prelude, Step{Tick: d})
	}
	kinds := []Kind{Answer, Answer, Answer, Answer, Sweep, ApprovalShow, Ask}
	if m.Expire {
		kinds = append(kinds, ApprovalExpire, ApprovalExpire)
	}
	verdicts := []ledger.Action{verdictAction(approvals.Approved), verdictAction(approvals.Refused), verdictAction(approvals.Cancelled)}
	clients := rapid.IntRange(2, 6).Draw(t, "clients")
	for c := 0; c < clients; c++ {
		n := rapid.IntRange(1, 4).Draw(t, "steps")
		var steps []Step
		for i := 0; i < n; i++ {
			st := Step{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Target: rapid.SampledFrom([]Target{Latest, Latest, Latest, Older}).Draw(t, "target")}
			if st.Kind == Answer {
				st.Action = rapid.SampledFrom(verdicts).Draw(t, "verdict")
			}
			if rapid.IntRange(0, 5).Draw(t, "tick?") == 0 {
				steps = append(steps, Step{Tick: time.Duration(rapid.Int64Range(1, int64(m.Timeout)/4).Draw(t, "tick"))})
			}
			steps = append(steps, st)
		}
		sc.Clients = append(sc.Clients, steps)
	}
	return sc
}

// genGuessRace: a guess spawn is issued, its deadline perhaps passes, then
// clients race answers (duplicates, late ones) against sweeps.
func genGuessRace(t *rapid.T, m Mix) Scenario {
	sc := Scenario{Entities: 1, Prelude: []Step{{Kind: Guess}}}
	if rapid.IntRange(0, 2).Draw(t, "expired?") > 0 {
		d := m.Timeout + time.Duration(rapid.Int64Range(-int64(m.Timeout)/10, int64(m.Timeout)/5).Draw(t, "past"))
		sc.Prelude = append(sc.Prelude, Step{Tick: d})
	}
	clients := rapid.IntRange(2, 5).Draw(t, "clients")
	for c := 0; c < clients; c++ {
		n := rapid.IntRange(1, 3).Draw(t, "steps")
		var steps []Step
		for i := 0; i < n; i++ {
			steps = append(steps, Step{Kind: rapid.SampledFrom([]Kind{GuessAnswer, GuessAnswer, Sweep, Guess}).Draw(t, "kind"),
				Target: rapid.SampledFrom([]Target{Latest, Latest, Older}).Draw(t, "target")})
		}
		sc.Clients = append(sc.Clients, steps)
	}
	return sc
}

// genExtend draws a heartbeat's --extend: shorter than what is left of
// a fresh spawn (it moves nothing), about the timeout, or well past it.
func genExtend(t *rapid.T, m Mix) time.Duration {
	return rapid.SampledFrom([]time.Duration{m.Timeout / 4, m.Timeout, 2 * m.Timeout}).Draw(t, "extend")
}

// verdictAction carries an Answer step's verdict in its Action.
func verdictAction(v approvals.Verdict) ledger.Action { return ledger.Action(v) }
