package deployment_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/kms"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
)

// The KMS stand-in (localstack/kmsstandin), started by the first test that
// needs it and stopped by TestMain.
var kmsStandin struct {
	once     sync.Once
	endpoint string
	key      string
	stop     func()
	err      error
}

// kmsSealer is a KMS sealer over the stand-in whose client counts its
// requests in ops; a key of its own per call, so a test may disable it.
func kmsSealer(t *testing.T, ops *opCount) (kms.Sealer, *awskms.Client) {
	t.Helper()
	kmsStandin.once.Do(func() {
		kmsStandin.endpoint, kmsStandin.stop, kmsStandin.err = standin.KMS()
	})
	if kmsStandin.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("KMS stand-in: %v", kmsStandin.err)
		}
		t.Skipf("KMS stand-in: %v", kmsStandin.err)
	}
	admin := standin.KMSClient(kmsStandin.endpoint)
	key, err := admin.CreateKey(ctx, &awskms.CreateKeyInput{Description: aws.String("dont cost test")})
	if err != nil {
		t.Fatal(err)
	}
	client := awskms.New(admin.Options(), func(o *awskms.Options) { o.APIOptions = append(o.APIOptions, ops.register) })
	return kms.Sealer{Client: client, KeyID: *key.KeyMetadata.Arn}, admin
}

// opCount counts an AWS client's requests by operation, every attempt
// (each is billed), as a middleware on the real SDK client.
type opCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCount) register(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("dontCountRequests",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[awsmiddleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *opCount) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

func (c *opCount) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

func (c *opCount) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = nil
}

// countedQueue is the timeout queue's client: it counts the messages the
// api sends (a lifecycle whose spawn expires beyond SQS's 15-minute
// horizon sends none; the scheduled sweep sends it later if still due).
type countedQueue struct{ sent atomic.Int64 }

func (q *countedQueue) SendMessage(_ context.Context, _ *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	q.sent.Add(1)
	return &awssqs.SendMessageOutput{}, nil
}

// deployed is the api function as deployed: Connect's wiring (the
// deployment's configuration from its environment, TableService with the
// project's settings, the secret cache over KMS, the SQS scheduler, the
// registry), its logger at INFO behind the stage (DONT_ACCESS_LOG=stage),
// (or, with stage false, as the function-URL variant, whose own line is
// the access line), and counters on DynamoDB, KMS and SQS.
type deployed struct {
	*api
	dynamo *capacity.Counter
	kms    *opCount
	kmsAPI *awskms.Client
	key    string
	sqs    *countedQueue
	logs   *bytes.Buffer
	cache  *deployment.SecretCache
	clock  atomic.Int64 // the secret cache's clock
}

func newDeployed(t *testing.T, stage bool) *deployed {
	t.Helper()
	needServer(t)
	if stage {
		t.Setenv(deployment.EnvAccessLog, "stage")
	} else {
		t.Setenv(deployment.EnvAccessLog, "")
	}
	t.Setenv(deployment.EnvLogLevel, "INFO")
	d := &deployed{dynamo: newCounter(), kms: &opCount{}, sqs: &countedQueue{}, logs: &bytes.Buffer{}}
	d.clock.Store(t0.UnixNano())
	sealer, admin := kmsSealer(t, d.kms)
	d.kmsAPI, d.key = admin, sealer.KeyID
	d.cache = deployment.NewSecretCache(sealer, deployment.SecretCacheTTL)
	d.cache.Now = func() time.Time { return time.Unix(0, d.clock.Load()) }
	env := map[string]string{deployment.EnvTable: table, deployment.EnvTimeoutQueueURL: "http://q", deployment.EnvSecretsKey: sealer.KeyID}
	cfg, err := deployment.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	log := deployment.NewLogger(d.logs)
	client := newClient(nil, d.dynamo)
	dep := &deployment.Deployment{
		Config: cfg, Author: "api", Log: log, DynamoDB: client, Sealer: d.cache,
		Queue:    &sqssched.Queue{Client: d.sqs, URL: cfg.QueueURL},
		Registry: &deployment.Registry{Client: client, Table: table},
	}
	backend := dep.Backend()
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Backend: backend, Log: deployment.CallLogger(log), RatePerSecond: -1}))
	t.Cleanup(srv.Close)
	d.api = &api{t: t, srv: srv, backend: backend, counter: d.dynamo}
	return d
}

