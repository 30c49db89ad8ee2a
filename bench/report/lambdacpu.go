package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// The Lambda CPU section (-only lambdacpu): localstack/integration's
// TestBenchLambdaCPU runs the real api and sweeper bootstraps under
// aws-lambda-rie against the DynamoDB and SQS stand-ins and prints the CPU
// time each spends per operation; this turns it into each memory size's
// CPU share, duration and cost per operation, chooses the memory size by
// cost, and writes the capacity table of docs/aws.md from the same numbers.

// cpuOp is one measured operation: CPU and wall milliseconds and DynamoDB
// requests per op.
type cpuOp struct {
	Fn, Op    string
	N         int
	CPU, Wall float64
	Requests  float64
}

// dynamoMS is the latency the model gives one DynamoDB request: the
// stand-in's (which serialises requests and scans for index queries) is
// not DynamoDB's, so the wait is the counted requests times this.
var dynamoMS = flag.Float64("dynamo-ms", 5, "with -only lambdacpu: the latency of one DynamoDB request in the model, ms")

// concurrent says whether o's records run ten at a time in one invocation
// (the sweeper's batches) rather than one request per invocation (the api).
func (o cpuOp) concurrent() bool { return o.Fn == "sweeper" }

// io is the part of an operation's time spent waiting for DynamoDB, which
// a smaller CPU share does not stretch: its requests in sequence; the
// sweeper's ten concurrent records overlap theirs.
func (o cpuOp) io() float64 {
	w := o.Requests * *dynamoMS
	if o.concurrent() {
		w /= 10
	}
	return w
}

// Lambda's CPU: one vCPU at 1,769 MB, proportional below (and more
// vCPUs above, which the sweeper's concurrent records can use; one
// request of the api cannot).
const fullVCPU = 1769.0

// Prices (docs/aws-cost.md): arm64 duration per GB-second, requests.
const (
	priceGBs     = 0.0000133334
	priceRequest = 0.20 / 1e6
)

// The deployment's defaults that bound throughput (infra/stack):
// concurrent batches of each SQS mapping, the stage throttle.
const (
	sweeperQueueBatches = 10
	sweepQueueBatches   = 5
	stageRequests       = 1000.0
)

var memorySizes = []float64{128, 256, 512, 1024, 1769, 3008}

// share is the CPU an operation gets at memory mb: parallel says whether
// it can use more than one vCPU (the sweeper's concurrent records).
func share(mb float64, parallel bool) float64 {
	s := mb / fullVCPU
	if !parallel {
		s = math.Min(s, 1)
	}
	return s
}

// duration is an operation's billed time at memory mb, in ms: its CPU
// time stretched by the share, plus its wait; for the sweeper's
// concurrent records the larger of the two (one record waits while
// another computes).
func (o cpuOp) duration(mb float64) float64 {
	c := o.CPU / share(mb, o.concurrent())
	if o.concurrent() {
		return math.Max(c, o.io())
	}
	return c + o.io()
}

// cost is an operation's price at memory mb, in dollars: duration, and
// the invocations it takes (2 for a lifecycle, a tenth of a batch for a
// sweeper record).
func (o cpuOp) cost(mb float64) float64 {
	inv := 0.1
	if o.Fn == "api" {
		inv = 2
	}
	return mb/1024*o.duration(mb)/1000*priceGBs + inv*priceRequest
}

// chooseFor is the memory size of function fn: the largest size whose cost
// per operation is within 5% of the cheapest for every operation of fn
// (the same money buys more capacity; one function has one size).
func chooseFor(ops []cpuOp, fn string) float64 {
	best := memorySizes[0]
	for _, mb := range memorySizes {
		ok := true
		for _, o := range ops {
			if o.Fn != fn {
				continue
			}
			cheapest := math.Inf(1)
			for _, m := range memorySizes {
				cheapest = math.Min(cheapest, o.cost(m))
			}
			ok = ok && o.cost(mb) <= cheapest*1.05
		}
		if ok {
			best = mb
		}
	}
	return best
}

// lambdaCPURun runs the measurement through localstack/integration.sh.
func lambdaCPURun(quick bool) []cpuOp {
	n := "200"
	if quick {
		n = "30"
	}
	c := exec.Command("bash", "localstack/integration.sh", "-run", "^TestBenchLambdaCPU$")
	c.Env = append(os.Environ(), "DONT_IT_BENCH_SPAWNS="+n, "DONT_IT_BENCH_ONLY=1")
	c.Stderr = os.Stderr
	out, err := c.Output()
	check(err)
	return parseLambdaCPU(string(out))
}

