package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Outputs as bench/coldstart, bench/serveload and bench/lifecycles print
// them (no benchmark runs in these tests).
const (
	fakeCold = "| binary | runs | median | p90 | × floor | CPU (median) | CPU × floor | max RSS (median) | page faults (median) |\n|---|---|---|---|---|---|---|---|---|\n" +
		"| go hello-world | 20 | 2.40 ms | 5.49 ms | 0.46 | 1.70 ms | 0.39 | 7.6 MB | 210 |\n" +
		"| sqlite floor: open + the statements show runs | 20 | 5.00 ms | 10.87 ms | 1.00 | 4.00 ms | 1.00 | 7.6 MB | 417 |\n" +
		"| dont --help (no store) | 20 | 6.60 ms | 10.69 ms | 1.25 | 5.69 ms | 1.31 | 11.5 MB | 649 |\n" +
		"| dont show <id> --json | 20 | 8.00 ms | 16.84 ms | 1.60 | 6.00 ms | 1.50 | 15.4 MB | 771 |\n" +
		"| dont show <id> --json (go build, not stripped) | 20 | 10.00 ms | 20.78 ms | 1.90 | 8.59 ms | 1.98 | 15.5 MB | 772 |\n" +
		"| sqlite floor, start-up only (-tags startuponly) | 20 | 3.00 ms | 4.00 ms | 0.60 | 2.50 ms | 0.62 | 6.1 MB | 320 |\n" +
		"| dont, start-up only (-tags startuponly) | 20 | 6.50 ms | 7.00 ms | 1.30 | 5.00 ms | 1.25 | 13.6 MB | 600 |\n" +
		"\ncold start: dont show / sqlite floor = 1.60x (goal <= 1.6x), max RSS 15.4 MB (goal <= 20 MB; floor 7.6 MB)\n"
	fakeServe = "16 workers sharing one harness token, 10s per run, 3 round(s) each running every mode (floor, then dont), `dont serve` with its default flags; medians of the rounds, and dont / floor the median of the rounds' ratios\n\n" +
		"| server | Idempotency-Key | synchronous | lifecycles/s | dont / floor | assume p50 | assume p99 | callback p50 | callback p99 | 429s | CPU per lifecycle | client CPU per lifecycle | max RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" +
		"| floor | no | FULL | 2000 | — | 4.07 ms | 12.55 ms | 4.10 ms | 12.68 ms | 0 | 465 µs | 300 µs | 23.2 MB |\n" +
		"| dont serve | no | FULL | 1500 | 0.75× | 7.96 ms | 18.43 ms | 7.87 ms | 17.05 ms | 0 | 949 µs | 300 µs | 33.6 MB |\n" +
		"| floor | yes | FULL | 1700 | — | 4.31 ms | 15.97 ms | 4.28 ms | 13.72 ms | 0 | 501 µs | 300 µs | 23.6 MB |\n" +
		"| dont serve | yes | FULL | 1020 | 0.60× | 10.81 ms | 37.48 ms | 10.31 ms | 32.01 ms | 3 | 1138 µs | 300 µs | 34.1 MB |\n" +
		"| floor | no | NORMAL | 3000 | — | 3.07 ms | 10.55 ms | 3.10 ms | 10.68 ms | 0 | 400 µs | 300 µs | 23.2 MB |\n" +
		"| dont serve | no | NORMAL | 2400 | 0.82× | 5.96 ms | 15.43 ms | 5.87 ms | 15.05 ms | 0 | 800 µs | 300 µs | 33.6 MB |\n" +
		"\nEach round, floor and dont back to back, with the 1-minute load average as each run began:\n\n" +
		"| round | synchronous | Idempotency-Key | floor load average | floor lifecycles/s | dont load average | dont lifecycles/s | ratio | floor callback p99 | dont callback p99 |\n|---|---|---|---|---|---|---|---|---|---|\n" +
		"| 1 | FULL | no | 1.20 | 2000 | 1.30 | 1500 | 0.75× | 12.68 ms | 17.05 ms |\n" +
		"\n| Idempotency-Key | synchronous | dont / floor lifecycles/s | goal | callback p99 (goal <= 20.00 ms) | floor callback p99 | 429s (goal 0) | dont serve max RSS (goal <= 40 MB) |\n|---|---|---|---|---|---|---|---|\n" +
		"| no | FULL | 0.75× | (meets) | 17.05 ms (meets) | 12.68 ms | 0 (meets) | 33.6 MB (meets) |\n| yes | FULL | 0.60× | (misses) | 32.01 ms (misses) | 13.72 ms | 3 (misses) | 34.1 MB (meets) |\n" +
		"\nWhat synchronous=FULL costs (without keys): each server's lifecycles/s at FULL over its own at NORMAL, same round, median of the rounds.\n\n" +
		"| | floor | dont serve |\n|---|---|---|\n| lifecycles/s at FULL / at NORMAL | 0.66× | 0.62× |\n| dont / floor at FULL | — | 0.75× |\n| dont / floor at NORMAL | — | 0.82× |\n" +
		"\ndont doctor --strict after every dont serve run: no violations\n"
	fakeLife = "| benchmark | floor lifecycles/s | dont lifecycles/s | floor CPU µs | dont CPU µs | dont/floor |\n|---|---|---|---|---|---|\n" +
		"| SpawnLifecycle (median of 5 rounds) | 2600 | 2513 | 270 | 353 | **0.93×** |\n" +
		"| SpawnLifecycleParallel (median of 5 rounds) | 2878 | 2017 | 267 | 404 | **0.71×** |\n" +
		"| SpawnLifecycleInterleaved/callers=16 (median of 5 rounds) | 1652 | 1689 | 300 | 310 | **1.06×** |\n" +
		"\nratio dont/floor SpawnLifecycle per round: 0.93 0.90 0.95 0.91 0.94\n"
)

