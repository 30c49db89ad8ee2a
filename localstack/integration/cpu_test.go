package integration_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/spawn"
)

// bootstrapPID is the process the emulator runs the function's bootstrap
// in (its child, started at the first invoke).
func (l *launched) bootstrapPID(t *testing.T) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
		s := string(stat)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(rest) > 1 && rest[1] == strconv.Itoa(l.cmd.Process.Pid) && strings.Contains(s, "(bootstrap)") {
			return pid
		}
	}
	t.Fatalf("%s: no bootstrap process under the emulator (pid %d)", l.name, l.cmd.Process.Pid)
	return 0
}

// peakRSSMB is process pid's peak resident memory (VmHWM), in MB.
func peakRSSMB(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return float64(kb) / 1024
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// cpuTime is the CPU time process pid has used, all its threads together,
// from the scheduler's per-thread nanosecond counters.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// meter sums the CPU time, the wall time and the DynamoDB requests of the
// operations it measures.
type meter struct {
	t         *testing.T
	pid       int
	requests  *atomic.Int64 // the function's DynamoDB requests (dynamoCounter)
	cpu, wall time.Duration
	reqs      int64
	ops       int
}

func (m *meter) measure(ops int, f func()) {
	c0, w0, r0 := cpuTime(m.t, m.pid), time.Now(), m.requests.Load()
	f()
	m.wall += time.Since(w0)
	m.cpu += cpuTime(m.t, m.pid) - c0
	m.reqs += m.requests.Load() - r0
	m.ops += ops
}

func (m *meter) row(fn, op string) {
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.3f", float64(d.Microseconds())/1000/float64(m.ops))
	}
	fmt.Printf("CPU | %s | %s | %d | %s | %s | %.2f |\n", fn, op, m.ops, per(m.cpu), per(m.wall), float64(m.reqs)/float64(m.ops))
}