// lambdaCPURows is the file beside report.md that keeps the measured rows,
// so that the tables can be drawn again from them (-lambdacpu-rows).
const lambdaCPURows = "lambdacpu.txt"

// formatLambdaCPU is ops as TestBenchLambdaCPU prints them.
func formatLambdaCPU(ops []cpuOp) string {
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "CPU | %s | %s | %d | %.3f | %.3f | %.2f |\n", o.Fn, o.Op, o.N, o.CPU, o.Wall, o.Requests)
	}
	return b.String()
}

// parseLambdaCPU reads the "CPU | fn | op | n | cpu | wall |" rows.
func parseLambdaCPU(out string) []cpuOp {
	var ops []cpuOp
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "CPU |")
		if !ok {
			continue
		}
		f := cells("|" + rest)
		if len(f) != 6 {
			continue
		}
		n, _ := strconv.Atoi(f[2])
		ops = append(ops, cpuOp{Fn: f[0], Op: f[1], N: n, CPU: num(f[3]), Wall: num(f[4]), Requests: num(f[5])})
	}
	return ops
}

func findOp(ops []cpuOp, fn, prefix string) (cpuOp, bool) {
	for _, o := range ops {
		if o.Fn == fn && strings.HasPrefix(o.Op, prefix) {
			return o, true
		}
	}
	return cpuOp{}, false
}

