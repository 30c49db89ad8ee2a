package linearize

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"pgregory.net/rapid"
)

// Stale cascades. A claim concluded with depends_on goes stale, in the
// same commit, when a claim it depends on (directly, or through other
// dependents) is doubted while it is unverified or verified
// (ledger.CascadesStale). A doubt then changes more than its own entity,
// so these histories are not partitioned by entity: a group of three
// claims — a root and two dependents, in a chain or a fan — is one
// object, and its model is the three statuses.

// CascadeStep is one client action on a group: a move of one member, or
// a read of it.
type CascadeStep struct {
	Member int
	Action ledger.Action // "" reads (show)
}

// CascadeScenario is a group's dependency shape and its clients' steps.
type CascadeScenario struct {
	// Parent[i] is the member member i depends on (-1: none). Member 0 is
	// the root; member 1 depends on it; member 2 on member 1 (a chain) or
	// on the root (a fan).
	Parent  [3]int
	Clients [][]CascadeStep
}

// GenCascade draws a group and 2–5 clients racing doubts, verifications,
// reopens, locks and reads of its members.
func GenCascade(t *rapid.T) CascadeScenario {
	sc := CascadeScenario{Parent: [3]int{-1, 0, rapid.IntRange(0, 1).Draw(t, "third depends on")}}
	actions := []ledger.Action{ledger.Doubt, ledger.Doubt, ledger.Verify, ledger.Verify, ledger.Reopen, ledger.Lock, ""}
	for c := rapid.IntRange(2, 5).Draw(t, "clients"); c > 0; c-- {
		var steps []CascadeStep
		for n := rapid.IntRange(1, 5).Draw(t, "steps"); n > 0; n-- {
			steps = append(steps, CascadeStep{Member: rapid.IntRange(0, 2).Draw(t, "member"), Action: rapid.SampledFrom(actions).Draw(t, "action")})
		}
		sc.Clients = append(sc.Clients, steps)
	}
	return sc
}

type cascadeIn struct {
	Member int
	Action ledger.Action
}

type cascadeOut struct {
	Status  ledger.Status
	Err     string
	Unknown bool
}

// cascadeState is the group's statuses.
type cascadeState [3]ledger.Status

// cascadeModel is the sequential specification of a group with the
// given parents.
func cascadeModel(parent [3]int) porcupine.Model {
	apply := func(s cascadeState, in cascadeIn) (cascadeState, error) {
		to, err := ledger.Next("", s[in.Member], in.Action)
		if err != nil {
			return s, err
		}
		s[in.Member] = to
		if to != ledger.Doubted {
			return s, nil
		}
		// Breadth first from the doubted member, as the service walks its
		// dependents: a member that does not go stale stops the walk.
		seen := [3]bool{}
		seen[in.Member] = true
		queue := []int{in.Member}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			for d := range parent {
				if parent[d] != id || seen[d] {
					continue
				}
				seen[d] = true
				if !ledger.CascadesStale(s[d]) {
					continue
				}
				s[d] = ledger.Stale
				queue = append(queue, d)
			}
		}
		return s, nil
	}
	nd := porcupine.NondeterministicModel{
		Init: func() []any { return []any{cascadeState{ledger.Unverified, ledger.Unverified, ledger.Unverified}} },
		Step: func(st, i, o any) []any {
			s, in, out := st.(cascadeState), i.(cascadeIn), o.(cascadeOut)
			n, err := s, error(nil)
			if in.Action != "" {
				n, err = apply(s, in)
			}
			if out.Unknown {
				return []any{s, n}
			}
			switch {
			case err != nil:
				if out.Err == string(errs.InvalidTransition) {
					return []any{s}
				}
			case out.Err == "" && out.Status == n[in.Member]:
				return []any{n}
			}
			return nil
		},
		Equal: func(a, b any) bool { return a.(cascadeState) == b.(cascadeState) },
		DescribeOperation: func(i, o any) string {
			in, out := i.(cascadeIn), o.(cascadeOut)
			verb := string(in.Action)
			if verb == "" {
				verb = "show"
			}
			switch {
			case out.Unknown:
				return fmt.Sprintf("%s member %d -> unknown", verb, in.Member)
			case out.Err != "":
				return fmt.Sprintf("%s member %d -> error %s", verb, in.Member, out.Err)
			}
			return fmt.Sprintf("%s member %d -> %s", verb, in.Member, out.Status)
		},
		DescribeState: func(st any) string {
			s := st.(cascadeState)
			return fmt.Sprintf("%s %s %s", s[0], s[1], s[2])
		},
	}
	return nd.ToModel()
}

