// Command serveload drives a real `dont serve` on loopback with full spawn
// lifecycles (assume -> dismiss callback with the request id) from
// concurrent workers, and prints lifecycles per second and p50/p99 latency
// per route. Run it through bench/run.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

func main() {
	workers := flag.Int("workers", 16, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Second, "how long to drive load")
	latencies := flag.String("latencies", "", "also write every request's latency as CSV (route,microseconds) here")
	flag.Parse()
	dir, err := os.MkdirTemp("", "dont-serveload")
	check(err)
	defer os.RemoveAll(dir)
	dont := filepath.Join(dir, "dont")
	c := exec.Command("go", "build", "-o", dont, "./cli/dont")
	c.Stderr = os.Stderr
	check(c.Run())
	run := func(args ...string) map[string]any {
		c := exec.Command(dont, args...)
		c.Dir = dir
		out, err := c.Output()
		check(err)
		var env map[string]any
		check(json.Unmarshal(out, &env))
		return env["data"].(map[string]any)
	}
	run("init")
	token := run("tokens", "create", "--role", "harness", "--yes")["token"].(string)

	srv := exec.Command(dont, "serve", "--addr", "127.0.0.1:0", "--rate", "-1")
	srv.Dir = dir
	out, _ := srv.StdoutPipe()
	check(srv.Start())
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	var l struct{ Listening string }
	check(json.Unmarshal([]byte(line), &l))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers * 2}}
	call := func(tool string, args map[string]any) (map[string]any, time.Duration) {
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args})
		req, _ := http.NewRequest("POST", l.Listening+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		begin := time.Now()
		resp, err := client.Do(req)
		check(err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(begin)
		var env map[string]any
		check(json.Unmarshal(raw, &env))
		if env["ok"] != true {
			check(fmt.Errorf("%s: %s", tool, raw))
		}
		return env["data"].(map[string]any), took
	}

	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	lifecycles := 0
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := call("conclude", map[string]any{"statement": "load claim"})
			id := data["id"].(string)
			var mine []time.Duration
			var cbs []time.Duration
			n := 0
			for time.Now().Before(deadline) {
				req, d1 := call("assume", map[string]any{"id": id})
				_, d2 := call("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/x"}, "request_id": req["request_id"]})
				mine, cbs = append(mine, d1), append(cbs, d2)
				n++
			}
			mu.Lock()
			lat["assume"] = append(lat["assume"], mine...)
			lat["dismiss (callback)"] = append(lat["dismiss (callback)"], cbs...)
			lifecycles += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	fmt.Printf("| route | requests | p50 | p99 |\n|---|---|---|---|\n")
	for _, route := range []string{"assume", "dismiss (callback)"} {
		d := lat[route]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("| POST /v1/tools/%s | %d | %s | %s |\n", route, len(d), ms(d[len(d)*50/100]), ms(d[len(d)*99/100]))
	}
	fmt.Printf("\nfull lifecycles: %d in %s = %.0f lifecycles/s with %d workers (target >= 1500/s, callback p99 < 20 ms)\n",
		lifecycles, elapsed.Round(time.Millisecond), float64(lifecycles)/elapsed.Seconds(), *workers)
	if *latencies != "" {
		var b bytes.Buffer
		b.WriteString("route,microseconds\n")
		for route, ds := range lat {
			for _, d := range ds {
				fmt.Fprintf(&b, "%s,%d\n", route, d.Microseconds())
			}
		}
		check(os.WriteFile(*latencies, b.Bytes(), 0o644))
	}
	// A load run ends with the invariant checker.
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	doctor := exec.Command(dont, "doctor", "--strict")
	doctor.Dir = dir
	if out, err := doctor.Output(); err != nil {
		check(fmt.Errorf("dont doctor --strict after the load: %v %s", err, out))
	}
	fmt.Println("dont doctor --strict after the load: no violations")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}
