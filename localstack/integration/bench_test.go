package integration_test

// Benchmarks of the AWS path, run by bench/aws.sh through
// localstack/integration.sh. They skip unless DONT_IT_BENCH_SPAWNS is set.
// Results are printed as "BENCH |...|" table rows.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

func benchSpawns(t *testing.T) int {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv("DONT_IT_BENCH_SPAWNS"))
	if n <= 0 {
		t.Skip("benchmarks run under bench/aws.sh (DONT_IT_BENCH_SPAWNS)")
	}
	return n
}

func row(cells ...any) {
	var b strings.Builder
	b.WriteString("BENCH |")
	for _, c := range cells {
		fmt.Fprintf(&b, " %v |", c)
	}
	fmt.Println(b.String())
}

// launched is a function under a fresh emulator instance this test
// started; it is killed by PID when the test ends.
type launched struct {
	*function
	cmd *exec.Cmd
	mu  sync.Mutex
	out []string
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// launch starts bootstrap fn (api or sweeper) under its own aws-lambda-rie
// with its own port pair and waits until the emulator listens.
func launch(t *testing.T, fn string, env ...string) *launched {
	t.Helper()
	rie, dir := os.Getenv("DONT_IT_RIE"), os.Getenv("DONT_IT_LAMBDA_DIR")
	if rie == "" || dir == "" {
		t.Fatal("DONT_IT_RIE and DONT_IT_LAMBDA_DIR are not set: run under localstack/integration.sh")
	}
	invoke, runtime := freePort(t), freePort(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", invoke),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", runtime), filepath.Join(dir, fn, "bootstrap"))
	cmd.Env = append(os.Environ(), append([]string{"AWS_LAMBDA_FUNCTION_NAME=dont-bench-" + fn, "AWS_LAMBDA_FUNCTION_TIMEOUT=60"}, env...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	l := &launched{cmd: cmd,
		function: &function{name: fn, url: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", invoke), http: &http.Client{Timeout: 90 * time.Second}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); pw.Close() })
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.out = append(l.out, sc.Text())
			l.mu.Unlock()
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", invoke)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the emulator did not listen", fn)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return l
}

var (
	initLine     = regexp.MustCompile(`"msg":"init","duration_ms":([0-9.]+)`)
	reportInitRe = regexp.MustCompile(`REPORT RequestId: \S+\tInit Duration: ([0-9.]+) ms`)
)

func (l *launched) find(re *regexp.Regexp) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.out {
		if m := re.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			return v, true
		}
	}
	return 0, false
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func median[T any](xs []T, less func(a, b T) int) T {
	slices.SortFunc(xs, less)
	return xs[len(xs)/2]
}

// The Lambda functions' start-up under the emulator, which starts the
// bootstrap at the first invoke: that invoke's latency (process start,
// Go runtime, clients, the handler's DynamoDB calls), the init time the
// function logs (main until lambda.Start), the emulator's REPORT Init
// Duration, and the latency of later (warm) invokes.
func TestBenchColdStart(t *testing.T) {
	benchSpawns(t)
	s := setup(t)
	p := s.newProject(t)
	const rounds = 5
	row("function", "first invoke (cold: exec + init + handler), median of 5", "init in main (clients built), median", "RIE REPORT Init Duration, median", "warm invoke, median of 20")
	row("---", "---", "---", "---", "---")
	for _, fn := range []string{"api", "sweeper"} {
		var first, warm []time.Duration
		var inMain, rieInit []float64
		for range rounds {
			// The emulator starts the bootstrap at the first invoke.
			l := launch(t, fn, "DONT_SPAWN_TIMEOUT=24h")
			invokeOnce := func() time.Duration {
				t0 := time.Now()
				var err error
				if fn == "api" {
					var resp map[string]any
					body, _ := json.Marshal(map[string]any{"args": map[string]any{"statement": "s"}})
					err = l.invoke(ctx, httpEvent("POST", "/v1/tools/conclude", p.token, body, nil), &resp)
					if err == nil && resp["statusCode"] != 200.0 {
						err = fmt.Errorf("status %v", resp["statusCode"])
					}
				} else {
					err = l.invoke(ctx, json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`), nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				return time.Since(t0)
			}
			first = append(first, invokeOnce())
			for range 20 / rounds {
				warm = append(warm, invokeOnce())
			}
			time.Sleep(50 * time.Millisecond) // let the REPORT line arrive
			if v, ok := l.find(initLine); ok {
				inMain = append(inMain, v)
			}
			if v, ok := l.find(reportInitRe); ok {
				rieInit = append(rieInit, v)
			}
			l.cmd.Process.Kill()
			l.cmd.Wait()
		}
		byDur := func(a, b time.Duration) int { return int(a - b) }
		byF := func(a, b float64) int {
			switch {
			case a < b:
				return -1
			case a > b:
				return 1
			}
			return 0
		}
		if len(inMain) == 0 || len(rieInit) == 0 {
			t.Fatalf("%s: no init figures in the output", fn)
		}
		row(fn, ms(median(first, byDur)), fmt.Sprintf("%.1f ms", median(inMain, byF)), fmt.Sprintf("%.2f ms", median(rieInit, byF)),
			ms(median(warm, byDur)))
	}
}

// Timeout lag: from a spawn's expires_at to its committed spawn_timeout
// (the resolved_at the sweeper commits), over DONT_IT_BENCH_SPAWNS spawns
// per case, through real delayed SQS messages and the sweeper function
// driven by a poller loop like Lambda's (long poll, batches of 10). The
// cases differ in how much the whole-second DelaySeconds rounds up.
func TestBenchTimeoutLag(t *testing.T) {
	n := benchSpawns(t)
	shared := setup(t)
	row("spawn timeout", "SQS delay rounding", "spawns", "timed out by the sweeper", "p50", "p90", "p99", "max", "issue rate")
	row("---", "---", "---", "---", "---", "---", "---", "---", "---")
	for _, c := range []struct {
		timeout, rounding string
	}{{"2s", "~0 (whole seconds)"}, {"2.5s", "+0.5 s"}, {"2.05s", "+0.95 s (worst case)"}} {
		// A fresh table and fresh functions per case: the DynamoDB stand-in
		// answers index queries by scanning the whole table and serialises
		// requests, so a table grown by earlier cases would slow this one.
		s := *shared
		s.table = fmt.Sprintf("%s-lag-%s", shared.table, strings.ReplaceAll(c.timeout, ".", "_"))
		if err := dynamo.CreateTable(ctx, s.ddb, s.table); err != nil {
			t.Fatal(err)
		}
		api := launch(t, "api", "DONT_SPAWN_TIMEOUT="+c.timeout, "DONT_TABLE="+s.table)
		sweeper := launch(t, "sweeper", "DONT_TABLE="+s.table)
		s.sweeper = sweeper.function
		// Each project's token is made in this case's table.
		s.operator = launch(t, "operator", "DONT_TABLE="+s.table).function
		// One project per spawn: every API call first sweeps its own
		// project's expired spawns, which would beat the queue to them.
		projects := make([]*project, n)
		ids := make([]string, n)
		for i := range ids {
			projects[i] = s.newProject(t)
			ids[i] = projects[i].ok(api.function, "conclude", map[string]any{"statement": fmt.Sprintf("claim %d", i)}).str("id")
		}
		// The poller runs while spawns are being issued, as Lambda's would.
		stop := make(chan struct{})
		pollErr := make(chan error, 1)
		go func() { pollErr <- s.poll(stop) }()

		type issued struct {
			p   *project
			req spawnRequest
		}
		reqs := make([]issued, n)
		t0 := time.Now()
		for i, id := range ids {
			reqs[i] = issued{projects[i], projects[i].assume(api.function, id)}
		}
		rate := float64(n) / time.Since(t0).Seconds()

		var lags []time.Duration
		bySweeper := 0
		pending := slices.Clone(reqs)
		deadline := time.Now().Add(2*time.Minute + time.Duration(n)*100*time.Millisecond)
		for len(pending) > 0 && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			var still []issued
			for _, r := range pending {
				sp := r.p.spawn(r.req.RequestID)
				if sp.State != spawn.Resolved {
					still = append(still, r)
					continue
				}
				if sp.Outcome != spawn.TimeoutRestored || sp.ResolvedAt == nil {
					t.Fatalf("%s resolved as %s", r.req.RequestID, sp.Outcome)
				}
				lags = append(lags, sp.ResolvedAt.Sub(sp.ExpiresAt))
				if to := r.p.events(r.req.EntityID, ledger.EvSpawnTimeout); len(to) == 1 && to[0].Author == "sweeper" {
					bySweeper++
				}
			}
			pending = still
		}
		close(stop)
		if err := <-pollErr; err != nil {
			t.Fatal(err)
		}
		if len(pending) > 0 {
			t.Fatalf("%d of %d spawns did not time out", len(pending), n)
		}
		slices.Sort(lags)
		q := func(f float64) string { return ms(lags[min(len(lags)-1, int(f*float64(len(lags))))]) }
		if lags[0] < 0 {
			t.Fatalf("a spawn timed out %v before its expires_at", -lags[0])
		}
		if bySweeper != n {
			t.Fatalf("%d of %d timeouts were committed by the sweeper function", bySweeper, n)
		}
		row(c.timeout, c.rounding, n, bySweeper, q(0.50), q(0.90), q(0.99), ms(lags[len(lags)-1]), fmt.Sprintf("%.0f/s", rate))
		for _, l := range []*launched{api, sweeper} {
			l.cmd.Process.Kill()
			l.cmd.Wait()
		}
	}
}

// poll is pump without a test: receive, sweep, delete until stop closes.
func (s *suite) poll(stop chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		msgs, err := s.receiveErr(time.Second)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			continue
		}
		if failed, err := s.sweepErr(msgs); err != nil {
			return err
		} else if len(failed) > 0 {
			return fmt.Errorf("the sweeper failed records %v", failed)
		}
	}
}
