// Command coldstart measures the CLI's cold start: `dont show <id> --json`
// against its floor, bench/coldstart/sqlitefloor (a pure-Go program that
// opens the same .dont/dont.db through the same driver, lets SQLite parse
// the schema and runs the statements a `dont show` runs), with a Go
// hello-world, `dont --help` and the unstripped `go build` of dont as
// context. All are built as README.md installs dont (CGO_ENABLED=0) and run interleaved, one of each per round, each round starting at the next
// row, so that a noisy machine slows them alike; the table gives medians
// of wall time, of CPU time (user + system, which a loaded machine
// disturbs less), of max RSS and of minor page faults (rusage: the pages
// of the binary a run touches are most of its RSS), and the headline is
// the ratio of dont show's wall time to the floor's. Both programs are
// also built with -tags startuponly, which exits once every package they
// link is initialised: dont's start-up plus what the floor does after its
// own is the start-up bound, the least any `dont show` linking what dont
// links can take. -also NAME=BINARY
// (repeatable) times `BINARY show <id> --json` in the same rounds — main's
// dont, or a variant build — so a before and after come from one run.
// Every row runs from a copy of its binary made just
// before the rounds: the same bytes with another history in the page
// cache ran 10–20% apart in one run (a copy written in one write() took
// ~135 fewer page faults than the linker's output; bench/results/
// report.md, "CLI cold start: one P"), more than most levers pay. Run it through
// bench/run.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The goals of the cold start (docs/design.md#scale-and-speed).
const (
	goalRatio = 1.6 // median dont show / median floor
	// goalRSSMB is the median max RSS of dont show: 12 MB was the light
	// build's; one binary links every transport (15–16 MB measured), and
	// issue 30 withdrew the bar that made two builds.
	goalRSSMB = 20
)

type sample struct {
	wall time.Duration
	cpu  time.Duration // user + system
	rss  int64         // max RSS, bytes
	flt  int64         // minor page faults
}

func main() {
	runs := flag.Int("runs", 30, "runs of each binary")
	type variant struct{ name, bin string }
	var also []variant
	flag.Func("also", "NAME=BINARY: also time BINARY show <id> --json (repeatable)", func(v string) error {
		i := strings.LastIndex(v, "=") // a name may hold "=", a path seldom does
		name, bin := v[:max(i, 0)], v[i+1:]
		if i < 0 || name == "" || bin == "" {
			return fmt.Errorf("want NAME=BINARY, got %q", v)
		}
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		also = append(also, variant{name, abs})
		return nil
	})
	flag.Parse()
	dir, err := os.MkdirTemp("", "dont-coldstart")
	check(err)
	defer os.RemoveAll(dir)

	hello := filepath.Join(dir, "hello")
	check(os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644))
	build(hello, filepath.Join(dir, "hello.go"))
	// dont as README.md installs it: one binary, every command.
	dont := filepath.Join(dir, "dont")
	build(dont, "./cli/dont")
	// What a user's `go build` makes: symbols and DWARF kept. They are
	// not loaded, so it should touch the same pages.
	plain := filepath.Join(dir, "dont-plain")
	buildWith(plain, "./cli/dont")
	floor := filepath.Join(dir, "sqlitefloor")
	build(floor, "./bench/coldstart/sqlitefloor")
	// The same two programs built to exit once every package they link is
	// initialised (their startuponly.go): their start-up alone.
	dontStartup := filepath.Join(dir, "dont-startup")
	build(dontStartup, "./cli/dont", "-tags", "startuponly")
	floorStartup := filepath.Join(dir, "sqlitefloor-startup")
	build(floorStartup, "./bench/coldstart/sqlitefloor", "-tags", "startuponly")

	proj := filepath.Join(dir, "proj")
	check(os.Mkdir(proj, 0o755))
	run(proj, dont, "init")
	var env struct {
		Data struct{ ID string } `json:"data"`
	}
	check(json.Unmarshal(run(proj, dont, "conclude", "water boils at 100 C at sea level").out, &env))

	db := filepath.Join(proj, ".dont", "dont.db")
	// One row per binary; the floor is rows[1], dont show rows[3] and the
	// start-ups rows[5] and rows[6].
	type row struct {
		name string
		bin  string
		args []string
		s    []sample
	}
	showArgs := []string{"show", env.Data.ID, "--json"}
	rows := []row{
		{name: "go hello-world", bin: hello},
		{name: "sqlite floor: open + the statements show runs", bin: floor, args: []string{db, env.Data.ID}},
		{name: "dont --help (no store)", bin: dont, args: []string{"--help"}},
		{name: "dont show <id> --json", bin: dont, args: showArgs},
		{name: "dont show <id> --json (go build, not stripped)", bin: plain, args: showArgs},
		{name: "sqlite floor, start-up only (-tags startuponly)", bin: floorStartup, args: []string{db, env.Data.ID}},
		{name: "dont, start-up only (-tags startuponly)", bin: dontStartup, args: showArgs},
	}
	for _, v := range also {
		rows = append(rows, row{name: "dont show <id> --json (" + v.name + ")", bin: v.bin, args: showArgs})
	}
	for _, k := range []int{5, 6} {
		// A start-up build that prints has run past its start-up.
		if out := run(proj, rows[k].bin, rows[k].args...).out; len(out) > 0 {
			check(fmt.Errorf("%s printed %q: it ran past its start-up", rows[k].name, out))
		}
	}
	// Every binary runs from a fresh copy: the linker's
	// output and a copy of the same bytes ran 10–20% apart (their page
	// cache histories differ), so all start from the same kind of file.
	// The kernel copies (copy_file_range): a buffer here would raise this
	// process's max RSS, which Linux counts into every child's.
	for k := range rows {
		rows[k].bin = copyBinary(rows[k].bin, filepath.Join(dir, fmt.Sprintf("run%d-%s", k, filepath.Base(rows[k].bin))))
	}
	for i := 0; i < *runs+3; i++ {
		for k := range rows {
			// Each round starts at the next row, so that no binary always
			// runs first (or right after the same one).
			r := (i + k) % len(rows)
			s := run(proj, rows[r].bin, rows[r].args...)
			if i >= 3 { // the first rounds warm the page cache
				rows[r].s = append(rows[r].s, s.sample)
			}
		}
	}
	floorT := median(walls(rows[1].s))
	floorCPU := median(cpus(rows[1].s))
	fmt.Printf("| binary | runs | median | p90 | × floor | CPU (median) | CPU × floor | max RSS (median) | page faults (median) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		w, c := walls(r.s), cpus(r.s)
		fmt.Printf("| %s | %d | %s | %s | %.2f | %s | %.2f | %s | %d |\n", r.name, len(w), ms(median(w)), ms(pct(w, 90)),
			float64(median(w))/float64(floorT), ms(median(c)), float64(median(c))/float64(floorCPU), mb(medianRSS(r.s)), medianFaults(r.s))
	}
	show := rows[3]
	ratio := float64(median(walls(show.s))) / float64(floorT)
	// What no change after start-up can beat: dont's start-up plus the
	// floor's own work (the floor less its start-up), were everything
	// dont does after its start-up as cheap as the floor's statements.
	bound := median(walls(rows[6].s)) + floorT - median(walls(rows[5].s))
	fmt.Printf("\nstart-up bound: dont's start-up %s + the floor's work after its own start-up %s = %s, %.2fx the floor: the least a `dont show` linking what dont links can take\n",
		ms(median(walls(rows[6].s))), ms(floorT-median(walls(rows[5].s))), ms(bound), float64(bound)/float64(floorT))
	rss := medianRSS(show.s)
	// A child's rusage max RSS starts from its parent's high-water mark at
	// the fork (Linux carries it across exec), so a value at or below this
	// process's own is this process's, not the child's.
	fmt.Printf("\n(max RSS at or below %s is the launcher's own: Linux counts the forking process's high-water mark into the child's)\n", mb(ownHWM()))
	fmt.Printf("\ncold start: dont show / sqlite floor = %.2fx (goal <= %.1fx), max RSS %s (goal <= %d MB; floor %s)\n",
		ratio, goalRatio, mb(rss), goalRSSMB, mb(medianRSS(rows[1].s)))
}