// lifecycle is spawn → callback through the API as the CLI drives it:
// assume with the bearer token, dismiss with the callback token, an
// Idempotency-Key on both. quiet rebuilds the project's service before
// each call, as every call of a project that reaches a warm instance
// more than projectRefresh after its previous one does.
func (d *deployed) lifecycle(project, harness, claim string, i int, quiet bool) {
	d.t.Helper()
	if quiet {
		d.backend.Refresh(project)
	}
	s := d.call(harness, "assume", map[string]any{"id": claim}, "Idempotency-Key", fmt.Sprintf("a-%d", i))
	if s.status != 200 {
		d.t.Fatalf("assume: %d %v", s.status, s.env.Data)
	}
	cb, _ := s.env.Data["callback"].(map[string]any)
	if quiet {
		d.backend.Refresh(project)
	}
	r := d.call(cb["token"].(string), "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/boiling"},
		"request_id": s.str("request_id")}, "Idempotency-Key", fmt.Sprintf("d-%d", i))
	if r.status != 200 {
		d.t.Fatalf("dismiss: %d %v", r.status, r.env.Data)
	}
}

// A warm api instance rebuilds a project's store every minute; the secret
// it opened stays in the process's cache for SecretCacheTTL, so the
// rebuilt store asks KMS nothing. The cache never decides which tokens
// verify: a revoked bearer token is refused on the next call, a retired
// secret version once the instance rebuilt the store (as before the
// cache: within projectRefresh), and a key KMS no longer opens with is
// refused once the TTL is out.
func TestAProcessOpensASecretOnceAndRevocationStillTakesEffect(t *testing.T) {
	d := newDeployed(t, true)
	project := "secretcache-" + randomName()
	harness := d.token(project, auth.RoleHarness)
	claim := d.call(harness, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).str("id")
	d.lifecycle(project, harness, claim, 0, false)
	if n := d.kms.get("Decrypt"); n != 1 {
		t.Fatalf("the first lifecycle asked KMS to decrypt %d times, want 1", n)
	}
	for i := 1; i <= 3; i++ {
		d.lifecycle(project, harness, claim, i, true) // every call on a rebuilt store
	}
	if n := d.kms.get("Decrypt"); n != 1 {
		t.Fatalf("rebuilt stores asked KMS to decrypt %d times in all, want the first one only", n)
	}

	t.Run("a revoked bearer token is refused on the next call", func(t *testing.T) {
		victim := d.token(project, auth.RoleHarness)
		if r := d.call(victim, "list", nil); r.status != 200 {
			t.Fatalf("before revocation: %d", r.status)
		}
		id, _, _ := auth.ParseBearer(victim)
		// An admin's revocation, made by another instance (a person
		// confirms it at their terminal): this one stays warm.
		if _, err := d.backend.Project(project).Service.Credentials.Revoke(ctx, id); err != nil {
			t.Fatal(err)
		}
		if r := d.call(victim, "list", nil); r.status != 401 {
			t.Fatalf("a revoked token on a warm instance: %d %v", r.status, r.env.Data)
		}
	})

	t.Run("a retired version is refused once the store is rebuilt, its bytes cached or not", func(t *testing.T) {
		svc := d.backend.Project(project).Service
		_, rid, oldToken := d.claimUnderReview(harness, "a claim under review before the rotation")
		if _, err := svc.Credentials.RotateProjectSecret(ctx); err != nil {
			t.Fatal(err)
		}
		// Far past the lease: the version may go.
		if rep, err := deployment.RetireSecrets(ctx, svc, time.Now().Add(30*24*time.Hour)); err != nil || len(rep.Retired) != 1 {
			t.Fatalf("retire: %+v %v", rep, err)
		}
		d.backend.Refresh(project) // the minute a warm instance keeps a store
		r := d.call(oldToken, "spawns.heartbeat", map[string]any{"request_id": rid})
		if r.status != 401 || r.str("code") != "unauthenticated" {
			t.Fatalf("a retired version's token: %d %v", r.status, r.env.Data)
		}
	})

	t.Run("a key KMS refuses stops opening secrets once the TTL is out", func(t *testing.T) {
		_, rid, token := d.claimUnderReview(harness, "a claim under review before the key is disabled")
		if _, err := d.kmsAPI.DisableKey(ctx, &awskms.DisableKeyInput{KeyId: aws.String(d.key)}); err != nil {
			t.Fatal(err)
		}
		d.backend.Refresh(project)
		// Within the TTL the rebuilt store opens the version from the cache.
		if r := d.call(token, "spawns.heartbeat", map[string]any{"request_id": rid}); r.status != 200 {
			t.Fatalf("within the TTL: %d %v", r.status, r.env.Data)
		}
		d.clock.Add(int64(deployment.SecretCacheTTL))
		d.backend.Refresh(project)
		if r := d.call(token, "spawns.heartbeat", map[string]any{"request_id": rid}); r.status == 200 {
			t.Fatalf("a token verified with the key disabled past the TTL: %d %v", r.status, r.env.Data)
		}
	})
}

