// Command report runs every benchmark of the project and writes
// bench/results/report.md (markdown tables, with the machine and commit at
// the top) and PNG charts beside it: latency distributions of `dont serve`,
// lifecycles per second, the embedded sweeper's timeout lag, the soak's
// memory over time (when bench/soak left a CSV) and the Go benchmarks.
//
//	go run ./bench/report            # about 11 minutes on 2 cores (the DynamoDB sweep benchmarks load 100k items)
//	go run ./bench/report -quick     # shorter runs, for a smoke test
package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	outDir    = flag.String("out", "bench/results", "where report.md and the charts go")
	quick     = flag.Bool("quick", false, "short runs (smoke test of the report itself)")
	benchtime = flag.String("benchtime", "1s", "go test -benchtime")
	proof     = flag.Bool("proof", true, "also run the linearizability and fault-injection checks and report their counts")
)

func main() {
	flag.Parse()
	check(os.MkdirAll(*outDir, 0o755))
	loadDur, coldRuns, lagSpawns := "10s", "20", 300
	if *quick {
		*benchtime, loadDur, coldRuns, lagSpawns = "100ms", "2s", "5", 60
	}
	var md strings.Builder
	started := time.Now()
	m := machine()
	fmt.Fprintf(&md, "# dont benchmark report\n\n")
	fmt.Fprintf(&md, "| | |\n|---|---|\n| commit | `%s` |\n| date | %s |\n| CPU | %s |\n| cores | %d |\n| memory | %s |\n| Go | %s |\n| OS | %s |\n\n",
		m.Commit, time.Now().UTC().Format(time.RFC3339), m.CPU, m.Cores, m.Memory, m.Go, m.OS)
	fmt.Fprintf(&md, "Regenerate with `go run ./bench/report` (charts are PNG files beside this report).\n\n")

	// 1. Go benchmarks of every package that has them.
	step("go test -bench in every package with benchmarks")
	benches := goBenchmarks(*benchtime)
	md.WriteString("## Go benchmarks\n\n| package | benchmark | iterations | ns/op | other |\n|---|---|---|---|---|\n")
	for _, b := range benches {
		fmt.Fprintf(&md, "| %s | %s | %d | %s | %s |\n", b.Pkg, b.Name, b.N, fnum(b.Metrics["ns/op"]), b.others())
	}
	md.WriteString("\n![Go benchmarks](benchmarks.png)\n\n")
	check(chartBenchmarks(filepath.Join(*outDir, "benchmarks.png"), benches))

	// 2. CLI cold start.
	step("bench/coldstart")
	md.WriteString("## CLI cold start\n\n")
	md.WriteString(goRun("./bench/coldstart", "-runs", coldRuns))
	md.WriteString("\n")

	// 3. dont serve under load, with every latency kept for the chart.
	step("bench/serveload")
	latFile := filepath.Join(os.TempDir(), "dont-serveload-latencies.csv")
	md.WriteString("## `dont serve` under load against its floor (loopback, full spawn lifecycles over HTTP, default flags)\n\n")
	load := goRun("./bench/serveload", "-duration", loadDur, "-latencies", latFile)
	md.WriteString(load + "\n")
	lat := readLatencies(latFile)
	check(chartLatencies(filepath.Join(*outDir, "latency-serve.png"), lat))
	md.WriteString("![latency distribution per route](latency-serve.png)\n\n")

	// 4. Lifecycles per second, side by side.
	md.WriteString("## Spawn lifecycles per second (assume → callback)\n\n| where | lifecycles/s |\n|---|---|\n")
	var bars []bar
	for _, b := range benches {
		if v, ok := b.Metrics["lifecycles/s"]; ok {
			bars = append(bars, bar{b.Pkg + " " + b.Name, v})
		}
	}
	if v, ok := lifecyclesFrom(load); ok {
		bars = append(bars, bar{"dont serve over HTTP (16 clients)", v})
	}
	if v, ok := floorFrom(load); ok {
		bars = append(bars, bar{"floor server over HTTP (16 clients)", v})
	}
	for _, b := range bars {
		fmt.Fprintf(&md, "| %s | %.0f |\n", b.label, b.value)
	}
	check(chartBars(filepath.Join(*outDir, "lifecycles.png"), "Spawn lifecycles per second", "lifecycles/s", bars))
	md.WriteString("\n![lifecycles per second](lifecycles.png)\n\n")
	step("bench/lifecycles")
	md.WriteString("### In-process beside the hand-written SQLite floor (`bench/lifecycles`, interleaved rounds)\n\n")
	md.WriteString(lifecycleRounds(*quick) + "\n")

	// 5. Timeout lag of the embedded sweeper.
	step("timeout lag of dont serve")
	lags, err := timeoutLag(lagSpawns)
	check(err)
	md.WriteString("## Timeout lag: `dont serve` (a timer per spawn, the sweep every second as the backstop)\n\n")
	md.WriteString("Spawns issued with a 2 s expiry and no request in flight when they expire; lag is `timed_out_at − expires_at` from each `spawn_timeout` event.\n\n")
	md.WriteString("| spawns | p50 | p90 | p99 | max |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&md, "| %d | %s | %s | %s | %s |\n\n", len(lags), dms(pct(lags, 50)), dms(pct(lags, 90)), dms(pct(lags, 99)), dms(pct(lags, 100)))
	check(chartHistogram(filepath.Join(*outDir, "timeout-lag.png"), "Timeout lag of dont serve", "lag (ms)", lags))
	md.WriteString("![timeout lag](timeout-lag.png)\n\n")

	// 6. The soak, when bench/soak left its samples.
	if rows := readSoak(filepath.Join(*outDir, "soak.csv")); len(rows) > 1 {
		md.WriteString("## Soak (from `go run ./bench/soak -duration 10m -out bench/results/soak.csv`)\n\n")
		md.WriteString("| t (s) | requests | RSS MB | goroutines | db+wal MB |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&md, "| %d | %d | %.1f | %d | %.1f |\n", r.seconds, r.requests, float64(r.rssKB)/1024, r.goroutines, float64(r.db)/(1<<20))
		}
		fmt.Fprintf(&md, "\nRSS start %.1f MB, end %.1f MB; goroutines start %d, end %d.\n\n![soak](soak.png)\n\n",
			float64(rows[0].rssKB)/1024, float64(rows[len(rows)-1].rssKB)/1024, rows[0].goroutines, rows[len(rows)-1].goroutines)
		check(chartSoak(filepath.Join(*outDir, "soak.png"), rows))
	}

	// 7. The proofs' counts.
	if *proof {
		step("linearizability and fault injection")
		md.WriteString("## Linearizability and faults\n\n")
		md.WriteString(proofCounts(*quick))
	}
	fmt.Fprintf(&md, "\n_Report generated in %s._\n", time.Since(started).Round(time.Second))
	check(os.WriteFile(filepath.Join(*outDir, "report.md"), []byte(md.String()), 0o644))
	fmt.Println(md.String())
	fmt.Fprintf(os.Stderr, "report: wrote %s and its charts\n", filepath.Join(*outDir, "report.md"))
}

func step(s string) { fmt.Fprintf(os.Stderr, "report: %s …\n", s) }

// lifecycleRounds runs bench/lifecycles (floor and dont interleaved,
// medians and the dont/floor ratio) and returns its table.
func lifecycleRounds(quick bool) string {
	c := exec.Command("bash", "bench/lifecycles")
	c.Env = append(os.Environ(), "ROUNDS=5", "BENCHTIME=2s")
	if quick {
		c.Env = append(os.Environ(), "ROUNDS=1", "BENCHTIME=100ms")
	}
	c.Stderr = os.Stderr
	out, err := c.Output()
	check(err)
	return string(out)
}

// goRun runs a bench command and returns its stdout.
func goRun(pkg string, args ...string) string {
	c := exec.Command("go", append([]string{"run", pkg}, args...)...)
	c.Stderr = os.Stderr
	out, err := c.Output()
	check(err)
	return string(out)
}

type benchmark struct {
	Pkg, Name string
	N         int64
	Metrics   map[string]float64
	order     []string
}

func (b benchmark) others() string {
	var parts []string
	for _, u := range b.order {
		if u != "ns/op" {
			parts = append(parts, fnum(b.Metrics[u])+" "+u)
		}
	}
	return strings.Join(parts, ", ")
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

// goBenchmarks finds the packages whose tests declare benchmarks and runs them.
func goBenchmarks(benchtime string) []benchmark {
	pkgs := map[string]bool{}
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("\nfunc Benchmark")) {
				pkgs["./"+filepath.Dir(path)] = true
			}
		}
		return nil
	})
	var list []string
	for p := range pkgs {
		list = append(list, p)
	}
	sort.Strings(list)
	var out []benchmark
	for _, pkg := range list {
		c := exec.Command("go", "test", pkg, "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime)
		c.Stderr = os.Stderr
		raw, err := c.Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "report: %s benchmarks failed: %v\n%s", pkg, err, raw)
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			m := benchLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			n, _ := strconv.ParseInt(m[3], 10, 64)
			b := benchmark{Pkg: strings.TrimPrefix(pkg, "./"), Name: m[1], N: n, Metrics: map[string]float64{}}
			f := strings.Fields(m[4])
			for i := 0; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err == nil {
					b.Metrics[f[i+1]] = v
					b.order = append(b.order, f[i+1])
				}
			}
			out = append(out, b)
		}
	}
	return out
}