func fakeRun() run {
	cold, serve, life := parseColdStart(fakeCold), parseServeLoad(fakeServe), parseLifecycles(fakeLife)
	return run{
		Machine: machineInfo{Commit: "abc (wt)", CPU: "test CPU", Cores: 2, Memory: "1 GiB", Go: "go", OS: "linux", Load: "0.5"},
		Date:    time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC), Elapsed: 11 * time.Minute,
		Benches: []benchmark{{Pkg: "internal/service", Name: "BenchmarkSweep", N: 3, Metrics: map[string]float64{"ns/op": 1e6}, order: []string{"ns/op"}}},
		Cold:    &cold, Serve: &serve, Life: &life,
		Latencies: map[string][]float64{"assume": {1, 2, 3}, "dismiss": {2, 3, 4}},
		Lags:      []float64{1, 1, 2, 7},
		Soak:      []soakRow{{0, 0, 16000, 10, 1 << 20}, {30, 8000, 32000, 12, 13 << 20}},
		Proofs:    "- linearizability: backend=sqlite operations=10 0 violations\n",
	}
}

const handBefore = "Notes written by hand before any generated section.\n\n"
const handBetween = "## CLI cold start, measured by hand\n\nA table measured by hand on 2026-11-30, load 10:\n\n| binary | median |\n|---|---|\n| dont show | 9.39 ms |\n\n  trailing spaces stay   \n"
const handAfter = "\n## Hand section at the end\n\nno newline at the end"

