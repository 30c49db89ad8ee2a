package linearize_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/linearize"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"pgregory.net/rapid"
)

// The operation budget per backend: CI runs the default (go test without
// -short); go test -short runs a twentieth of it, at least shortBudget
// operations per backend, so every backend's histories are still checked;
// a long run is
//
//	DONT_LINEARIZE_OPS=100000 go test ./internal/linearize/ -run Linearizable -v -timeout 2h
//
// and DONT_LINEARIZE_BACKENDS=sqlite,http,serve picks backends.
// DONT_LINEARIZE_OPS wins over -short. DONT_LINEARIZE_FAULT_SEED sets the
// dynamo-faults run's fault seed (logged at its start); the faults land
// on the requests in the order the concurrent clients send them, so a
// seed repeats the plan, not always the run.
func budget(def int) int {
	if n, err := strconv.Atoi(os.Getenv("DONT_LINEARIZE_OPS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return max(def/20, shortBudget)
	}
	return def
}

const shortBudget = 50

func wanted(name string) bool {
	list := os.Getenv("DONT_LINEARIZE_BACKENDS")
	return list == "" || strings.Contains(","+list+",", ","+name+",")
}

type backendCase struct {
	name   string
	open   func(t *testing.T) linearize.Backend
	mix    linearize.Mix
	budget int
}

var manual = linearize.Mix{TickMax: 12 * time.Second, Timeout: 10 * time.Second}

func backends() []backendCase {
	return []backendCase{
		{"sqlite", func(t *testing.T) linearize.Backend {
			b, err := linearize.NewSQLite(t.TempDir(), 6, manual.Timeout)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, linearize.Mix{Expire: true, Cancel: true, Approvals: true, TickMax: manual.TickMax, Timeout: manual.Timeout}, 3000},
		{"http", func(t *testing.T) linearize.Backend {
			b, err := linearize.NewHTTP(t.TempDir(), manual.Timeout)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, linearize.Mix{Cancel: true, Approvals: true, TickMax: manual.TickMax, Timeout: manual.Timeout}, 2000},
		{"serve", func(t *testing.T) linearize.Backend {
			b, err := linearize.NewServe(t.TempDir(), 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, linearize.Mix{Cancel: true, Approvals: true, TickMax: 150 * time.Millisecond, Timeout: 300 * time.Millisecond}, 1000},
		{"serve-crash", func(t *testing.T) linearize.Backend {
			seed := faultSeed(t)
			b, err := linearize.NewServeCrashing(t.TempDir(), 300*time.Millisecond, seed, time.Second, 0.03)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c := b.(linearize.Crashes)
				line := fmt.Sprintf("serve-crash: %d SIGKILLs of dont serve, responses dropped and connections reset: %s", c.Kills(), c.Faults().Summary())
				t.Log(line)
				summarise(t, line)
			})
			return b
		}, linearize.Mix{Cancel: true, Approvals: true, TickMax: 150 * time.Millisecond, Timeout: 300 * time.Millisecond}, 1000},
		{"dynamo", func(t *testing.T) linearize.Backend {
			b, _, err := linearize.NewDynamo(dynamoEndpoint(t), 6, manual.Timeout, 0)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, linearize.Mix{Expire: true, Cancel: true, Approvals: true, TickMax: manual.TickMax, Timeout: manual.Timeout}, 1500},
		{"dynamo-faults", func(t *testing.T) linearize.Backend {
			seed := faultSeed(t)
			b, ft, err := linearize.NewDynamo(dynamoEndpoint(t), 6, manual.Timeout, seed, faults.Mixed()...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				t.Logf("faults injected into the dynamo-faults run: %s", ft.Summary())
				summarise(t, "faults injected into the dynamo-faults run (linearizable, 0 invariant violations): "+ft.Summary())
				t.Logf("faults by operation: %v", faults.SortedCounts(ft.CountsByOperation()))
			})
			return b
		}, linearize.Mix{Expire: true, Cancel: true, Approvals: true, TickMax: manual.TickMax, Timeout: manual.Timeout}, 1500},
	}
}

// faultSeed is DONT_LINEARIZE_FAULT_SEED, else the time; it is logged.
func faultSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("DONT_LINEARIZE_FAULT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("fault seed %d (DONT_LINEARIZE_FAULT_SEED)", seed)
	return seed
}

// TestLinearizable: concurrent clients' histories of spawns, callbacks
// (duplicates, late ones, unknown ids), plain moves, sweeps, expiries and
// reads are linearizable with respect to the resolver rules, on every
// backend; and every run ends with the invariant checker.
func TestLinearizable(t *testing.T) {
	for _, bc := range backends() {
		t.Run(bc.name, func(t *testing.T) {
			if !wanted(bc.name) {
				t.Skip("not in DONT_LINEARIZE_BACKENDS")
			}
			b := bc.open(t)
			defer b.Close()
			n := checkMany(t, b, bc.mix, budget(bc.budget))
			rep := invariants.Require(t, b.Service())
			t.Logf("linearizability: backend=%s operations=%d checked=%d indeterminate=%d scenarios=%d; invariants: %d entities, %d events, %d spawns, %d approvals, 0 violations",
				bc.name, n.ops, n.checked, n.indeterminate, n.scenarios, rep.Entities, rep.Events, rep.Spawns, rep.Approvals)
			t.Logf("what the %s operations saw: %v", bc.name, n.stats)
			summarise(t, fmt.Sprintf("linearizability: backend=%s operations=%d checked=%d scenarios=%d; invariants: %d entities, %d events, %d spawns, %d approvals, 0 violations",
				bc.name, n.ops, n.checked, n.scenarios, rep.Entities, rep.Events, rep.Spawns, rep.Approvals))
		})
	}
}

// summarise appends a line to $DONT_LINEARIZE_SUMMARY, if set: CI prints
// the counts per backend without running the check a second time.
func summarise(t *testing.T, line string) {
	path := os.Getenv("DONT_LINEARIZE_SUMMARY")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

type counts struct {
	ops, checked, scenarios, indeterminate int
	stats                                  map[string]int
}

func checkMany(t *testing.T, b linearize.Backend, mix linearize.Mix, budget int) counts {
	n := counts{stats: map[string]int{}}
	var done atomic.Bool
	for !done.Load() {
		rapid.Check(t, func(rt *rapid.T) {
			if done.Load() {
				return
			}
			res, err := linearize.RunDrawn(context.Background(), b, linearize.GenHistory(rt, mix), nil, time.Minute)
			if err != nil {
				rt.Fatalf("%s: %v", b.Name(), err)
			}
			if res.Outcome != porcupine.Ok {
				rt.Fatalf("%s: history of %d operations is %s; visualisation: %s%s", b.Name(), res.Ops, res.Outcome, res.Visualise, res.Detail)
			}
			n.ops += res.Ops
			n.checked += res.Checked
			n.indeterminate += res.Indeterminate
			n.scenarios++
			for k, v := range res.Stats {
				n.stats[k] += v
			}
			if n.ops >= budget {
				done.Store(true)
			}
		})
	}
	return n
}

// staleSpawns is a deliberately broken store: spawn reads come from a
// stale replica that still says pending, and a write whose spawn
// condition fails is retried without it (no conditional write). Two
// resolvers can then both apply — what the checkers exist to catch.
type staleSpawns struct{ store.Store }

func (s staleSpawns) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	sp, err := s.Store.GetSpawn(ctx, id)
	if err == nil && sp.EntityID != "" {
		sp.State, sp.Outcome, sp.ResolvedAt = spawn.Pending, "", nil
	}
	return sp, err
}

func (s staleSpawns) Commit(ctx context.Context, tx store.Tx) error {
	err := s.Store.Commit(ctx, tx)
	var cf *store.ConditionFailed
	if errors.As(err, &cf) && len(tx.Spawns) == 1 && !tx.Spawns[0].Create && cf.ID == tx.Spawns[0].Spawn.ID {
		tx.Spawns = nil
		return s.Store.Commit(ctx, tx)
	}
	return err
}

// TestABrokenStoreIsNotLinearizable shows the check can fail: against a
// store that lost its conditional write, the history is rejected and the
// invariant checker finds two terminal events for one request id.
func TestABrokenStoreIsNotLinearizable(t *testing.T) {
	b, err := linearize.NewSQLiteWrapped(t.TempDir(), 4, manual.Timeout, func(st store.Store) store.Store { return staleSpawns{st} })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := linearize.Step{Entity: 0}
	assume, dup := e, e
	assume.Kind = linearize.Assume
	dup.Kind, dup.Action, dup.Target = linearize.Callback, "dismiss", linearize.Latest
	trust := dup
	trust.Action = "trust"
	sc := linearize.Scenario{Entities: 1, Clients: [][]linearize.Step{{assume, dup, trust}}}
	res, err := linearize.Run(context.Background(), b, sc, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != porcupine.Illegal {
		t.Fatalf("a double resolution passed the linearizability check: %s", res.Outcome)
	}
	rep, err := invariants.Verify(context.Background(), b.Service())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range rep.Violations {
		found = found || v.Rule == invariants.RuleOneTerminal
	}
	if !found {
		t.Fatalf("the invariant checker missed the double resolution: %s", rep.Error())
	}
}

// A failing history is replayed from its printed seed: the clients' steps
// run one at a time in an order drawn from the seed, so on a backend with
// a controlled clock two replays make the same calls, in the same order,
// at the same clock readings, and get the same responses.
func TestAReplayRepeatsTheHistoryOfItsSeed(t *testing.T) {
	var sqliteBackend linearize.ProofBackend
	for _, pb := range linearize.ProofBackends("") {
		if pb.Name == "sqlite" {
			sqliteBackend = pb
		}
	}
	for seed := uint64(1); seed <= 12; seed++ {
		first, err := linearize.Replay(context.Background(), sqliteBackend, seed)
		if err != nil {
			t.Fatal(err)
		}
		again, err := linearize.Replay(context.Background(), sqliteBackend, seed)
		if err != nil {
			t.Fatal(err)
		}
		if first.Outcome != porcupine.Ok || len(first.Outline) == 0 {
			t.Fatalf("seed %d: %s, %d operations%s", seed, first.Outcome, len(first.Outline), first.Detail)
		}
		if !slices.Equal(first.Outline, again.Outline) {
			t.Errorf("seed %d: two replays differ:\n%s\n---\n%s", seed, strings.Join(first.Outline, "\n"), strings.Join(again.Outline, "\n"))
		}
	}
}