// Prices assumed, us-east-1, on demand, without free tiers
// (docs/aws-cost.md, "Prices assumed"), in dollars per unit.
const (
	priceWRU       = 0.625 / 1e6
	priceRRU       = 0.125 / 1e6
	priceKMS       = 0.03 / 1e4 // symmetric Decrypt/Encrypt
	priceSQS       = 0.40 / 1e6
	priceHTTPAPI   = 1.00 / 1e6
	priceLambdaReq = 0.20 / 1e6
	priceLambdaGBs = 0.0000133334 // arm64
	priceLogsPerGB = 0.50
	logEventBytes  = 26    // CloudWatch Logs bills each event's bytes plus 26
	lambdaMemoryMB = 128.0 // infra/stack's api function (DefaultAPIMemoryMB; its TestFunctions)
	lambdaMemoryGB = lambdaMemoryMB / 1024
	// Lambda gives CPU in proportion to memory, one vCPU at 1,769 MB; an
	// api call waits for its DynamoDB requests in sequence, each modelled
	// at 5 ms (docs/aws.md, "Limits per deployment", the measured model
	// bench/report draws its capacity table with).
	lambdaVCPUShare = lambdaMemoryMB / 1769
	dynamoRequestMS = 5.0
	stageLineBytes  = 123 // the stage's access line (infra/stack TestARequestWritesOneAccessLineBehindTheHTTPAPI)
	callsPerCycle   = 2
	costGoalMillion = 8.00
	// restCeiling bounds everything but the write units and the HTTP API
	// requests: reads, KMS, SQS, Lambda and logs, what the secret cache,
	// tracing off and one log line a request keep small.
	restCeiling = 2.50
)

// costRow is one line of docs/aws-cost.md's quiet-project table.
type costRow struct {
	item    string
	count   float64 // per lifecycle
	dollars float64 // per million lifecycles
}