func TestARegenerationKeepsEveryHandSectionByteForByteAndReplacesGeneratedOnes(t *testing.T) {
	old := handBefore +
		beginMarker("goals") + "\nan old goals table that disagrees\n" + endMarker("goals") + "\n" +
		handBetween +
		beginMarker("coldstart") + "\nold cold start numbers: 99 ms\n" + endMarker("coldstart") + "\n" +
		handAfter
	path := filepath.Join(t.TempDir(), "report.md")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fakeRun()
	if err := writeReport(path, sections(r)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	for _, hand := range []string{handBefore, handBetween, handAfter} {
		if !strings.Contains(got, hand) {
			t.Errorf("the hand section %q did not survive the regeneration:\n%s", hand, got)
		}
	}
	if !strings.HasPrefix(got, handBefore+beginMarker("goals")+"\n## Against the goals (run of 2026-12-01 18:00 UTC, `abc`)") {
		t.Errorf("the goals section was not replaced where it was:\n%s", got)
	}
	for _, stale := range []string{"an old goals table", "99 ms"} {
		if strings.Contains(got, stale) {
			t.Errorf("a generated section kept its old text %q", stale)
		}
	}
	// The cold start section sits where it was, between the same hand sections.
	i, j := strings.Index(got, handBetween), strings.Index(got, beginMarker("coldstart")+"\n## CLI cold start (run of 2026-12-01 18:00 UTC, `abc`)")
	if i < 0 || j < i || !strings.Contains(got[j:], endMarker("coldstart")+"\n"+handAfter) {
		t.Errorf("the cold start section moved:\n%s", got)
	}
	// Regenerating again changes nothing but the generated text: same file.
	if err := writeReport(path, sections(r)); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != got {
		t.Errorf("a second regeneration from the same run changed the file")
	}
}

func TestASectionGeneratedForTheFirstTimeIsAppendedAfterTheHandText(t *testing.T) {
	old := "# by hand\n\nno generated section yet\n"
	out, err := splice("report.md", []byte(old), []section{{"serve", "## serve\n\n1,500/s"}, {"footer", "_made_\n"}})
	if err != nil {
		t.Fatal(err)
	}
	want := old + "\n" + beginMarker("serve") + "\n## serve\n\n1,500/s\n" + endMarker("serve") + "\n\n" + beginMarker("footer") + "\n_made_\n" + endMarker("footer") + "\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestAGeneratedSectionThisRunDidNotMeasureKeepsWhatAnEarlierRunWrote(t *testing.T) {
	old := beginMarker("soak") + "\nthe soak of an earlier run\n" + endMarker("soak") + "\n"
	out, err := splice("report.md", []byte(old), []section{{"goals", "g\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), old) {
		t.Errorf("an unmeasured section changed:\n%s", out)
	}
}

func TestAMarkerWithoutItsEndIsAnErrorAndNothingIsWritten(t *testing.T) {
	for name, old := range map[string]string{
		"begin without end":    "hand\n" + beginMarker("goals") + "\nold\n\nmore hand text\n",
		"end without begin":    "hand\n" + endMarker("goals") + "\n",
		"begin inside begin":   beginMarker("goals") + "\n" + beginMarker("serve") + "\n" + endMarker("serve") + "\n" + endMarker("goals") + "\n",
		"a section made twice": beginMarker("goals") + "\n" + endMarker("goals") + "\n" + beginMarker("goals") + "\n" + endMarker("goals") + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.md")
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			err := writeReport(path, sections(fakeRun()))
			if err == nil {
				t.Fatal("spliced a report with a broken marker")
			}
			if !strings.Contains(err.Error(), path+":") || !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("the error does not say where or that nothing was written: %v", err)
			}
			if err := checkReport(path); err == nil {
				t.Error("checkReport (run before the benchmarks) passed a broken marker")
			}
			if b, _ := os.ReadFile(path); string(b) != old {
				t.Errorf("the file changed:\n%s", b)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("a temporary file was left beside the report: %v", entries)
			}
		})
	}
	err := checkReport(filepath.Join(t.TempDir(), "report.md"))
	if err != nil {
		t.Errorf("a missing report is a new one, not an error: %v", err)
	}
	_, err = splice("r.md", []byte(beginMarker("goals")+"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "r.md:1:") || !strings.Contains(err.Error(), endMarker("goals")) {
		t.Errorf("a begin marker without its end: %v, want the line and the missing end marker named", err)
	}
}

func TestTheTopTableShowsTheSameNumbersAsTheSectionsBelowIt(t *testing.T) {
	r := fakeRun()
	var goals string
	for _, s := range sections(r) {
		if s.Name == "goals" {
			goals = s.Body
		}
	}
	for _, want := range []string{
		"| cold `dont show` ≤ 1.6× the SQLite floor (median wall time) | 5.00 ms | 8.00 ms | 1.60× | yes |",
		"| cold `dont show` start-up bound: dont's start-up + the floor's work after its own (`-tags startuponly`) | 5.00 ms | 8.50 ms | 1.70× | no goal (over the goal: no change to what dont does after start-up can meet it on this machine) |",
		"| cold `dont show` max RSS ≤ 20 MB | 7.6 MB | 15.4 MB | — | yes |",
		"| in-process lifecycles ≥ 0.8× the floor (`SpawnLifecycle`, one caller) | 2,600/s | 2,513/s | 0.93× | yes |",
		"| in-process lifecycles ≥ 0.8× the floor (`SpawnLifecycleParallel`, 2 callers) | 2,878/s | 2,017/s | 0.71× | **no** |",
		"| `dont serve` lifecycles/s ≥ 0.7× the floor server (16 workers, defaults, without Idempotency-Keys) | 2,000/s | 1,500/s | 0.75× | yes |",
		"| `dont serve` callback p99 ≤ 20 ms (without Idempotency-Keys) | 12.68 ms | 17.05 ms | 1.34× | yes |",
		"| `dont serve` server CPU (user + system) per lifecycle (without Idempotency-Keys) | 465 µs | 949 µs | 2.04× | no goal (the figure the load moves least) |",
		"| `dont serve` callback p99 ≤ 20 ms (with Idempotency-Keys) | 13.72 ms | 32.01 ms | 2.33× | **no** |",
		"| `dont serve` lifecycles/s ≥ 0.7× the floor server (16 workers, defaults, with Idempotency-Keys) | 1,700/s | 1,020/s | 0.60× | **no** |",
		"| `dont serve` 0 429s and max RSS ≤ 40 MB (with Idempotency-Keys) | 0 429s, 23.6 MB | 3 429s, 34.1 MB | — | **no** |",
		"| `dont serve` at synchronous=NORMAL ≥ 0.7× the floor at NORMAL (without Idempotency-Keys) | 3,000/s | 2,400/s | 0.82× | yes |",
		"| what synchronous=FULL costs: lifecycles/s at FULL / at NORMAL, same round (without Idempotency-Keys) | 0.66× | 0.62× | 0.94× | no goal (dont's cost beside the floor's) |",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("the goals table lacks\n%s\nin\n%s", want, goals)
		}
	}
	if !strings.Contains(goals, "| in-process lifecycles ≥ 0.8× the floor (`SpawnLifecycleInterleaved/callers=16`, 16 callers) | 1,652/s | 1,689/s | 1.06× | yes |") {
		t.Errorf("a row of bench/lifecycles is missing from the top table:\n%s", goals)
	}
}

