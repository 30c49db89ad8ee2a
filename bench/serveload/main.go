// Command serveload drives a real `dont serve`, with its default flags, on
// loopback with full spawn lifecycles from concurrent workers that share
// one harness token (one harness running its subagents): each worker
// concludes one claim, then repeats assume (the harness token) -> dismiss
// with the spawn's callback token and request id. Beside it, in the same
// run, it drives the floor (bench/serveload/floor: a plain net/http server
// doing the same two conditional commits per lifecycle on the same SQLite
// driver and pragmas) with the same load, both without and with
// Idempotency-Keys as the CLI sends them (internal/client: one key per
// call). It prints per route p50/p99, lifecycles per second, 429s, the
// server's peak RSS (VmHWM), the ratios to the floor, and ends each dont
// run with `dont doctor --strict` (a violation fails the run). Run it
// through bench/run.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/dont-cli/dont/internal/linearize"
	"io"
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
	rounds   = flag.Int("rounds", 1, "interleaved rounds (floor, dont) per key mode; medians are printed")
	lats     = flag.String("latencies", "", "also write every request's latency of the last dont serve run without keys as CSV (route,microseconds) here")
	only     = flag.String("keys", "both", "Idempotency-Key modes: both, with, without")
	baseline = flag.String("baseline", "", "also run this dont binary (an older build) in every round, as \"baseline\"")
)

func main() {
	flag.Parse()
	dir, err := os.MkdirTemp("", "dont-serveload")
	check(err)
	defer os.RemoveAll(dir)
	dont, floor := filepath.Join(dir, "dont"), filepath.Join(dir, "floor")
	for bin, pkg := range map[string]string{dont: "./cli/dont", floor: "./bench/serveload/floor"} {
		c := exec.Command("go", "build", "-o", bin, pkg)
		// As README.md builds dont: without cgo, so statically linked (no
		// dynamic loader or libc mapped); the floor is built alike.
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		c.Stderr = os.Stderr
		check(c.Run())
	}
	modes := map[string][]bool{"both": {false, true}, "with": {true}, "without": {false}}[*only]
	if modes == nil {
		check(fmt.Errorf("-keys is both, with or without"))
	}
	results := map[string][]result{}
	for _, keys := range modes {
		for r := 0; r < *rounds; r++ {
			f := runFloor(floor, filepath.Join(dir, fmt.Sprintf("floor-%v-%d", keys, r)), keys)
			d := runDont(dont, filepath.Join(dir, fmt.Sprintf("dont-%v-%d", keys, r)), keys)
			results[name("floor", keys)] = append(results[name("floor", keys)], f)
			results[name("dont serve", keys)] = append(results[name("dont serve", keys)], d)
			if *baseline != "" {
				b := runDont(*baseline, filepath.Join(dir, fmt.Sprintf("baseline-%v-%d", keys, r)), keys)
				results[name("baseline", keys)] = append(results[name("baseline", keys)], b)
			}
		}
	}
	fmt.Printf("%d workers sharing one harness token, %s per run, %d round(s), `dont serve` with its default flags\n\n", *workers, *duration, *rounds)
	fmt.Printf("| server | Idempotency-Key | lifecycles/s | assume p50 | assume p99 | callback p50 | callback p99 | 429s | CPU per lifecycle | client CPU per lifecycle | max RSS |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, keys := range modes {
		for _, server := range servers() {
			m := median(results[name(server, keys)])
			fmt.Printf("| %s | %s | %.0f | %s | %s | %s | %s | %d | %d µs | %d µs | %.1f MB |\n", server, yes(keys), m.rate,
				ms(m.p50["assume"]), ms(m.p99["assume"]), ms(m.p50["dismiss"]), ms(m.p99["dismiss"]), m.throttled, m.cpu.Microseconds(), m.client.Microseconds(), float64(m.rss)/(1<<20))
		}
	}
	fmt.Printf("\n| Idempotency-Key | dont / floor lifecycles/s | goal | callback p99 (goal <= %s) | 429s (goal 0) | dont serve max RSS (goal <= %d MB) |\n|---|---|---|---|---|---|\n", ms(goalP99), goalRSSBytes>>20)
	for _, keys := range modes {
		f, d := median(results[name("floor", keys)]), median(results[name("dont serve", keys)])
		ratio := d.rate / f.rate
		fmt.Printf("| %s | %.2f× | %s | %s %s | %d %s | %.1f MB %s |\n", yes(keys), ratio, meets(ratio >= goalRatio),
			ms(d.p99["dismiss"]), meets(d.p99["dismiss"] <= goalP99), d.throttled, meets(d.throttled == 0), float64(d.rss)/(1<<20), meets(d.rss <= goalRSSBytes))
	}
	fmt.Println()
	for _, keys := range modes {
		f, d := median(results[name("floor", keys)]), median(results[name("dont serve", keys)])
		fmt.Printf("Idempotency-Key %s: dont serve = %.0f lifecycles/s, floor %.0f lifecycles/s (%.2f×); CPU per lifecycle %d µs against %d µs (the floor's CPU / dont's: %.2f×; the client's %d µs beside each, on the same cores)\n",
			yes(keys), d.rate, f.rate, d.rate/f.rate, d.cpu.Microseconds(), f.cpu.Microseconds(), float64(f.cpu)/float64(max(1, d.cpu)), d.client.Microseconds())
	}
	fmt.Println("\ndont doctor --strict after every dont serve run: no violations")
}

