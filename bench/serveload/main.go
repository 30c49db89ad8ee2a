// Command serveload drives a real `dont serve`, with its default flags, on
// loopback with full spawn lifecycles from concurrent workers that share
// one harness token (one harness running its subagents): each worker
// concludes one claim, then repeats assume (the harness token) -> dismiss
// with the spawn's callback token and request id. Beside it it drives the
// floor (bench/serveload/floor: a plain net/http server doing the same two
// conditional commits per lifecycle on the same SQLite driver, journal
// mode and synchronous setting) with the same load, in every mode:
// without and with Idempotency-Keys as the CLI sends them
// (internal/client: one key per call) at synchronous=FULL, dont's
// setting, and without keys at NORMAL, to show what FULL costs each
// server (dont at NORMAL is the -tags faulthooks build, which reads
// DONT_FAULT_SYNCHRONOUS; dont's cost is that build at FULL over it at
// NORMAL, back to back). Each round runs every mode, the floor then
// dont back to back, so a ratio compares runs seconds apart on a shared
// machine; it prints each round with the load average beside it, then
// per mode the medians: route p50/p99, lifecycles/s, the median of the
// rounds' dont/floor ratios, 429s, the server's peak RSS (VmHWM); and it
// ends each dont run with `dont doctor --strict` (a violation fails the
// run). dont serve's access log (stderr) goes to a file in its run
// folder, as a service's would. -profile writes CPU, mutex, block and
// allocation profiles of each dont serve run (through its
// DONT_DEBUG_ADDR server), with its log file (and what GODEBUG, e.g.
// gctrace=1, wrote there) beside them, and a CPU profile of each floor
// run. Run it through bench/run or bench/report.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/linearize"
)

// The goals of the serve benchmark (docs/design.md §10).
const (
	goalRatio    = 0.7
	goalP99      = 20 * time.Millisecond
	goalRSSBytes = 40 << 20
)

var (
	workers  = flag.Int("workers", 16, "concurrent clients sharing one harness token")
	duration = flag.Duration("duration", 10*time.Second, "how long each run drives load")
	rounds   = flag.Int("rounds", 3, "interleaved rounds (floor, dont, each mode); medians are printed")
	lats     = flag.String("latencies", "", "also write every request's latency of the last dont serve run without keys at FULL as CSV (route,microseconds) here")
	only     = flag.String("keys", "both", "Idempotency-Key modes at synchronous=FULL: both, with, without")
	syncs    = flag.String("sync", "FULL,NORMAL", "synchronous settings to run: FULL (with the -keys modes), NORMAL (without keys: what FULL costs)")
	baseline = flag.String("baseline", "", "also run this dont binary (an older build) in every round, as \"baseline\"")
	profile  = flag.String("profile", "", "write CPU, mutex, block and allocation profiles and the log of every dont serve run, and a CPU profile of every floor run, into this folder (a profiling run: its rates are not the benchmark's)")
)

// mode is one configuration both servers are run in: the Idempotency-Key
// mode and SQLite's synchronous setting (FULL is dont's; NORMAL shows what
// FULL costs, on both servers alike).
type mode struct {
	keys bool
	sync string
}

func (m mode) String() string { return m.sync + "-" + yes(m.keys) }

