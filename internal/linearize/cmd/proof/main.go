// Command proof runs the linearizability proof of docs/proof.md: many
// short independent histories per backend, in parallel, on fresh
// backends, with dont serve killed and its responses dropped on the
// serve-crash backend; it prints the markdown table of what it checked
// and exits 1 on any violation, printing each failing history's seed.
//
//	go run ./internal/linearize/cmd/proof -ops 100000
//	go run ./internal/linearize/cmd/proof -backends sqlite -replay 1234
//
// -replay runs one history again from its seed, its clients' steps one at
// a time in a seeded order (docs/proof.md, "Replaying a failure").
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/linearize"
	"github.com/dont-cli/dont/internal/standin"
)

func main() {
	ops := flag.Int("ops", 100000, "operations to check per backend")
	workers := flag.Int("workers", 4, "histories run in parallel per backend")
	batch := flag.Int("batch", 50, "histories per fresh backend (SQLite file, dont serve, DynamoDB table)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()>>1), "the first history's seed")
	list := flag.String("backends", "sqlite,serve-crash,dynamo,dynamo-faults", "backends to run")
	replay := flag.Uint64("replay", 0, "run the history of this seed once, its steps in a seeded order, and print its check")
	flag.Parse()
	os.Exit(run(*ops, *workers, *batch, *seed, *list, *replay))
}

func run(ops, workers, batch int, seed uint64, list string, replay uint64) int {
	endpoint := ""
	if strings.Contains(list, "dynamo") {
		ep, stop, err := standin.Dynamo()
		if err != nil {
			fmt.Fprintln(os.Stderr, "proof: no DynamoDB stand-in:", err)
			return 1
		}
		defer stop()
		endpoint = ep
	}
	var chosen []linearize.ProofBackend
	for _, pb := range linearize.ProofBackends(endpoint) {
		if strings.Contains(","+list+",", ","+pb.Name+",") {
			chosen = append(chosen, pb)
		}
	}
	if len(chosen) == 0 {
		fmt.Fprintln(os.Stderr, "proof: no backend named in -backends:", list)
		return 2
	}
	// SIGINT or SIGTERM stops the run: the histories in flight finish and
	// the table reports what was checked.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if replay != 0 {
		code := 0
		for _, pb := range chosen {
			res, err := linearize.Replay(ctx, pb, replay)
			switch {
			case err != nil:
				fmt.Printf("%s: history seed %d: %v\n", pb.Name, replay, err)
				code = 1
			case res.Outcome != porcupine.Ok:
				fmt.Printf("%s: history seed %d (replayed in order): %s, %d operations; visualisation %s%s\n", pb.Name, replay, res.Outcome, res.Ops, res.Visualise, res.Detail)
				code = 1
			default:
				fmt.Printf("%s: history seed %d (replayed in order): linearizable, %d operations\n", pb.Name, replay, res.Ops)
			}
		}
		return code
	}
	fmt.Printf("seed %d, %d operations per backend, %d workers, %d histories per fresh backend\n\n", seed, ops, workers, batch)
	var rows []linearize.ProofRow
	code := 0
	for _, pb := range chosen {
		row := linearize.Prove(ctx, pb, linearize.ProofConfig{Ops: ops, Workers: workers, Batch: batch, Seed: seed})
		rows = append(rows, row)
		fmt.Fprintf(os.Stderr, "proof: %s done: %d histories, %d operations, %d indeterminate, %d kills, %d faults, %d violations in %s\n",
			row.Backend, row.Histories, row.Operations, row.Indeterminate, row.Kills, row.Faults, row.Violations, row.Elapsed.Round(time.Second))
		for _, f := range row.Failures {
			fmt.Fprintln(os.Stderr, "VIOLATION", f)
		}
		if row.Violations > 0 {
			code = 1
		}
	}
	fmt.Print(linearize.Table(rows))
	return code
}
