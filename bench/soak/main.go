// Command soak drives a real `dont serve` with a mixed load for a long
// time (10 minutes by default) and samples the server's resident memory
// (VmRSS from /proc/<pid>/status) and goroutine count (from its debug
// listener) over time. It ends by stopping the server and running
// `dont doctor --strict`. Not part of CI:
//
//	go run ./bench/soak -duration 10m
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/dont-cli/dont/internal/linearize"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type sample struct {
	at         time.Duration
	requests   int64
	rssKB      int64
	goroutines int
	dbBytes    int64
}

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "how long to drive load")
	every := flag.Duration("sample", 30*time.Second, "sampling interval")
	workers := flag.Int("workers", 8, "concurrent clients")
	rate := flag.Int("rate", 300, "requests per second in all (the load is steady, not flat out)")
	out := flag.String("out", "", "also write the samples as CSV here (bench/report reads it)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "dont-soak")
	check(err)
	defer os.RemoveAll(dir)
	dont := filepath.Join(dir, "dont")
	build := exec.Command("go", "build", "-o", dont, "./cli/dont")
	build.Stderr = os.Stderr
	check(build.Run())
	env := append(os.Environ(), "DONT_PROJECT_DIR="+dir, "DONT_SPAWN_TIMEOUT=3s", "DONT_DEBUG_ADDR=127.0.0.1:0")
	run := func(args ...string) map[string]any {
		c := exec.Command(dont, args...)
		c.Env = env
		b, err := c.Output()
		if err != nil {
			check(fmt.Errorf("dont %v: %v %s", args, err, b))
		}
		var e struct{ Data map[string]any }
		check(json.Unmarshal(b, &e))
		return e.Data
	}
	run("init", "--no-passphrase")
	// dont tokens create asks for the person's passphrase at a terminal;
	// the benchmark owns the project and writes the token into its store.
	minted, err := linearize.MintTokens(filepath.Join(dir, ".dont", "dont.db"), "harness")
	check(err)
	token := minted["harness"]

	srv := exec.Command(dont, "serve", "--addr", "127.0.0.1:0", "--rate", "-1")
	srv.Env = env
	stdout, _ := srv.StdoutPipe()
	stderr, _ := srv.StderrPipe()
	check(srv.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	check(err)
	var l struct{ Listening string }
	check(json.Unmarshal([]byte(line), &l))
	debug := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var d struct{ Debug string }
			if json.Unmarshal(sc.Bytes(), &d) == nil && d.Debug != "" {
				debug <- d.Debug
			}
		}
	}()
	var debugURL string
	select {
	case debugURL = <-debug:
	case <-time.After(10 * time.Second):
		check(fmt.Errorf("the server announced no debug listener"))
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *workers * 2}}
	var requests, failures atomic.Int64
	call := func(tool string, args map[string]any) map[string]any {
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args})
		req, _ := http.NewRequest(http.MethodPost, l.Listening+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		requests.Add(1)
		if err != nil {
			failures.Add(1)
			return nil
		}
		defer resp.Body.Close()
		var e struct {
			OK   bool           `json:"ok"`
			Data map[string]any `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&e) != nil || resp.StatusCode >= 500 {
			failures.Add(1)
		}
		return e.Data
	}

	// A steady mixed load: lifecycles resolved by callbacks (with
	// duplicates), spawns left to time out, plain doubts, reads, guesses
	// answered, listings of pending spawns and explicit sweeps.
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	defer tick.Stop()
	tokens := make(chan struct{}, *workers)
	go func() {
		for range tick.C {
			select {
			case tokens <- struct{}{}:
			default:
			}
		}
	}()
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			wait := func() bool { <-tokens; return time.Now().Before(deadline) }
			for i := 0; wait(); i++ {
				d := call("conclude", map[string]any{"statement": fmt.Sprintf("soak claim %d/%d", w, i)})
				id, _ := d["id"].(string)
				if id == "" || !wait() {
					continue
				}
				sp := call("assume", map[string]any{"id": id, "mode": "harness"})
				rid, _ := sp["request_id"].(string)
				switch r := rng.IntN(10); {
				case r < 5 && rid != "":
					wait()
					call("dismiss", map[string]any{"id": id, "evidence": []any{"https://example.org/soak"}, "request_id": rid})
					wait()
					call("trust", map[string]any{"id": id, "reason": "a duplicate callback names a counter-example", "request_id": rid})
				case r < 7:
					wait()
					call("trust", map[string]any{"id": id, "reason": "the measurement ignores pressure"})
				case r < 8:
					wait()
					g := call("guess", map[string]any{"question": "what is the boiling point of water?", "n": 3, "mode": "harness"})
					if gid, _ := g["request_id"].(string); gid != "" {
						wait()
						call("answer", map[string]any{"request_id": gid, "candidate": []any{"100 C", "100 c", "99.97 C"}})
					}
				case r < 9:
					wait()
					call("spawns", map[string]any{"pending": true})
				default:
					wait()
					call("sweep", map[string]any{"limit": 1000})
				}
				if wait() {
					call("show", map[string]any{"id": id, "history": true})
				}
			}
		}()
	}

	var samples []sample
	start := time.Now()
	take := func() {
		s := sample{at: time.Since(start).Round(time.Second), requests: requests.Load(), rssKB: rss(srv.Process.Pid), goroutines: goroutines(debugURL)}
		for _, f := range []string{"dont.db", "dont.db-wal"} {
			if st, err := os.Stat(filepath.Join(dir, ".dont", f)); err == nil {
				s.dbBytes += st.Size()
			}
		}
		samples = append(samples, s)
		fmt.Fprintf(os.Stderr, "soak: %6s  %8d requests  RSS %6.1f MB  %4d goroutines\n", s.at, s.requests, float64(s.rssKB)/1024, s.goroutines)
	}
	take()
	ticker := time.NewTicker(*every)
	for time.Now().Before(deadline) {
		<-ticker.C
		take()
	}
	ticker.Stop()
	wg.Wait()
	// Drop the load's keep-alive connections (one server goroutine each),
	// then let the sweeper settle: what remains is what the server keeps.
	client.CloseIdleConnections()
	time.Sleep(3 * time.Second)
	take()

	fmt.Printf("## Soak: %s of mixed load against dont serve (%d workers, %d req/s target)\n\n", *duration, *workers, *rate)
	fmt.Printf("| t | requests | req/s (interval) | RSS MB | goroutines | db+wal MB |\n|---|---|---|---|---|---|\n")
	for i, s := range samples {
		rps := 0.0
		if i > 0 {
			rps = float64(s.requests-samples[i-1].requests) / (s.at - samples[i-1].at).Seconds()
		}
		fmt.Printf("| %s | %d | %.0f | %.1f | %d | %.1f |\n", s.at, s.requests, rps, float64(s.rssKB)/1024, s.goroutines, float64(s.dbBytes)/(1<<20))
	}
	first, warm, last := samples[0], samples[min(2, len(samples)-1)], samples[len(samples)-1]
	fmt.Printf("\nRSS start %.1f MB, after warm-up (%s) %.1f MB, end %.1f MB; goroutines start %d, end %d; %d requests, %d failed\n",
		float64(first.rssKB)/1024, warm.at, float64(warm.rssKB)/1024, float64(last.rssKB)/1024, first.goroutines, last.goroutines, requests.Load(), failures.Load())
	if *out != "" {
		var b strings.Builder
		b.WriteString("seconds,requests,rss_kb,goroutines,db_bytes\n")
		for _, s := range samples {
			fmt.Fprintf(&b, "%d,%d,%d,%d,%d\n", int(s.at.Seconds()), s.requests, s.rssKB, s.goroutines, s.dbBytes)
		}
		check(os.WriteFile(*out, []byte(b.String()), 0o644))
	}

	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()
	doc := exec.Command(dont, "doctor", "--strict")
	doc.Env = env
	b, err := doc.Output()
	fmt.Printf("dont doctor --strict after the soak: %s", b)
	check(err)
	if failures.Load() > 0 {
		check(fmt.Errorf("%d requests failed", failures.Load()))
	}
}

// rss reads VmRSS (kB) from /proc/<pid>/status.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return -1
}

// goroutines reads the server's goroutine count from its pprof index.
func goroutines(debugURL string) int {
	resp, err := http.Get(debugURL + "goroutine?debug=1")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	first, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(first, "goroutine profile: total")))
	return n
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}