func main() {
	flag.Parse()
	dir, err := os.MkdirTemp("", "dont-serveload")
	check(err)
	defer os.RemoveAll(dir)
	// dont at NORMAL is the test build (-tags faulthooks), which reads its
	// setting from DONT_FAULT_SYNCHRONOUS; with that variable unset it
	// runs as the shipped build does (FULL, no hooks).
	dont, dontTest, floor := filepath.Join(dir, "dont"), filepath.Join(dir, "dont-faulthooks"), filepath.Join(dir, "floor")
	for _, b := range []struct{ bin, pkg, tags string }{{dont, "./cli/dont", ""}, {dontTest, "./cli/dont", "faulthooks"}, {floor, "./bench/serveload/floor", ""}} {
		c := exec.Command("go", "build", "-tags", b.tags, "-o", b.bin, b.pkg)
		// As README.md builds dont: without cgo, so statically linked (no
		// dynamic loader or libc mapped); the floor is built alike.
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		c.Stderr = os.Stderr
		check(c.Run())
	}
	keyModes := map[string][]bool{"both": {false, true}, "with": {true}, "without": {false}}[*only]
	if keyModes == nil {
		check(fmt.Errorf("-keys is both, with or without"))
	}
	var modes []mode
	for _, s := range strings.Split(*syncs, ",") {
		switch s = strings.ToUpper(strings.TrimSpace(s)); s {
		case "FULL":
			for _, k := range keyModes {
				modes = append(modes, mode{keys: k, sync: s})
			}
		case "NORMAL":
			modes = append(modes, mode{sync: s})
		default:
			check(fmt.Errorf("-sync lists FULL and NORMAL, not %q", s))
		}
	}
	if *profile != "" {
		check(os.MkdirAll(*profile, 0o755))
	}
	// Every round runs every mode, floor then dont, so that each ratio
	// compares two runs a few seconds apart under the same load.
	results := map[string][]result{}
	var perRound []roundRow
	for r := 0; r < *rounds; r++ {
		for _, m := range modes {
			tag := fmt.Sprintf("%s-%d", m, r)
			f := runFloor(floor, filepath.Join(dir, "floor-"+tag), m, tag)
			bin := dont
			if m.sync != "FULL" {
				bin = dontTest
			}
			d := runDont(bin, filepath.Join(dir, "dont-"+tag), m, tag)
			results[name("floor", m)] = append(results[name("floor", m)], f)
			results[name("dont serve", m)] = append(results[name("dont serve", m)], d)
			perRound = append(perRound, roundRow{round: r + 1, m: m, floor: f, dont: d})
			if *baseline != "" && m.sync == "FULL" {
				b := runDont(*baseline, filepath.Join(dir, "baseline-"+tag), m, "")
				results[name("baseline", m)] = append(results[name("baseline", m)], b)
			}
			if m.sync == "NORMAL" {
				// What FULL costs dont is measured on one binary: the test
				// build at FULL too, right after its NORMAL run.
				full := mode{sync: "FULL"}
				t := runDont(dontTest, filepath.Join(dir, "dont-test-"+tag), full, "")
				results[name(testBuild, full)] = append(results[name(testBuild, full)], t)
			}
		}
	}
	ratios := func(m mode) float64 {
		var v []float64
		for _, rr := range perRound {
			if rr.m == m {
				v = append(v, rr.dont.rate/rr.floor.rate)
			}
		}
		return med(v)
	}
	fmt.Printf("%d workers sharing one harness token, %s per run, %d round(s) each running every mode (floor, then dont), `dont serve` with its default flags; medians of the rounds, and dont / floor the median of the rounds' ratios\n\n", *workers, *duration, *rounds)
	fmt.Printf("| server | Idempotency-Key | synchronous | lifecycles/s | dont / floor | assume p50 | assume p99 | callback p50 | callback p99 | 429s | CPU per lifecycle | client CPU per lifecycle | max RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range modes {
		for _, server := range servers() {
			rs := results[name(server, m)]
			if len(rs) == 0 {
				continue
			}
			mm := median(rs)
			ratio := "—"
			if server == "dont serve" {
				ratio = fmt.Sprintf("%.2f×", ratios(m))
			}
			fmt.Printf("| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %d | %d µs | %d µs | %.1f MB |\n", server, yes(m.keys), m.sync, mm.rate, ratio,
				ms(mm.p50["assume"]), ms(mm.p99["assume"]), ms(mm.p50["dismiss"]), ms(mm.p99["dismiss"]), mm.throttled, mm.cpu.Microseconds(), mm.client.Microseconds(), float64(mm.rss)/(1<<20))
		}
	}
	fmt.Printf("\nEach round, floor and dont back to back, with the 1-minute load average as each run began:\n\n")
	fmt.Printf("| round | synchronous | Idempotency-Key | floor load average | floor lifecycles/s | dont load average | dont lifecycles/s | ratio | floor callback p99 | dont callback p99 |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, rr := range perRound {
		fmt.Printf("| %d | %s | %s | %s | %.0f | %s | %.0f | %.2f× | %s | %s |\n", rr.round, rr.m.sync, yes(rr.m.keys), rr.floor.load, rr.floor.rate, rr.dont.load, rr.dont.rate,
			rr.dont.rate/rr.floor.rate, ms(rr.floor.p99["dismiss"]), ms(rr.dont.p99["dismiss"]))
	}
	fmt.Printf("\n| Idempotency-Key | synchronous | dont / floor lifecycles/s | goal | callback p99 (goal <= %s) | floor callback p99 | 429s (goal 0) | dont serve max RSS (goal <= %d MB) |\n|---|---|---|---|---|---|---|---|\n", ms(goalP99), goalRSSBytes>>20)
	for _, m := range modes {
		f, d := median(results[name("floor", m)]), median(results[name("dont serve", m)])
		ratio := ratios(m)
		fmt.Printf("| %s | %s | %.2f× | %s | %s %s | %s | %d %s | %.1f MB %s |\n", yes(m.keys), m.sync, ratio, meets(ratio >= goalRatio),
			ms(d.p99["dismiss"]), meets(d.p99["dismiss"] <= goalP99), ms(f.p99["dismiss"]), d.throttled, meets(d.throttled == 0), float64(d.rss)/(1<<20), meets(d.rss <= goalRSSBytes))
	}
	full, normal := mode{sync: "FULL"}, mode{sync: "NORMAL"}
	if len(results[name("floor", full)]) > 0 && len(results[name("floor", normal)]) > 0 {
		// What FULL costs each server: its rate at FULL over its rate at
		// NORMAL in the same round, median of the rounds.
		// dont's is its test build's at both settings (one binary, back to
		// back).
		cost := func(atFull, atNormal string) float64 {
			var v []float64
			for i, f := range results[name(atFull, full)] {
				if i < len(results[name(atNormal, normal)]) {
					v = append(v, f.rate/results[name(atNormal, normal)][i].rate)
				}
			}
			return med(v)
		}
		var sameBuild []float64
		for i, t := range results[name(testBuild, full)] {
			sameBuild = append(sameBuild, t.rate/results[name("dont serve", full)][i].rate)
		}
		fmt.Printf("\nWhat synchronous=FULL costs (without keys): each server's lifecycles/s at FULL over its own at NORMAL, same round, median of the rounds; dont's measured on its test build at both settings, back to back.\n\n")
		fmt.Printf("| | floor | dont serve |\n|---|---|---|\n")
		fmt.Printf("| lifecycles/s at FULL / at NORMAL | %.2f× | %.2f× |\n", cost("floor", "floor"), cost(testBuild, "dont serve"))
		fmt.Printf("| dont / floor at FULL | — | %.2f× |\n| dont / floor at NORMAL | — | %.2f× |\n", ratios(full), ratios(normal))
		fmt.Printf("| dont's test build / the shipped build at FULL (the same code but for the hooks) | — | %.2f× |\n", med(sameBuild))
	}
	fmt.Println()
	for _, m := range modes {
		f, d := median(results[name("floor", m)]), median(results[name("dont serve", m)])
		fmt.Printf("Idempotency-Key %s, synchronous=%s: dont serve = %.0f lifecycles/s, floor %.0f lifecycles/s (%.2f× by the rounds' ratios); CPU per lifecycle %d µs against %d µs (the floor's CPU / dont's: %.2f×; the client's %d µs beside each, on the same cores)\n",
			yes(m.keys), m.sync, d.rate, f.rate, ratios(m), d.cpu.Microseconds(), f.cpu.Microseconds(), float64(f.cpu)/float64(max(1, d.cpu)), d.client.Microseconds())
	}
	fmt.Println("\ndont doctor --strict after every dont serve run: no violations")
}