func TestAMissingOrMovedColumnIsShownAsNotMeasuredNotAsAWrongNumber(t *testing.T) {
	// bench/serveload with its columns reordered and the CPU column gone.
	out := "| Idempotency-Key | server | callback p99 | lifecycles/s |\n|---|---|---|---|\n| no | floor | 10.00 ms | 2,000 |\n| no | dont serve | 15.00 ms | 1,500 |\n"
	s := parseServeLoad(out)
	d := s.row("dont serve", false)
	if d == nil || d.Rate != 1500 || d.CallbackP99 != 15 || d.CPUus != -1 || d.RSSMB != -1 {
		t.Fatalf("parsed %+v", d)
	}
	r := run{Serve: &s}
	goals := goalsSection(r)
	if !strings.Contains(goals, "| `dont serve` 0 429s and max RSS ≤ 40 MB (without Idempotency-Keys) | — 429s, — | — 429s, — | — | **no** |") {
		t.Errorf("missing figures are not shown as missing:\n%s", goals)
	}
	if !strings.Contains(goals, "| cold `dont show` ≤ 1.6× the SQLite floor | — | — | — | not measured in this run |") {
		t.Errorf("an unmeasured goal is not said to be:\n%s", goals)
	}
}

func TestEveryChartIsDrawnFromTheRunsMeasurements(t *testing.T) {
	dir := t.TempDir()
	if err := drawCharts(fakeRun(), dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{chartCold, chartLife, chartServeRate, chartServeP99, chartServeCDF, chartGoBench, chartTimeoutLag, chartSoakFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
			t.Errorf("%s: not a PNG (%d bytes, %v)", name, len(b), err)
		}
	}
	// Every chart the sections show is one drawCharts makes.
	for _, s := range sections(fakeRun()) {
		for _, part := range strings.Split(s.Body, "](")[1:] {
			name := part[:strings.IndexByte(part, ')')]
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("section %s shows %s, which no chart made", s.Name, name)
			}
		}
	}
}

func TestTheCommittedReportSplicesAndHasEverySectionTheGeneratorMakes(t *testing.T) {
	path := filepath.Join("..", "results", "report.md")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := markers(path, old)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sections(fakeRun()) {
		if _, ok := spans[s.Name]; !ok {
			t.Errorf("%s has no section %q: the next run would append it at the end", path, s.Name)
		}
	}
}

func TestARunOfOtherPartsOnlyLeavesTheGoalsTableAsItWas(t *testing.T) {
	r := run{Lags: []float64{1, 2}, Date: time.Now()}
	for _, s := range sections(r) {
		if s.Name == "goals" {
			t.Errorf("a run that measured no goal rewrote the goals table:\n%s", s.Body)
		}
	}
}