// dynamoCounter is a pass-through proxy in front of the DynamoDB
// endpoint that counts the requests a function sends through it.
func dynamoCounter(t *testing.T) (endpoint string, requests *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(os.Getenv("DONT_DYNAMO_ENDPOINT"))
	if err != nil || target.Host == "" {
		t.Fatalf("DONT_DYNAMO_ENDPOINT %q: the proxy needs the DynamoDB endpoint", os.Getenv("DONT_DYNAMO_ENDPOINT"))
	}
	requests = &atomic.Int64{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// The CPU time each function's bootstrap spends per operation, under the
// emulator against the DynamoDB and SQS stand-ins: the API function per
// spawn lifecycle (assume, then its callback), the sweeper per timeout
// message and per project of a scheduled sweep. bench/report (-only
// lambdacpu) turns these into the CPU share and cost of each memory size
// and the capacity table of docs/aws.md. Rows are printed as
// "CPU | function | operation | count | CPU ms per op | wall ms per op |
// DynamoDB requests per op |"; wall time includes the stand-ins' latency,
// which is not AWS's (the DynamoDB stand-in serialises requests and scans
// for index queries), so the report models the wait from the counted
// requests instead.
func TestBenchLambdaCPU(t *testing.T) {
	n := benchSpawns(t)
	s0 := setup(t)
	s := *s0
	apiDynamo, apiRequests := dynamoCounter(t)
	sweeperDynamo, sweeperRequests := dynamoCounter(t)
	api := launch(t, "api", "DONT_SPAWN_TIMEOUT=24h", "AWS_ENDPOINT_URL_DYNAMODB="+apiDynamo)
	const expiry = 20 * time.Second
	apiShort := launch(t, "api", fmt.Sprintf("DONT_SPAWN_TIMEOUT=%s", expiry))
	sweeper := launch(t, "sweeper", "AWS_ENDPOINT_URL_DYNAMODB="+sweeperDynamo)
	s.sweeper = sweeper.function

	// API: lifecycles on verified claims of a few projects.
	const projects = 5
	ps := make([]*project, projects)
	for i := range ps {
		ps[i] = s.newProject(t)
		ps[i].verifiedClaim(api.function) // warms the instance and the project
	}
	apiMeter := &meter{t: t, pid: api.bootstrapPID(t), requests: apiRequests}
	for i := range n {
		p := ps[i%projects]
		id := p.verifiedClaim(api.function)
		apiMeter.measure(1, func() {
			req := p.assume(api.function, id)
			p.ok(api.function, "trust", map[string]any{"id": id, "reason": "the cited table gives 99.97 C at 1 atm", "request_id": req.RequestID}, req.Callback.Token)
		})
	}
	apiMeter.row("api", "lifecycle (assume + callback, 2 requests)")
	// The stack gives the api 128 MB (infra/stack DefaultAPIMemoryMB, the
	// size by cost per operation): its bootstrap's peak resident memory
	// over these lifecycles must leave half of that free.
	const apiMemoryMB = 128
	if peak := peakRSSMB(t, apiMeter.pid); peak > apiMemoryMB/2 {
		t.Errorf("the api bootstrap's peak RSS is %.1f MB: more than half of its %d MB", peak, apiMemoryMB)
	} else {
		fmt.Printf("MEM | api | peak RSS %.1f MB after %d lifecycles | deployed at %d MB |\n", peak, n, apiMemoryMB)
	}

	// Sweeper: n spawns over the same projects, their timeout messages
	// received once due and handed over ten to a batch.
	type issued struct {
		p   *project
		req spawnRequest
	}
	var reqs []issued
	for i := range n {
		p := ps[i%projects]
		id := p.verifiedClaim(apiShort.function)
		reqs = append(reqs, issued{p, p.assume(apiShort.function, id)})
	}
	last := reqs[len(reqs)-1].req.ExpiresAt
	time.Sleep(time.Until(last) + time.Second)
	var msgs []sqstypes.Message
	for deadline := time.Now().Add(time.Minute); len(msgs) < n && time.Now().Before(deadline); {
		got, err := s.receiveErr(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, got...)
	}
	if len(msgs) < n {
		t.Fatalf("%d of %d timeout messages received", len(msgs), n)
	}
	// One batch first, unmeasured: the sweeper's cold start.
	if failed := s.sweep(t, msgs[:10]); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	sweepMeter := &meter{t: t, pid: sweeper.bootstrapPID(t), requests: sweeperRequests}
	for i := 10; i < len(msgs); i += 10 {
		batch := msgs[i:min(i+10, len(msgs))]
		sweepMeter.measure(len(batch), func() {
			if failed := s.sweep(t, batch); len(failed) != 0 {
				t.Fatalf("failed records %v", failed)
			}
		})
	}
	for _, r := range reqs {
		if sp := r.p.spawn(r.req.RequestID); sp.State != spawn.Resolved || sp.Outcome != spawn.TimeoutRestored {
			t.Fatalf("%s: %s %s after the sweeper's batches", r.req.RequestID, sp.State, sp.Outcome)
		}
	}
	sweepMeter.row("sweeper", "timeout message")

	// Sweeper: the scheduled sweep's messages, one per idle project, ten
	// to a batch; each project swept for the first time by this process
	// (its store opened: the per-project read of its secret included), then
	// again (kept warm).
	idle := make([]string, n)
	for i := range idle {
		idle[i] = s.newProject(t).name
	}
	sweepBatch := func(names []string) {
		var ms []sqstypes.Message
		for i, name := range names {
			ms = append(ms, sqstypes.Message{MessageId: aws.String(fmt.Sprintf("sweep-%d", i)), ReceiptHandle: aws.String("-"),
				Body: aws.String(`{"v":1,"sweep":"` + name + `"}`)})
		}
		var resp struct {
			BatchItemFailures []struct {
				ItemIdentifier string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if err := s.sweeper.invoke(ctx, s.sqsEventOf(s.sweepQueueURL, ms), &resp); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("sweep batch: %v %v", err, resp.BatchItemFailures)
		}
	}
	for _, warm := range []bool{false, true} {
		m := &meter{t: t, pid: sweeper.bootstrapPID(t), requests: sweeperRequests}
		for i := 0; i < len(idle); i += 10 {
			batch := idle[i:min(i+10, len(idle))]
			m.measure(len(batch), func() { sweepBatch(batch) })
		}
		m.row("sweeper", map[bool]string{false: "project sweep (first by this instance)", true: "project sweep (kept)"}[warm])
	}
}