// testBuild names dont's -tags faulthooks build's runs at FULL.
const testBuild = "dont serve (test build)"

// roundRow is one round of one mode: the floor's run and dont's after it.
type roundRow struct {
	round       int
	m           mode
	floor, dont result
}

func servers() []string {
	if *baseline != "" {
		return []string{"floor", "dont serve", "baseline"}
	}
	return []string{"floor", "dont serve"}
}

func name(server string, m mode) string { return server + "/" + m.String() }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func meets(ok bool) string {
	if ok {
		return "(meets)"
	}
	return "(misses)"
}

type result struct {
	rate      float64
	p50, p99  map[string]time.Duration
	throttled int
	rss       int64
	// cpu is the server's CPU time (user + system) per lifecycle, and
	// client this process's, the load's: on one machine they share the
	// cores, so the lifecycles/s of both servers include the client's.
	cpu, client time.Duration
	all         map[string][]time.Duration
	load        string // the 1-minute load average as the run began
}

func med(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// median takes each figure's median over the rounds on its own.
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return med(v)
	}
	m := result{p50: map[string]time.Duration{}, p99: map[string]time.Duration{}}
	m.rate = pick(func(r result) float64 { return r.rate })
	m.throttled = int(pick(func(r result) float64 { return float64(r.throttled) }))
	m.rss = int64(pick(func(r result) float64 { return float64(r.rss) }))
	m.cpu = time.Duration(pick(func(r result) float64 { return float64(r.cpu) }))
	m.client = time.Duration(pick(func(r result) float64 { return float64(r.client) }))
	for _, route := range []string{"assume", "dismiss"} {
		m.p50[route] = time.Duration(pick(func(r result) float64 { return float64(r.p50[route]) }))
		m.p99[route] = time.Duration(pick(func(r result) float64 { return float64(r.p99[route]) }))
	}
	return m
}

