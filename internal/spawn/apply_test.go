package spawn_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// TestScenarios runs the scenario files of testdata/ against spawn.Apply
// alone: a map stands for the store, and a transition is committed only
// if what its step read is still stored (the condition every store
// applies). The same files run through the service on both stores
// (internal/service's TestSpawnScenarios*). The format is described in
// testdata/README.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasSuffix(path, "README") {
			return
		}
		w := newWorld()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return w.run(t, d)
		})
	})
}

// Base is the scenarios' time zero: at=90s is Base plus 90 seconds.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type world struct {
	entities map[string]ledger.Entity
	spawns   map[string]spawn.Spawn
}

func newWorld() *world {
	return &world{entities: map[string]ledger.Entity{}, spawns: map[string]spawn.Spawn{}}
}

func (w *world) run(t *testing.T, d *datadriven.TestData) string {
	a := args{t: t, d: d}
	switch d.Cmd {
	case "entity":
		id := a.str("id", "")
		e := ledger.Entity{ID: id, Kind: ledger.KindClaim, Statement: "the statement of " + id,
			Status: ledger.Status(a.str("status", string(ledger.Unverified))), Version: int64(a.int("version", 1))}
		if old, ok := w.entities[id]; ok { // someone else moved it: one more version
			e.Version, e.PendingSpawn, e.LastSpawn = old.Version+1, old.PendingSpawn, old.LastSpawn
		}
		w.entities[id] = e
		return w.entityLine(id)
	case "show":
		return w.show()
	}
	step := a.step()
	now := Base.Add(a.dur("at", 0))
	var out []string
	for round := 0; ; round++ {
		tr, err := spawn.Apply(w.snapshot(step), step, now)
		if err != nil {
			return "error " + string(errs.As(err).Code) + ": " + errs.As(err).Message
		}
		out = append(out, w.commit(tr)...)
		if tr.Effect != spawn.TimeoutFirst || round > 0 {
			return strings.Join(out, "\n")
		}
	}
}

// snapshot is what the step reads, as the service's executor loads it.
func (w *world) snapshot(step spawn.Step) spawn.Snapshot {
	var st spawn.Snapshot
	if step.Kind == spawn.StepIssue {
		if e, ok := w.entities[step.Issue.EntityID]; ok {
			st.Entity = &e
			if b, ok := w.spawns[e.PendingSpawn]; ok {
				st.Blocking = &b
			}
		}
		return st
	}
	sp, ok := w.spawns[step.Issue.ID]
	if !ok {
		return st
	}
	st.Spawn = &sp
	if e, ok := w.entities[sp.EntityID]; ok {
		st.Entity = &e
	}
	return st
}

// commit writes tr as a store would and describes what it did.
func (w *world) commit(tr spawn.Transition) []string {
	head := string(tr.Step) + ": " + string(tr.Effect)
	if tr.Outcome != "" {
		head += " outcome=" + string(tr.Outcome)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{tr.Late, "late"}, {tr.Restored, "restored"}, {tr.Capped, "capped"}} {
		if f.on {
			head += " " + f.name
		}
	}
	if tr.CascadeFrom != "" {
		head += " cascade-from=" + tr.CascadeFrom
	}
	if len(tr.Tally) > 0 {
		var ts []string
		for _, x := range tr.Tally {
			ts = append(ts, fmt.Sprintf("%q×%d", x.Answer, x.Count))
		}
		head += " tally=" + strings.Join(ts, ",")
	}
	out := []string{head}
	if tr.Effect != spawn.Write && tr.Effect != spawn.TimeoutFirst {
		return out
	}
	w.spawns[tr.Spawn.ID] = tr.Spawn
	out = append(out, spawnLine(tr.Spawn))
	if tr.Entity != nil {
		w.entities[tr.Entity.ID] = *tr.Entity
		out = append(out, w.entityLine(tr.Entity.ID))
	}
	for _, ev := range tr.Events {
		line := "event " + string(ev.Kind)
		if ev.From != "" || ev.To != "" {
			line += " " + string(ev.From) + "->" + string(ev.To)
		}
		if ev.Outcome != "" {
			line += " outcome=" + ev.Outcome
		}
		out = append(out, line)
	}
	return out
}

