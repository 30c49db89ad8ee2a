package linearize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/invariants"
	"pgregory.net/rapid"
)

// The proof run: many short independent histories, drawn one per seed,
// run in parallel on fresh backends (a fresh SQLite file, `dont serve`
// process or DynamoDB table per batch), each checked on its own, each
// batch closed by the invariant checker. A failure names its seed;
// Replay runs that history again with its clients' steps in a seeded
// order, one at a time.

// ProofBackend is one backend a proof run can open.
type ProofBackend struct {
	Name string
	Mix  Mix
	// Open opens a fresh backend for one batch; seed drives its faults
	// and kills.
	Open func(seed uint64) (Backend, error)
}

// ProofBackends are the backends of a proof run; endpoint is a
// DynamoDB-compatible endpoint (the dynamo backends are left out without
// one).
func ProofBackends(endpoint string) []ProofBackend {
	manual := Mix{Expire: true, Cancel: true, Approvals: true, TickMax: 12 * time.Second, Timeout: 10 * time.Second}
	wall := Mix{Cancel: true, Approvals: true, TickMax: 150 * time.Millisecond, Timeout: 300 * time.Millisecond}
	tmp := func() (string, error) { return os.MkdirTemp("", "dont-proof-*") }
	out := []ProofBackend{
		{"sqlite", manual, func(uint64) (Backend, error) {
			dir, err := tmp()
			if err != nil {
				return nil, err
			}
			b, err := NewSQLite(dir, 6, manual.Timeout)
			return removing(b, dir), err
		}},
		{"serve-crash", wall, func(seed uint64) (Backend, error) {
			dir, err := tmp()
			if err != nil {
				return nil, err
			}
			b, err := NewServeCrashing(dir, wall.Timeout, seed, time.Second, 0.03)
			return removing(b, dir), err
		}},
	}
	if endpoint != "" {
		out = append(out,
			ProofBackend{"dynamo", manual, func(uint64) (Backend, error) {
				b, _, err := NewDynamo(endpoint, 6, manual.Timeout, 0)
				return b, err
			}},
			ProofBackend{"dynamo-faults", manual, func(seed uint64) (Backend, error) {
				b, _, err := NewDynamo(endpoint, 6, manual.Timeout, seed, faults.Mixed()...)
				return b, err
			}})
	}
	return out
}

// removing closes b and then removes dir.
func removing(b Backend, dir string) Backend {
	if b == nil {
		os.RemoveAll(dir)
		return nil
	}
	return &removingBackend{Backend: b, dir: dir}
}

type removingBackend struct {
	Backend
	dir string
}

func (r *removingBackend) Close() { r.Backend.Close(); os.RemoveAll(r.dir) }

// LosesResponses implements Lossy for a wrapped lossy backend.
func (r *removingBackend) LosesResponses() bool { return lossy(r.Backend) }

// ProofConfig is one backend's proof run.
type ProofConfig struct {
	Ops     int    // stop once this many operations were checked
	Workers int    // histories run in parallel, each worker on its own backend
	Batch   int    // histories per fresh backend
	Seed    uint64 // history i is drawn from seed+i
}

// ProofRow is what a backend's proof run did: the table row of docs/proof.md.
type ProofRow struct {
	Backend       string
	Histories     int
	Operations    int // invocations recorded and checked
	Checked       int // porcupine operations (sweeps split per partition)
	Indeterminate int
	Kills         int64
	Faults        int64 // injected faults (dropped responses, resets, 5xx, throttles, latency)
	Violations    int   // histories rejected, runs that failed, invariant violations
	Failures      []string
	Elapsed       time.Duration
	Interrupted   bool // stopped before Ops operations

}

// historyOf draws history seed.
func historyOf(mix Mix, seed uint64) Drawn {
	return rapid.Custom(func(t *rapid.T) Drawn { return GenHistory(t, mix) }).Example(int(seed & (1<<62 - 1)))
}