// runDont drives a fresh project's `dont serve` with its default flags and
// checks the store with `dont doctor --strict` after it. tag names its
// profiles (-profile); "" takes none.
func runDont(dont, dir string, m mode, tag string) result {
	check(os.MkdirAll(dir, 0o700))
	env := os.Environ()
	if m.sync != "FULL" {
		env = append(env, "DONT_FAULT_SYNCHRONOUS="+m.sync)
	}
	run := func(args ...string) map[string]any {
		c := exec.Command(dont, args...)
		c.Dir, c.Env = dir, env
		out, err := c.Output()
		check(err)
		var e map[string]any
		check(json.Unmarshal(out, &e))
		return e["data"].(map[string]any)
	}
	run("init", "--no-passphrase")
	// dont tokens create asks for the person's passphrase at a terminal;
	// the benchmark owns the project and writes the token into its store.
	minted, err := linearize.MintTokens(filepath.Join(dir, ".dont", "dont.db"), "harness")
	check(err)
	token := minted["harness"]
	srv := exec.Command(dont, "serve", "--addr", "127.0.0.1:0")
	srv.Dir, srv.Env = dir, env
	debug := ""
	if *profile != "" && tag != "" {
		debug = freeAddr()
		srv.Env = append(srv.Env, "DONT_DEBUG_ADDR="+debug)
	}
	// dont serve writes an access-log line per call to stderr, as a
	// person keeps it: in a file (a service manager's log file). Not a
	// pipe that this process drains: the load's goroutines and that
	// drain share the two cores, and every line written to a pipe wakes
	// the reader while dont serve holds its logger's lock, before the
	// response leaves; at a high load average the server's calls queued
	// on that lock (bench/results/report.md, "synchronous=NORMAL").
	logFile := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logFile)
	check(err)
	srv.Stderr = logf
	res := drive(srv, token, m.keys, m.sync, debug, tag)
	check(logf.Close())
	if debug != "" {
		// Kept beside the profiles: the access log, and what GODEBUG
		// (gctrace=1: each collection's pauses) wrote.
		raw, err := os.ReadFile(logFile)
		check(err)
		check(os.WriteFile(filepath.Join(*profile, "dont-"+tag+".log"), raw, 0o644))
	}
	// dont's file is in WAL mode as the floor's is: SQLite's header says
	// so in its read and write versions (bytes 18 and 19: 2 for WAL).
	hdr := make([]byte, 20)
	f, err := os.Open(filepath.Join(dir, ".dont", "dont.db"))
	check(err)
	_, err = io.ReadFull(f, hdr)
	f.Close()
	check(err)
	if hdr[18] != 2 || hdr[19] != 2 {
		check(fmt.Errorf("dont's database is not in WAL mode (header bytes %d, %d)", hdr[18], hdr[19]))
	}
	doctor := exec.Command(dont, "doctor", "--strict")
	doctor.Dir, doctor.Env = dir, env
	if out, err := doctor.Output(); err != nil {
		check(fmt.Errorf("dont doctor --strict after the load: %v %s", err, out))
	}
	if *lats != "" && !m.keys && m.sync == "FULL" && dont != *baseline {
		var b bytes.Buffer
		b.WriteString("route,microseconds\n")
		for route, ds := range res.all {
			for _, d := range ds {
				fmt.Fprintf(&b, "%s,%d\n", route, d.Microseconds())
			}
		}
		check(os.WriteFile(*lats, b.Bytes(), 0o644))
	}
	return res
}