// The Lambda CPU rows become each memory size's duration (CPU over the
// share, plus the modelled wait) and docs/aws.md's capacity rows, from
// the same numbers.
func TestTheCapacityTableIsComputedFromTheMeasuredCPU(t *testing.T) {
	ops := parseLambdaCPU("noise\nCPU | api | lifecycle (assume + callback, 2 requests) | 200 | 10.000 | 55.000 | 2.00 |\n" +
		"CPU | sweeper | timeout message | 190 | 3.000 | 180.000 | 4.00 |\nCPU | sweeper | project sweep (first by this instance) | 200 | 2.000 | 500.000 | 6.00 |\n")
	if len(ops) != 3 || ops[0].CPU != 10 || ops[0].Requests != 2 || ops[1].N != 190 {
		t.Fatalf("parsed %+v", ops)
	}
	api, sweeper := ops[0], ops[1]
	if d := api.duration(fullVCPU); d != 20 {
		t.Errorf("a lifecycle at one vCPU takes %.2f ms, want 10 + 2 requests × 5 ms", d)
	}
	if d := api.duration(fullVCPU / 4); d != 50 {
		t.Errorf("a lifecycle at a quarter vCPU takes %.2f ms, want 4 × 10 + 10", d)
	}
	if d := api.duration(2 * fullVCPU); d != 20 {
		t.Errorf("one request cannot use a second vCPU: %.2f ms", d)
	}
	if d := sweeper.duration(2 * fullVCPU); d != 2 {
		t.Errorf("a sweeper record at two vCPUs: %.2f ms, want its wait, 4 × 5 / 10", d)
	}
	if d := sweeper.duration(fullVCPU / 4); d != 12 {
		t.Errorf("a sweeper record at a quarter vCPU: %.2f ms, want 4 × 3", d)
	}
	sec := capacitySection(run{}, ops, map[string]float64{"api": fullVCPU / 4, "sweeper": fullVCPU / 4})
	for _, want := range []string{"| 500 lifecycles/s", "| 442 MB: 20.0 lifecycles/s per instance (50 ms): 2,000/s at 100 instances |", "| 833 timeouts/s |", "| 37,500 projects/minute |", "(first by this instance) |"} {
		if !strings.Contains(sec, want) {
			t.Errorf("capacity section lacks %q:\n%s", want, sec)
		}
	}
}

// When the floor's own p99 is over the goal the machine's load is what
// the tail measures: the goals table says the goal cannot be judged
// there, and still shows dont's p99 beside the floor's.
func TestATailOverTheGoalOnTheFloorTooIsReportedAsNotJudgeable(t *testing.T) {
	r := fakeRun()
	loaded := strings.NewReplacer("| 4.10 ms | 12.68 ms |", "| 4.10 ms | 120.68 ms |", "| 7.87 ms | 17.05 ms |", "| 7.87 ms | 170.05 ms |").Replace(fakeServe)
	serve := parseServeLoad(loaded)
	r.Serve = &serve
	var goals string
	for _, s := range sections(r) {
		if s.Name == "goals" {
			goals = s.Body
		}
	}
	want := "| `dont serve` callback p99 ≤ 20 ms (without Idempotency-Keys) | 120.68 ms | 170.05 ms | 1.41× | **no** (cannot be judged: the floor's own p99 is over the goal on this machine's load) |"
	if !strings.Contains(goals, want) {
		t.Errorf("the goals table lacks\n%s\nin\n%s", want, goals)
	}
}

// The start-up bound says whether the goal is still within reach of what
// dont does after start-up; an older output without the start-up rows
// gets no such row.
func TestTheStartupBoundSaysWhetherTheGoalIsWithinReach(t *testing.T) {
	goalsOf := func(cold string) string {
		c := parseColdStart(cold)
		for _, s := range sections(run{Cold: &c}) {
			if s.Name == "goals" {
				return s.Body
			}
		}
		return ""
	}
	under := strings.Replace(fakeCold, "| dont, start-up only (-tags startuponly) | 20 | 6.50 ms |", "| dont, start-up only (-tags startuponly) | 20 | 5.50 ms |", 1)
	if want := "| 5.00 ms | 7.50 ms | 1.50× | no goal (under the goal: the rest is dont's work after start-up) |"; !strings.Contains(goalsOf(under), want) {
		t.Errorf("a bound under the goal: want %q in\n%s", want, goalsOf(under))
	}
	var older []string
	for _, line := range strings.Split(fakeCold, "\n") {
		if !strings.Contains(line, "start-up only") {
			older = append(older, line)
		}
	}
	if g := goalsOf(strings.Join(older, "\n")); strings.Contains(g, "start-up bound") || !strings.Contains(g, "| cold `dont show` ≤ 1.6×") {
		t.Errorf("an output without start-up rows: want the goal row and no bound row in\n%s", g)
	}
}