// TestAQuietProjectsLifecycleCostsWhatDocsAwsCostMdSays drives spawn →
// callback lifecycles of a quiet project through the deployed wiring
// (every call on a rebuilt project service), counts what they ask of
// DynamoDB (units, through capacity.Counter), KMS and SQS through the
// real SDK clients, and what the function logs at INFO behind the stage,
// prices it, and checks docs/aws-cost.md's table row by row.
func TestAQuietProjectsLifecycleCostsWhatDocsAwsCostMdSays(t *testing.T) {
	d := newDeployed(t, true)
	project := "quiet-" + randomName()
	harness := d.token(project, auth.RoleHarness)
	claim := d.call(harness, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).str("id")
	d.lifecycle(project, harness, claim, 0, true) // the process's first: registry, first Decrypt
	d.dynamo.Reset()
	d.kms.reset()
	d.sqs.sent.Store(0)
	d.logs.Reset()
	const n = 20
	for i := 1; i <= n; i++ {
		d.lifecycle(project, harness, claim, i, true)
	}
	if err := d.dynamo.Err(); err != nil {
		t.Fatal(err)
	}
	use := d.dynamo.Total()
	per := func(x float64) float64 { return x / n }
	logLines := float64(strings.Count(d.logs.String(), "\n"))
	logBytes := float64(d.logs.Len()) + logLines*logEventBytes + callsPerCycle*n*(stageLineBytes+logEventBytes)
	rows := []costRow{
		{"DynamoDB writes", per(use.WriteUnits), 0},
		{"DynamoDB reads", per(use.ReadUnits), 0},
		{"KMS", per(float64(d.kms.total())), 0},
		{"SQS", per(float64(d.sqs.sent.Load())), 0},
		{"HTTP API", callsPerCycle, 0},
		{"Lambda (api)", callsPerCycle, 0},
		{"CloudWatch Logs", per(logBytes), 0},
	}
	// Lambda's duration: the api's CPU per lifecycle as measured
	// (docs/aws.md), stretched by 128 MB's share of a vCPU, plus the
	// DynamoDB requests counted here in sequence.
	cpuMS := apiCPUPerLifecycle(t)
	lambdaSecs := (cpuMS/lambdaVCPUShare + per(float64(use.Requests))*dynamoRequestMS) / 1000
	lambdaPerCall := priceLambdaReq + lambdaMemoryGB*lambdaSecs*priceLambdaGBs/callsPerCycle
	t.Logf("Lambda: %.2f ms CPU a lifecycle at %.3f vCPU and %.2f requests at %.0f ms: %.1f ms a lifecycle", cpuMS, lambdaVCPUShare, per(float64(use.Requests)), dynamoRequestMS, lambdaSecs*1000)
	price := []float64{priceWRU, priceRRU, priceKMS, priceSQS, priceHTTPAPI, lambdaPerCall, priceLogsPerGB / 1e9}
	total := 0.0
	for i := range rows {
		rows[i].dollars = rows[i].count * price[i] * 1e6
		total += round2(rows[i].dollars)
	}
	total = round2(total)
	for _, r := range rows {
		t.Logf("| %s | %.4g | %.2f |", r.item, r.count, r.dollars)
	}
	for op, u := range d.dynamo.Usage() {
		t.Logf("%s: %d requests, %.2f RRU, %.2f WRU (index %.2f) a lifecycle", op, u.Requests/n, u.ReadUnits/n, u.WriteUnits/n, u.IndexWriteUnits/n)
	}
	t.Logf("total %.2f; DynamoDB requests %.2f a lifecycle; function log bytes %.1f, lines %.2f a lifecycle", total, per(float64(use.Requests)), per(float64(d.logs.Len())), per(logLines))

	doc, err := os.ReadFile("../../../docs/aws-cost.md")
	if err != nil {
		t.Fatal(err)
	}
	table := docTable(t, string(doc), "## A quiet project, all in")
	for _, r := range rows {
		got, ok := table[r.item]
		if !ok {
			t.Errorf("docs/aws-cost.md has no row %q", r.item)
			continue
		}
		if math.Abs(got.count-r.count) > 0.05*math.Max(1, r.count) || math.Abs(got.dollars-round2(r.dollars)) > 0.011 {
			t.Errorf("%s: the doc says %v a lifecycle, $%.2f a million; counted %.4g, $%.2f", r.item, got.count, got.dollars, r.count, r.dollars)
		}
	}
	if got := table["total"]; math.Abs(got.dollars-total) > 0.011 {
		t.Errorf("total: the doc says $%.2f, computed $%.2f", got.dollars, total)
	}
	// The writes and the HTTP API requests (the doc's "floor" line), and
	// everything else, which the secret cache, tracing off and one log
	// line a request keep small.
	floor := round2(rows[0].dollars + rows[4].dollars)
	if got := table["floor"]; math.Abs(got.dollars-floor) > 0.011 {
		t.Errorf("floor: the doc says $%.2f, computed $%.2f", got.dollars, floor)
	}
	rest := round2(total - floor)
	if rest > restCeiling {
		t.Errorf("reads, KMS, SQS, Lambda and logs cost $%.2f per million lifecycles, above $%.2f", rest, restCeiling)
	}
	if got := table["the rest"]; math.Abs(got.dollars-rest) > 0.011 {
		t.Errorf("the rest: the doc says $%.2f, computed $%.2f", got.dollars, rest)
	}
	// The goal, $8 a million all in: the doc says whether this total
	// meets it, in so many words, and where it does not, what remains
	// (a total above the doc's fails the check of the total above).
	verdict := fmt.Sprintf("**The $%.0f goal is met: $%.2f.**", costGoalMillion, total)
	if total > costGoalMillion {
		verdict = fmt.Sprintf("**The $%.0f goal is not met: $%.2f.**", costGoalMillion, total)
	}
	if !strings.Contains(section(t, string(doc), "## A quiet project, all in"), verdict) {
		t.Errorf("docs/aws-cost.md, \"A quiet project, all in\", does not say %q", verdict)
	}
	// A claim's first verification: no tail of an earlier lifecycle to
	// move into history before the issue (the lifecycles above re-verify
	// one claim). Its writes only, not in the total.
	firstWRU := 0.0
	for i := 1; i <= n; i++ {
		fresh := d.call(harness, "conclude", map[string]any{"statement": fmt.Sprintf("water boils at 100 C at sea level, %d", i)}).str("id")
		before := d.dynamo.Total().WriteUnits
		d.lifecycle(project, harness, fresh, 100+i, true)
		firstWRU += d.dynamo.Total().WriteUnits - before
	}
	t.Logf("a claim's first verification: %.2f write units a lifecycle", per(firstWRU))
	if got := table["DynamoDB writes, first verification"]; math.Abs(got.count-per(firstWRU)) > 0.05*per(firstWRU) || math.Abs(got.dollars-round2(per(firstWRU)*priceWRU*1e6)) > 0.011 {
		t.Errorf("DynamoDB writes, first verification: the doc says %v, $%.2f; counted %.4g, $%.2f", got.count, got.dollars, per(firstWRU), per(firstWRU)*priceWRU*1e6)
	}
	// Without a stage (the function-URL variant) the function's own
	// per-request line is the access line: measured, not in the total.
	fu := newDeployed(t, false)
	project = "quiet-url-" + randomName()
	harness = fu.token(project, auth.RoleHarness)
	claim = fu.call(harness, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).str("id")
	fu.lifecycle(project, harness, claim, 1000, true)
	fu.logs.Reset()
	for i := 1001; i <= 1000+n; i++ {
		fu.lifecycle(project, harness, claim, i, true)
	}
	fuLines := float64(strings.Count(fu.logs.String(), "\n"))
	fuBytes := per(float64(fu.logs.Len()) + fuLines*logEventBytes)
	t.Logf("function URL: %.1f bytes in %.2f lines a lifecycle", fuBytes, per(fuLines))
	if got := table["CloudWatch Logs, function URL"]; math.Abs(got.count-fuBytes) > 0.05*fuBytes || math.Abs(got.dollars-round2(fuBytes*priceLogsPerGB/1e3)) > 0.011 {
		t.Errorf("CloudWatch Logs, function URL: the doc says %v bytes, $%.2f; measured %.1f bytes, $%.2f", got.count, got.dollars, fuBytes, fuBytes*priceLogsPerGB/1e3)
	}
	// The same lifecycle behind the function URL: no HTTP API request,
	// the function's own line instead of the stage's.
	fuTotal := round2(total - round2(rows[4].dollars) - round2(rows[6].dollars) + round2(fuBytes*priceLogsPerGB/1e3))
	if got := table["total, function URL"]; math.Abs(got.dollars-fuTotal) > 0.011 {
		t.Errorf("total, function URL: the doc says $%.2f, computed $%.2f", got.dollars, fuTotal)
	}
	// A quiet project's rebuilt stores open the secret from the cache.
	if kmsPerCycle := per(float64(d.kms.total())); kmsPerCycle > 0.01 {
		t.Errorf("a quiet project's lifecycle asks KMS %.2f times: the secret cache is not doing its work", kmsPerCycle)
	}
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// apiCPUPerLifecycle is the api function's CPU time per spawn → callback
// lifecycle as docs/aws.md's capacity table has it, measured under the
// Lambda emulator (`go run ./bench/report -only lambdacpu`).
func apiCPUPerLifecycle(t *testing.T) float64 {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\| api instance \|[^|\n]*\| ([0-9.]+) ms CPU`).FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/aws.md has no "api instance" row with its measured CPU ("… ms CPU")`)
	}
	ms, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || ms <= 0 {
		t.Fatalf("docs/aws.md's api CPU per lifecycle %q: %v", m[1], err)
	}
	return ms
}

// section is doc from heading to the next heading of its level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/aws-cost.md has no %q", heading)
	}
	rest := doc[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// docTable reads the first table after heading in doc: rows of
// "| item | count … | dollars |", the count and dollars the first number
// of their cells (bold marks ignored).
func docTable(t *testing.T, doc, heading string) map[string]costRow {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/aws-cost.md has no %q", heading)
	}
	num := regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?`)
	out := map[string]costRow{}
	started := false
	for _, line := range strings.Split(doc[i:], "\n")[1:] {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.HasPrefix(strings.TrimSpace(cells[2]), "-") {
			continue
		}
		item := strings.Trim(strings.TrimSpace(cells[0]), "*")
		first := func(s string) float64 {
			m := num.FindString(strings.ReplaceAll(s, ",", ""))
			v, _ := strconv.ParseFloat(m, 64)
			return v
		}
		out[item] = costRow{item: item, count: first(cells[1]), dollars: first(cells[len(cells)-1])}
	}
	return out
}