func runFloor(floor, dir string, m mode, tag string) result {
	check(os.MkdirAll(dir, 0o700))
	token := "floor-" + ids.New(ids.Token, time.Now())
	srv := exec.Command(floor, filepath.Join(dir, "floor.db"), token, m.sync)
	if *profile != "" {
		srv.Env = append(os.Environ(), "FLOOR_CPUPROFILE="+filepath.Join(*profile, "floor-"+tag+".cpu.pprof"))
	}
	return drive(srv, token, m.keys, m.sync, "", "")
}

// syncLevel is what PRAGMA synchronous reads for each setting.
var syncLevel = map[string]int{"NORMAL": 1, "FULL": 2}

// freeAddr is a loopback address no one listens on, for dont serve's
// debug server.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

// fetch writes what the debug server answers at path into file. dont
// serve starts that server just after printing its address: the first
// request may come before it listens.
func fetch(debug, path, file string) {
	resp, err := http.Get("http://" + debug + path)
	for try := 0; err != nil && try < 50; try++ {
		time.Sleep(20 * time.Millisecond)
		resp, err = http.Get("http://" + debug + path)
	}
	check(err)
	defer resp.Body.Close()
	out, err := os.Create(file)
	check(err)
	_, err = io.Copy(out, resp.Body)
	check(err)
	check(out.Close())
}