// The first "Idempotency-Key no" line of bench/serveload: dont serve's
// lifecycles per second, and its floor's.
var (
	lifecyclesRe = regexp.MustCompile(`dont serve = (\d+) lifecycles/s`)
	floorRe      = regexp.MustCompile(`floor (\d+) lifecycles/s`)
)

func floorFrom(load string) (float64, bool) {
	m := floorRe.FindStringSubmatch(load)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

func lifecyclesFrom(load string) (float64, bool) {
	m := lifecyclesRe.FindStringSubmatch(load)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

func readLatencies(path string) map[string][]float64 {
	out := map[string][]float64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	rows, _ := csv.NewReader(f).ReadAll()
	for i, r := range rows {
		if i == 0 || len(r) != 2 {
			continue
		}
		us, _ := strconv.ParseFloat(r[1], 64)
		out[r[0]] = append(out[r[0]], us/1000)
	}
	return out
}

type soakRow struct {
	seconds, requests, rssKB int64
	goroutines               int
	db                       int64
}

func readSoak(path string) []soakRow {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, _ := csv.NewReader(f).ReadAll()
	var out []soakRow
	for i, r := range rows {
		if i == 0 || len(r) != 5 {
			continue
		}
		var s soakRow
		s.seconds, _ = strconv.ParseInt(r[0], 10, 64)
		s.requests, _ = strconv.ParseInt(r[1], 10, 64)
		s.rssKB, _ = strconv.ParseInt(r[2], 10, 64)
		s.goroutines, _ = strconv.Atoi(r[3])
		s.db, _ = strconv.ParseInt(r[4], 10, 64)
		out = append(out, s)
	}
	return out
}

var proofLine = regexp.MustCompile(`(linearizability: backend=.*|faults injected into .*|through the proxy: .*|SQS through faults: .*|SQS timeout path through faults: .*|[0-9]+ acknowledged writes .*)$`)

// proofCounts runs the linearizability check (every backend) and the fault
// tests, and tabulates what they report.
func proofCounts(quick bool) string {
	var b strings.Builder
	env := os.Environ()
	if quick {
		env = append(env, "DONT_LINEARIZE_OPS=300")
	}
	for _, run := range [][]string{
		{"test", "./internal/linearize/", "-run", "^TestLinearizable$", "-count=1", "-v"},
		{"test", "./internal/faults/", "-run", "Through", "-count=1", "-v"},
		{"test", "./cli/dont/", "-run", "SIGKILL", "-count=1", "-v"},
	} {
		c := exec.Command("go", run...)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			fmt.Fprintf(&b, "**FAILED**: go %s: %v\n\n```\n%s\n```\n", strings.Join(run, " "), err, tail(string(out), 40))
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if m := proofLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				fmt.Fprintf(&b, "- %s\n", m[1])
			}
		}
	}
	if os.Getenv("DONT_SQS_ENDPOINT") == "" {
		b.WriteString("\n(The SQS runs need the stand-ins: `eval \"$(bash localstack/standins.sh start)\"` before `go run ./bench/report`.)\n")
	}
	b.WriteString("\nA longer run: `DONT_LINEARIZE_OPS=100000 go test ./internal/linearize/ -run Linearizable -v -timeout 3h`.\n")
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func pct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[(len(s)-1)*p/100]
}

func dms(v float64) string { return fmt.Sprintf("%.0f ms", v) }

func fnum(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}