// lambdaCPUSection is report.md's section: the measurements, then per
// memory size each operation's CPU share, duration and cost.
func lambdaCPUSection(r run, ops []cpuOp) string {
	var b strings.Builder
	b.WriteString("## Lambda CPU per operation under aws-lambda-rie (" + stamp(r) + ")\n\n")
	b.WriteString("`go run ./bench/report -only lambdacpu`: `TestBenchLambdaCPU` (localstack/integration) runs the api and sweeper bootstraps under the emulator against the DynamoDB and SQS stand-ins, reads each bootstrap's CPU time (`/proc/<pid>/task/*/schedstat`, every thread) around each operation and counts its DynamoDB requests through a proxy. The CPU is this machine's (" + r.Machine.CPU + "), not Graviton's. Wall time is the stand-ins' (a serialising DynamoDB stand-in), shown but not used.\n\n")
	b.WriteString("| function | operation | count | CPU ms/op | DynamoDB requests/op | wall ms/op (stand-ins) |\n|---|---|---:|---:|---:|---:|\n")
	for _, o := range ops {
		fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %.1f |\n", o.Fn, o.Op, o.N, o.CPU, o.Requests, o.Wall)
	}
	fmt.Fprintf(&b, "\nAt each memory size Lambda gives CPU in proportion (1 vCPU at 1,769 MB). An api lifecycle takes its CPU time divided by that share plus its DynamoDB requests in sequence at %.0f ms each (`-dynamo-ms`); a sweeper record, ten of which run at once in a batch (and may use a second vCPU above 1,769 MB), the larger of its stretched CPU time and a tenth of its requests' wait. Cost is that duration at $0.0000133334 per GB-second (arm64) plus $0.20 per million invocations (2 per lifecycle, a tenth per sweeper record). Duration and cost per million operations:\n\n", *dynamoMS)
	b.WriteString("| memory | CPU share |")
	for _, o := range ops {
		fmt.Fprintf(&b, " %s: %s |", o.Fn, o.Op)
	}
	b.WriteString("\n|---:|---:|" + strings.Repeat("---:|", len(ops)) + "\n")
	for _, mb := range memorySizes {
		fmt.Fprintf(&b, "| %.0f MB | %.2f vCPU |", mb, share(mb, true))
		for _, o := range ops {
			fmt.Fprintf(&b, " %.1f ms, $%.2f |", o.duration(mb), o.cost(mb)*1e6)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nChosen by cost per operation (for each function the largest size within 5%% of the cheapest for every one of its operations): api %.0f MB, sweeper %.0f MB.\n",
		chooseFor(ops, "api"), chooseFor(ops, "sweeper"))
	return b.String()
}

// capacitySection is docs/aws.md's capacity table: each limit at the
// memory size the stack gives its function (deployed: fn -> MB), with
// the load where it breaks.
func capacitySection(r run, ops []cpuOp, deployed map[string]float64) string {
	var b strings.Builder
	api, sweeper := deployed["api"], deployed["sweeper"]
	fmt.Fprintf(&b, "Measured by `go run ./bench/report -only lambdacpu` (%s; bench/results/report.md, \"Lambda CPU per operation\"): CPU time per operation under the emulator, DynamoDB requests counted, each request's wait modelled at %.0f ms. \"Breaks at\" is the load where the limit is reached at the size the stack gives the function (the api %.0f MB, %.2f vCPU; the sweeper %.0f MB, %.2f vCPU), and at the memory size the cost per operation chooses (the largest within 5%% of the cheapest).\n\n",
		stamp(r), *dynamoMS, api, share(api, false), sweeper, share(sweeper, false))
	b.WriteString("| limit | default | per operation (measured) | breaks at, as deployed | at the size chosen by cost | change |\n| --- | --- | --- | ---: | ---: | --- |\n")
	fmt.Fprintf(&b, "| HTTP API stage throttle | 1,000 requests/s, burst 2,000 | 2 requests a lifecycle | %s lifecycles/s | the same | `dont:throttleRate`, `dont:throttleBurst` |\n", grouped(stageRequests/2))
	if o, ok := findOp(ops, "api", "lifecycle"); ok {
		at := func(mb float64) string {
			per := 1000 / o.duration(mb)
			return fmt.Sprintf("%.1f lifecycles/s per instance (%.0f ms): %s/s at 100 instances", per, o.duration(mb), grouped(100*per))
		}
		c := chooseFor(ops, o.Fn)
		fmt.Fprintf(&b, "| api instance | one request at a time | %.2f ms CPU, %.1f DynamoDB requests a lifecycle | %.0f MB: %s | %.0f MB: %s | account concurrency, `dont:apiMemory` |\n",
			o.CPU, o.Requests, api, at(api), c, at(c))
	}
	if o, ok := findOp(ops, "sweeper", "timeout"); ok {
		at := func(mb float64) string { return grouped(sweeperQueueBatches*1000/o.duration(mb)) + " timeouts/s" }
		c := chooseFor(ops, o.Fn)
		fmt.Fprintf(&b, "| timeouts through the timeout queue | %d batches of 10 at once | %.2f ms CPU, %.1f requests a timeout | %s | %.0f MB: %s | `SweeperQueueConcurrency` |\n",
			sweeperQueueBatches, o.CPU, o.Requests, at(sweeper), c, at(c))
	}
	for _, p := range []string{"project sweep (first", "project sweep (kept"} {
		if o, ok := findOp(ops, "sweeper", p); ok {
			at := func(mb float64) string { return grouped(sweepQueueBatches*60000/o.duration(mb)) + " projects/minute" }
			c := chooseFor(ops, o.Fn)
			fmt.Fprintf(&b, "| projects per scheduled-sweep minute (%s | %d batches of 10 projects at once | %.2f ms CPU, %.1f requests a project | %s | %.0f MB: %s | `SweepQueueConcurrency` |\n",
				strings.TrimPrefix(o.Op, "project sweep ("), sweepQueueBatches, o.CPU, o.Requests, at(sweeper), c, at(c))
		}
	}
	b.WriteString("| the scheduled run's fan-out | 8 `SendMessageBatch` in flight | — | 100,000 projects in ≈ 2 s | the same | — |\n")
	b.WriteString("| the project registry | one partition `R#projects`, read once a minute, written once per project per warm process | — | — | — | — |\n")
	b.WriteString("\nA limit past its load does not fail: the stage answers 429, the queues' messages wait (a timeout late, a sweep once a round is consumed: one pending sweep per project), and `SweepQueueAgeAlarm` says so.\n")
	return b.String()
}

// deployedMemoryMB is the memory size infra/stack gives each function
// (DefaultAPIMemoryMB, FunctionMemoryMB; TestFunctions there holds them):
// the capacity table is computed at it.
var deployedMemoryMB = map[string]float64{"api": 128, "sweeper": 256}

// grouped is v rounded, with thousands separated by commas.
func grouped(v float64) string {
	d := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(d) - 3; i > 0 && d[i-1] != '-'; i -= 3 {
		d = d[:i] + "," + d[i:]
	}
	return d
}