// copyBinary copies the executable src to dst and returns dst.
func copyBinary(src, dst string) string {
	in, err := os.Open(src)
	check(err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	check(err)
	_, err = io.Copy(out, in)
	check(err)
	check(out.Close())
	return dst
}

func build(out, pkg string, flags ...string) {
	buildWith(out, pkg, append([]string{"-trimpath", "-ldflags=-s -w"}, flags...)...)
}

func buildWith(out, pkg string, flags ...string) {
	c := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	// As README.md builds dont: without cgo, so statically linked (no
	// dynamic loader, no libc mapped). Every binary here is built alike,
	// the floor too, so the ratio compares the same kind of program.
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	c.Stderr = os.Stderr
	check(c.Run())
}

type result struct {
	out []byte
	sample
}

// run runs bin once, timing it from start to exit and reading its max RSS
// from the kernel's rusage.
func run(dir, bin string, args ...string) result {
	c := exec.Command(bin, args...)
	c.Dir = dir
	start := time.Now()
	out, err := c.Output()
	wall := time.Since(start)
	check(err)
	var rss, flt int64
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
		flt = int64(ru.Minflt)
	}
	return result{out, sample{wall, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), rss, flt}}
}

func walls(s []sample) []time.Duration {
	d := make([]time.Duration, len(s))
	for i := range s {
		d[i] = s[i].wall
	}
	return d
}

func cpus(s []sample) []time.Duration {
	d := make([]time.Duration, len(s))
	for i := range s {
		d[i] = s[i].cpu
	}
	return d
}

func medianRSS(s []sample) int64 {
	r := make([]int64, len(s))
	for i := range s {
		r[i] = s[i].rss
	}
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	return r[(len(r)-1)/2]
}

// ownHWM is this process's peak RSS (VmHWM), 0 if unknown.
func ownHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

func medianFaults(s []sample) int64 {
	f := make([]int64, len(s))
	for i := range s {
		f[i] = s[i].flt
	}
	sort.Slice(f, func(i, j int) bool { return f[i] < f[j] })
	return f[(len(f)-1)/2]
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}