// Prove runs pb's histories until cfg.Ops operations were checked, or
// until stop is cancelled: then each worker finishes its history and its
// batch's invariant check, and the row reports what was checked
// (Interrupted).
func Prove(stop context.Context, pb ProofBackend, cfg ProofConfig) ProofRow {
	ctx := context.WithoutCancel(stop)
	row := ProofRow{Backend: pb.Name}
	start := time.Now()
	var next, ops atomic.Int64
	var mu sync.Mutex
	fail := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		row.Violations++
		if len(row.Failures) < 20 {
			row.Failures = append(row.Failures, fmt.Sprintf(format, a...))
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < max(cfg.Workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ops.Load() < int64(cfg.Ops) && stop.Err() == nil {
				first := cfg.Seed + uint64(next.Load())
				b, err := pb.Open(first)
				if err != nil {
					fail("%s: open: %v", pb.Name, err)
					return
				}
				for i := 0; i < max(cfg.Batch, 1) && ops.Load() < int64(cfg.Ops) && stop.Err() == nil; i++ {
					seed := cfg.Seed + uint64(next.Add(1)-1)
					res, err := RunDrawn(ctx, b, historyOf(pb.Mix, seed), nil, time.Minute)
					mu.Lock()
					row.Histories++
					row.Operations += res.Ops
					row.Checked += res.Checked
					row.Indeterminate += res.Indeterminate
					mu.Unlock()
					ops.Add(int64(res.Ops))
					switch {
					case err != nil:
						fail("%s: history seed %d: %v (replay: -backends %s -replay %d)", pb.Name, seed, err, pb.Name, seed)
					case res.Outcome != porcupine.Ok:
						fail("%s: history seed %d is %s; visualisation %s (replay: -backends %s -replay %d)%s", pb.Name, seed, res.Outcome, res.Visualise, pb.Name, seed, res.Detail)
					}
				}
				rep, err := invariants.Verify(ctx, b.Service())
				switch {
				case err != nil:
					fail("%s: invariants after the batch from seed %d: %v", pb.Name, first, err)
				case !rep.OK():
					for range rep.Violations {
						fail("%s: batch from seed %d: %s", pb.Name, first, rep.Error())
					}
				}
				if c, ok := crashesOf(b); ok {
					mu.Lock()
					row.Kills += c.Kills()
					row.Faults += totalFaults(c.Faults())
					mu.Unlock()
				} else if d, ok := b.(*dynamoBackend); ok && d.Faults != nil {
					mu.Lock()
					row.Faults += totalFaults(d.Faults)
					mu.Unlock()
				}
				b.Close()
			}
		}()
	}
	wg.Wait()
	row.Elapsed = time.Since(start)
	row.Interrupted = stop.Err() != nil && row.Operations < cfg.Ops
	return row
}

func crashesOf(b Backend) (Crashes, bool) {
	if r, ok := b.(*removingBackend); ok {
		b = r.Backend
	}
	c, ok := b.(Crashes)
	return c, ok
}

// Replay runs history seed again on a fresh backend with its clients'
// steps in an order drawn from seed, one at a time: on a backend with a
// controlled clock (sqlite, dynamo) the same seed gives the same run.
func Replay(ctx context.Context, pb ProofBackend, seed uint64) (Result, error) {
	b, err := pb.Open(seed)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	return RunDrawn(ctx, b, historyOf(pb.Mix, seed), rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)), time.Minute)
}

// Table prints rows as docs/proof.md's markdown table.
func Table(rows []ProofRow) string {
	var b strings.Builder
	b.WriteString("| backend | histories | operations checked | indeterminate | kills | injected faults | violations | time |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		name := "`" + r.Backend + "`"
		if r.Interrupted {
			name += " (stopped early)"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s |\n", name, r.Histories, r.Operations, r.Indeterminate, r.Kills, r.Faults, r.Violations, r.Elapsed.Round(time.Second))
	}
	return b.String()
}

func totalFaults(t *faults.Transport) int64 {
	var n int64
	for _, c := range t.Counts() {
		n += c
	}
	return n
}