// RunCascade runs a group's scenario on b and checks its history; with
// sched, the clients' steps run one at a time in an order drawn from it.
func RunCascade(ctx context.Context, b Backend, sc CascadeScenario, sched *rand.Rand, checkTimeout time.Duration) (Result, error) {
	var res Result
	var ids [3]string
	for i := range ids {
		args := map[string]any{"statement": fmt.Sprintf("cascade member %d", i)}
		if p := sc.Parent[i]; p >= 0 {
			args["depends_on"] = []any{ids[p]}
		}
		env, err := setupCall(ctx, b, "conclude", args)
		if err != nil || !env.OK {
			return res, fmt.Errorf("conclude: %v %s", err, env.Data)
		}
		var e ledger.Entity
		if err := json.Unmarshal(env.Data, &e); err != nil {
			return res, err
		}
		ids[i] = e.ID
	}
	rec := &recorder{}
	if sched != nil {
		next := make([]int, len(sc.Clients))
		for {
			var ready []int
			for c, steps := range sc.Clients {
				if next[c] < len(steps) {
					ready = append(ready, c)
				}
			}
			if len(ready) == 0 {
				break
			}
			c := ready[sched.IntN(len(ready))]
			next[c]++
			if err := invokeCascade(ctx, b, c, sc.Clients[c][next[c]-1], ids, rec); err != nil {
				return res, fmt.Errorf("client %d: %w", c, err)
			}
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(sc.Clients))
	for c, steps := range sc.Clients {
		if sched != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, st := range steps {
				if err := invokeCascade(ctx, b, c, st, ids, rec); err != nil {
					errc <- fmt.Errorf("client %d: %w", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return res, err
	}
	res.Ops, res.Checked = len(rec.ops), len(rec.ops)
	res.Outline = make([]string, 0, len(rec.ops))
	sorted := slices.Clone(rec.ops)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	for _, op := range sorted {
		res.Outline = append(res.Outline, fmt.Sprintf("client %d: %+v -> %+v", op.ClientId, op.Input, op.Output))
	}
	res.Stats = map[string]int{}
	for _, op := range rec.ops {
		in, out := op.Input.(cascadeIn), op.Output.(cascadeOut)
		switch {
		case out.Unknown:
			res.Indeterminate++
		case out.Status == ledger.Stale && in.Action == "":
			res.Stats["cascade-read-stale"]++
		case in.Action == ledger.Doubt && out.Err == "":
			res.Stats["cascade-doubt"]++
		}
	}
	model := cascadeModel(sc.Parent)
	outcome, info := porcupine.CheckOperationsVerbose(model, rec.ops, checkTimeout)
	res.Outcome = outcome
	if outcome == porcupine.Illegal {
		var d strings.Builder
		fmt.Fprintf(&d, "\ngroup %v (parents %v):\n", ids, sc.Parent)
		for _, op := range rec.ops {
			fmt.Fprintf(&d, "  [%4d,%4d] client %d: %s\n", op.Call, op.Return, op.ClientId, model.DescribeOperation(op.Input, op.Output))
		}
		res.Detail = d.String()
		res.Visualise = visualise(model, info)
	}
	return res, nil
}

func invokeCascade(ctx context.Context, b Backend, client int, st CascadeStep, ids [3]string, rec *recorder) error {
	tool, args := "show", map[string]any{"id": ids[st.Member]}
	switch st.Action {
	case "":
	case ledger.Verify:
		tool, args["evidence"] = string(st.Action), []string{"https://example.org/boiling-point"}
	case ledger.Doubt, ledger.Reopen:
		tool, args["reason"] = string(st.Action), "ITS-90 puts the boiling point at 99.97 C"
	default:
		tool = string(st.Action)
	}
	call := rec.seq.Add(1)
	env, err := b.Call(ctx, client, tool, args)
	var out cascadeOut
	switch {
	case err != nil && lossy(b):
		out.Unknown = true
	case err != nil:
		return err
	case !env.OK:
		var e errs.Error
		if err := json.Unmarshal(env.Data, &e); err != nil {
			return err
		}
		if e.Code != errs.InvalidTransition {
			return fmt.Errorf("%s: unexpected error %s", tool, e.Code)
		}
		out.Err = string(e.Code)
	default:
		var v service.EntityView
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return err
		}
		out.Status = v.Status
	}
	ret := rec.seq.Add(1)
	if out.Unknown {
		ret = math.MaxInt64
	}
	rec.add(porcupine.Operation{ClientId: client, Input: cascadeIn(st), Call: call, Output: out, Return: ret})
	return nil
}

// Drawn is one drawn history: a scenario of the partitioned model, or a
// stale-cascade group (one in five).
type Drawn struct {
	Scenario *Scenario
	Cascade  *CascadeScenario
}

// GenHistory draws a history of either kind.
func GenHistory(t *rapid.T, m Mix) Drawn {
	if rapid.IntRange(0, 4).Draw(t, "stale cascade?") == 0 {
		c := GenCascade(t)
		return Drawn{Cascade: &c}
	}
	sc := GenScenario(t, m)
	return Drawn{Scenario: &sc}
}

// RunDrawn runs and checks a drawn history (sched: as RunScheduled).
func RunDrawn(ctx context.Context, b Backend, d Drawn, sched *rand.Rand, checkTimeout time.Duration) (Result, error) {
	if d.Cascade != nil {
		return RunCascade(ctx, b, *d.Cascade, sched, checkTimeout)
	}
	return RunScheduled(ctx, b, *d.Scenario, sched, checkTimeout)
}