func (w *world) show() string {
	var ids []string
	for id := range w.entities {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []string
	for _, id := range ids {
		out = append(out, w.entityLine(id))
	}
	ids = ids[:0]
	for id := range w.spawns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, spawnLine(w.spawns[id]))
	}
	return strings.Join(out, "\n")
}

func (w *world) entityLine(id string) string {
	e := w.entities[id]
	line := fmt.Sprintf("entity %s %s v%d", e.ID, e.Status, e.Version)
	if e.PendingSpawn != "" {
		line += " pending=" + e.PendingSpawn
	}
	if e.Statement != "" && !strings.HasPrefix(e.Statement, "the statement of ") {
		line += fmt.Sprintf(" statement=%q", e.Statement)
	}
	return line
}

func spawnLine(sp spawn.Spawn) string {
	line := fmt.Sprintf("spawn %s %s %s", sp.ID, sp.Kind, sp.State)
	if sp.Outcome != "" {
		line += " " + string(sp.Outcome)
	}
	line += " expires=" + offset(sp.ExpiresAt)
	if sp.EntityID != "" {
		line += fmt.Sprintf(" on=%s pre=%s entity-version=%d", sp.EntityID, sp.PreStatus, sp.EntityVersion)
	}
	return line
}

func offset(at time.Time) string { return at.Sub(Base).String() }

// args reads a directive's key=value arguments.
type args struct {
	t *testing.T
	d *datadriven.TestData
}

func (a args) vals(key string) []string {
	for _, c := range a.d.CmdArgs {
		if c.Key == key {
			return c.Vals
		}
	}
	return nil
}

func (a args) has(key string) bool { return a.d.HasArg(key) }

func (a args) str(key, def string) string {
	if v := a.vals(key); len(v) > 0 {
		return v[0]
	}
	return def
}

func (a args) int(key string, def int) int {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		a.t.Fatalf("%s: %s=%q is not a number", a.d.Pos, key, v)
	}
	return n
}

func (a args) dur(key string, def time.Duration) time.Duration {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.t.Fatalf("%s: %s=%q is not a duration", a.d.Pos, key, v)
	}
	return d
}

// step is the directive's protocol step.
func (a args) step() spawn.Step {
	kind := spawn.StepKind(a.d.Cmd)
	if !kind.Valid() {
		a.t.Fatalf("%s: unknown directive %q", a.d.Pos, a.d.Cmd)
	}
	actor := spawn.Actor{ID: a.str("by", "agent-1"), Role: "harness"}
	if a.has("person") {
		actor = spawn.Actor{ID: "person", Role: "person", Person: true}
	}
	if tok := a.str("token", ""); tok != "" {
		actor = spawn.Actor{ID: "callback:" + tok, Role: "callback", Callback: true, CallbackFor: tok}
	}
	step := spawn.Step{Kind: kind, Actor: actor,
		Timeout: a.dur("timeout", 60*time.Second), MaxLease: a.dur("lease", 10*time.Minute), Extend: a.dur("extend", 0),
		EntityID: a.str("entity", ""), Reason: a.str("reason", ""), Evidence: a.vals("evidence"),
		Candidates: a.vals("candidates"), ClaimID: a.str("claim", ""), Author: "agent-1",
		Provider: a.str("provider", "fake"), FailCode: errs.Code(a.str("code", "provider-error")), FailError: "the provider failed",
	}
	step.Issue = spawn.Spawn{ID: a.str("id", ""), Kind: spawn.Kind(a.str("kind", "")), EntityID: step.EntityID,
		Mode: spawn.Mode(a.str("mode", string(spawn.ModeHarness))), Question: a.str("question", ""), N: a.int("n", 0)}
	switch a.str("action", "") {
	case "dismiss":
		step.Action = ledger.Verify
		if len(step.Evidence) == 0 {
			step.Evidence = []string{"https://example.org/source"}
		}
	case "trust":
		step.Action = ledger.Doubt
		if step.Reason == "" {
			step.Reason = "the claim fails for n = 0"
		}
	}
	return step
}
