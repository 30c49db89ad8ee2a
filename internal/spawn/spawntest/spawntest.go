// Package spawntest runs the spawn protocol's scenario files
// (internal/spawn/testdata, datadriven format: its README) against a
// World: the pure core alone (Pure), or the service's executor on a
// store (internal/storetest.SpawnWorld), so that one set of files says
// what every store does.
package spawntest

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

// Base is the scenarios' time zero: at=90s is Base plus 90 seconds.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is where a scenario's steps run. Ids are the scenario's names
// (claim:a, spawn:1): a world that needs real ids maps them both ways.
type World interface {
	// Entity stores a claim named id in status, or moves the stored one
	// to it (one more version, as another writer would).
	Entity(t *testing.T, id string, status ledger.Status) ledger.Entity
	// Step runs step at now through the world's executor: load what it
	// reads, spawn.Apply, commit on the condition of what was read
	// (and, after a TimeoutFirst, apply again).
	Step(t *testing.T, step spawn.Step, now time.Time) (spawn.Transition, error)
	// Stored is every entity and spawn the scenario made, as stored.
	Stored(t *testing.T) ([]ledger.Entity, []spawn.Spawn)
}

// Run runs every scenario file under dir, each against a world of its own.
func Run(t *testing.T, dir string, newWorld func(t *testing.T) World) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		if strings.HasSuffix(path, "README") {
			return
		}
		w := newWorld(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return run(t, w, d)
		})
	})
}

func run(t *testing.T, w World, d *datadriven.TestData) string {
	a := args{t: t, d: d}
	switch d.Cmd {
	case "entity":
		return entityLine(w.Entity(t, a.str("id", ""), ledger.Status(a.str("status", string(ledger.Unverified)))))
	case "show":
		es, sps := w.Stored(t)
		sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
		sort.Slice(sps, func(i, j int) bool { return sps[i].ID < sps[j].ID })
		var out []string
		for _, e := range es {
			out = append(out, entityLine(e))
		}
		for _, sp := range sps {
			out = append(out, spawnLine(sp))
		}
		return strings.Join(out, "\n")
	}
	tr, err := w.Step(t, a.step(), Base.Add(a.dur("at", 0)))
	if err != nil {
		return "error " + string(errs.As(err).Code) + ": " + errs.As(err).Message
	}
	var out []string
	if tr.TimedOut != nil {
		out = describe(*tr.TimedOut)
	}
	return strings.Join(append(out, describe(tr)...), "\n")
}

// describe says what a transition did.
func describe(tr spawn.Transition) []string {
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
	out = append(out, spawnLine(tr.Spawn))
	if tr.Entity != nil {
		out = append(out, entityLine(*tr.Entity))
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

func entityLine(e ledger.Entity) string {
	line := fmt.Sprintf("entity %s %s v%d", e.ID, e.Status, e.Version)
	if e.PendingSpawn != "" {
		line += " pending=" + e.PendingSpawn
	}
	if e.Statement != "" && !strings.HasPrefix(e.Statement, StatementPrefix) {
		line += fmt.Sprintf(" statement=%q", e.Statement)
	}
	return line
}

// StatementPrefix begins the statement of every claim an entity
// directive stores.
const StatementPrefix = "the statement of "

func spawnLine(sp spawn.Spawn) string {
	line := fmt.Sprintf("spawn %s %s %s", sp.ID, sp.Kind, sp.State)
	if sp.Outcome != "" {
		line += " " + string(sp.Outcome)
	}
	line += " expires=" + sp.ExpiresAt.Sub(Base).String()
	if sp.EntityID != "" {
		line += fmt.Sprintf(" on=%s pre=%s entity-version=%d", sp.EntityID, sp.PreStatus, sp.EntityVersion)
	}
	return line
}

// Pure is the world of the core alone: maps stand for the store, and a
// transition is committed as a store would commit it.
type Pure struct {
	entities map[string]ledger.Entity
	spawns   map[string]spawn.Spawn
}

// NewPure is an empty Pure world.
func NewPure(*testing.T) World {
	return &Pure{entities: map[string]ledger.Entity{}, spawns: map[string]spawn.Spawn{}}
}

// Entity implements World.
func (w *Pure) Entity(_ *testing.T, id string, status ledger.Status) ledger.Entity {
	e := ledger.Entity{ID: id, Kind: ledger.KindClaim, Statement: StatementPrefix + id, Status: status, Version: 1}
	if old, ok := w.entities[id]; ok {
		e = old
		e.Status, e.Version = status, old.Version+1
	}
	w.entities[id] = e
	return e
}

// Step implements World.
func (w *Pure) Step(_ *testing.T, step spawn.Step, now time.Time) (spawn.Transition, error) {
	var first *spawn.Transition
	for {
		tr, err := spawn.Apply(w.snapshot(step), step, now)
		if err != nil {
			return tr, err
		}
		if tr.Effect == spawn.Write || tr.Effect == spawn.TimeoutFirst {
			w.spawns[tr.Spawn.ID] = tr.Spawn
			if tr.Entity != nil {
				w.entities[tr.Entity.ID] = *tr.Entity
			}
		}
		if tr.Effect != spawn.TimeoutFirst {
			tr.TimedOut = first
			return tr, nil
		}
		first = &tr
	}
}

// Stored implements World.
func (w *Pure) Stored(*testing.T) ([]ledger.Entity, []spawn.Spawn) {
	var es []ledger.Entity
	for _, e := range w.entities {
		es = append(es, e)
	}
	var sps []spawn.Spawn
	for _, sp := range w.spawns {
		sps = append(sps, sp)
	}
	return es, sps
}

// snapshot is what the step reads, as the service's executor loads it.
func (w *Pure) snapshot(step spawn.Step) spawn.Snapshot {
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
	sp, ok := w.spawns[step.RequestID]
	if !ok {
		return st
	}
	st.Spawn = &sp
	if e, ok := w.entities[sp.EntityID]; ok {
		st.Entity = &e
	}
	return st
}

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
	step.RequestID = a.str("id", "")
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