func servers() []string {
	if *baseline != "" {
		return []string{"floor", "dont serve", "baseline"}
	}
	return []string{"floor", "dont serve"}
}

func name(server string, keys bool) string { return server + "/" + yes(keys) }

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
}

// median takes each figure's median over the rounds on its own.
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
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
// checks the store with `dont doctor --strict` after it.
func runDont(dont, dir string, keys bool) result {
	check(os.MkdirAll(dir, 0o700))
	run := func(args ...string) map[string]any {
		c := exec.Command(dont, args...)
		c.Dir = dir
		out, err := c.Output()
		check(err)
		var env map[string]any
		check(json.Unmarshal(out, &env))
		return env["data"].(map[string]any)
	}
	run("init", "--no-passphrase")
	// dont tokens create asks for the person's passphrase at a terminal;
	// the benchmark owns the project and writes the token into its store.
	minted, err := linearize.MintTokens(filepath.Join(dir, ".dont", "dont.db"), "harness")
	check(err)
	token := minted["harness"]
	srv := exec.Command(dont, "serve", "--addr", "127.0.0.1:0")
	srv.Dir = dir
	res := drive(srv, token, keys)
	doctor := exec.Command(dont, "doctor", "--strict")
	doctor.Dir = dir
	if out, err := doctor.Output(); err != nil {
		check(fmt.Errorf("dont doctor --strict after the load: %v %s", err, out))
	}
	if *lats != "" && !keys && dont != *baseline {
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

func runFloor(floor, dir string, keys bool) result {
	check(os.MkdirAll(dir, 0o700))
	token := "floor-" + ids.New(ids.Token, time.Now())
	return drive(exec.Command(floor, filepath.Join(dir, "floor.db"), token), token, keys)
}

// drive starts the server, loads it for the duration, reads its peak RSS
// and stops it.
func drive(srv *exec.Cmd, token string, keys bool) result {
	out, err := srv.StdoutPipe()
	check(err)
	srv.Stderr = io.Discard
	check(srv.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	var l struct{ Listening string }
	check(json.Unmarshal([]byte(line), &l))
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
	res := result{rate: float64(lifecycles) / elapsed.Seconds(), throttled: throttled, rss: vmHWM(srv.Process.Pid),
		cpu:    cpuTime(srv.Process.Pid) / time.Duration(max(1, lifecycles)),
		client: (selfCPU() - clientStart) / time.Duration(max(1, lifecycles)),
		p50:    map[string]time.Duration{}, p99: map[string]time.Duration{}, all: lat}
	for route, d := range lat {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		res.p50[route], res.p99[route] = d[len(d)*50/100], d[len(d)*99/100]
	}
	client.CloseIdleConnections()
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	return res
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