// drive starts the server, loads it for the duration, reads its peak RSS
// and stops it. With debug (dont serve's debug server) it writes a CPU
// profile of the load and the mutex, block and allocation profiles after it, named
// by tag, into -profile's folder.
func drive(srv *exec.Cmd, token string, keys bool, synchronous, debug, tag string) result {
	load := loadAvg()
	out, err := srv.StdoutPipe()
	check(err)
	if srv.Stderr == nil {
		srv.Stderr = io.Discard
	}
	check(srv.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	var l struct {
		Listening   string
		JournalMode *string `json:"journal_mode"`
		Synchronous *int
	}
	check(json.Unmarshal([]byte(line), &l))
	if l.JournalMode != nil && (*l.JournalMode != "wal" || l.Synchronous == nil || *l.Synchronous != syncLevel[synchronous]) {
		// The floor says what its connection runs with: it must be what
		// dont runs with in this mode, or the ratio compares unlike work.
		check(fmt.Errorf("the floor runs journal_mode=%s synchronous=%v, not wal and %s", *l.JournalMode, l.Synchronous, synchronous))
	}
	go io.Copy(io.Discard, out)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers * 2}}
	var throttledMu sync.Mutex
	throttled := 0
	// call posts one tool call as internal/client does: one fresh
	// Idempotency-Key per call when keys are on. A 429 is counted and the
	// call is sent again (with the same key).
	call := func(tool, bearer string, args map[string]any) (map[string]any, time.Duration) {
		body, _ := json.Marshal(map[string]any{"args": args})
		key := ids.New(ids.Request, time.Now())
		for {
			req, _ := http.NewRequest("POST", l.Listening+"/v1/tools/"+tool, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+bearer)
			req.Header.Set("Content-Type", "application/json")
			if keys {
				req.Header.Set("Idempotency-Key", key)
			}
			begin := time.Now()
			resp, err := client.Do(req)
			check(err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(begin)
			if resp.StatusCode == http.StatusTooManyRequests {
				throttledMu.Lock()
				throttled++
				throttledMu.Unlock()
				if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
					time.Sleep(10 * time.Millisecond)
				}
				continue
			}
			var env map[string]any
			if err := json.Unmarshal(raw, &env); err != nil || env["ok"] != true {
				check(fmt.Errorf("%s: %s %s", tool, resp.Status, strings.TrimSpace(string(raw))))
			}
			return env["data"].(map[string]any), took
		}
	}

	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	lifecycles := 0
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start, clientStart := time.Now(), selfCPU()
	if debug != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fetch(debug, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(duration.Seconds())-1)), filepath.Join(*profile, "dont-"+tag+".cpu.pprof"))
		}()
	}
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := call("conclude", token, map[string]any{"statement": "load claim"})
			id := data["id"].(string)
			var as, cbs []time.Duration
			n := 0
			for time.Now().Before(deadline) {
				req, d1 := call("assume", token, map[string]any{"id": id})
				cb := req["callback"].(map[string]any)
				_, d2 := call("dismiss", cb["token"].(string), map[string]any{"id": id, "evidence": []string{"https://example.org/x"}, "request_id": cb["request_id"]})
				as, cbs = append(as, d1), append(cbs, d2)
				n++
			}
			mu.Lock()
			lat["assume"] = append(lat["assume"], as...)
			lat["dismiss"] = append(lat["dismiss"], cbs...)
			lifecycles += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if debug != "" {
		for _, p := range []string{"mutex", "block", "allocs"} {
			fetch(debug, "/debug/pprof/"+p, filepath.Join(*profile, "dont-"+tag+"."+p+".pprof"))
		}
	}
	res := result{rate: float64(lifecycles) / elapsed.Seconds(), throttled: throttled, rss: vmHWM(srv.Process.Pid),
		cpu:    cpuTime(srv.Process.Pid) / time.Duration(max(1, lifecycles)),
		client: (selfCPU() - clientStart) / time.Duration(max(1, lifecycles)),
		p50:    map[string]time.Duration{}, p99: map[string]time.Duration{}, all: lat, load: load}
	for route, d := range lat {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		res.p50[route], res.p99[route] = d[len(d)*50/100], d[len(d)*99/100]
	}
	client.CloseIdleConnections()
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	return res
}

// loadAvg is the 1-minute load average (/proc/loadavg).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// cpuTime is the process's user and system CPU time so far
// (/proc/<pid>/stat, in clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	// The command name may hold spaces; the fields after it are plain.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		check(fmt.Errorf("cannot read the CPU time of %d", pid))
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is this process's CPU time (user + system) so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM is the process's peak resident set size (/proc/<pid>/status).
func vmHWM(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			check(err)
			return kb << 10
		}
	}
	check(fmt.Errorf("no VmHWM in /proc/%d/status", pid))
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}
