package linearize

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// dynamoBackend is one project on a DynamoDB-compatible endpoint: each
// client has its own store and SDK client (as separate Lambda instances
// would), all on one controlled clock, optionally through a fault injector.
type dynamoBackend struct {
	name     string
	clock    *ManualClock
	timeout  time.Duration
	services []*service.Service
	clean    *service.Service
	base     *http.Transport
	Faults   *faults.Transport
	lag      time.Duration
	runLog
}

// IndexLag implements IndexLagging: DONT_LINEARIZE_INDEX_LAG (a Go
// duration: for DynamoDB itself, whose indexes lag in real time), else
// strictIndexLag against the strict stand-in (DONT_STANDIN_EXPECT_STRICT),
// else none: the stand-in's and LocalStack's indexes read their writes.
func (b *dynamoBackend) IndexLag() time.Duration { return b.lag }

// strictIndexLag bounds the strict stand-in's lag, which is counted in
// index queries (a write reaches the index after GSILagReads of them):
// the concurrent clients issue those within milliseconds of a write, and
// the rest is room for a loaded machine.
const strictIndexLag = 2 * time.Second

func indexLagOf(env string) time.Duration {
	if d, err := time.ParseDuration(env); err == nil && d >= 0 {
		return d
	}
	if standin.ExpectStrict() {
		return strictIndexLag
	}
	return 0
}

// NewDynamo creates a fresh table on endpoint and clients stores of one
// project in it. With rules, every request of the clients goes through a
// faults.Transport (the closing invariant check reads without faults).
func NewDynamo(endpoint string, clients int, timeout time.Duration, seed uint64, rules ...faults.Rule) (Backend, *faults.Transport, error) {
	ctx := context.Background()
	table, project := "dont-linearize-"+random(), "linearize-"+random()
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	if err := dynamo.CreateTable(ctx, standin.Client(endpoint, base), table); err != nil {
		return nil, nil, err
	}
	b := &dynamoBackend{name: "dynamo", clock: NewManualClock(), timeout: timeout, base: base, lag: indexLagOf(os.Getenv("DONT_LINEARIZE_INDEX_LAG"))}
	var rt http.RoundTripper = base
	if len(rules) > 0 {
		b.name = "dynamo-faults"
		b.Faults = faults.New(base, seed, rules...)
		rt = b.Faults
	}
	for i := 0; i < clients; i++ {
		st := dynamo.New(standin.Client(endpoint, rt), table, project)
		b.services = append(b.services, service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: project, Clock: b.clock.Time, SpawnTimeout: timeout, Author: "linearize",
			Approvals: service.Approvals{Store: st, Timeout: timeout, Lease: time.Hour}, Log: b.logger()}))
	}
	st := dynamo.New(standin.Client(endpoint, base), table, project)
	b.clean = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: project, Clock: b.clock.Time, SpawnTimeout: timeout, Author: "linearize",
		Approvals: service.Approvals{Store: st, Timeout: timeout, Lease: time.Hour}})
	return b, b.Faults, nil
}

func random() string {
	var b [5]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (b *dynamoBackend) Name() string { return b.name }

func (b *dynamoBackend) Call(ctx context.Context, client int, tool string, args map[string]any) (envelope.Envelope, error) {
	res, err := tools.Call(ctx, b.services[client%len(b.services)], tool, args)
	if err != nil {
		return envelope.Fail(err, res.Warnings), nil
	}
	return envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
}

func (b *dynamoBackend) Expire(ctx context.Context, client int, requestID string) (service.TimeoutResult, time.Duration, bool, error) {
	r, left, err := b.services[client%len(b.services)].ExpireSpawn(ctx, requestID)
	return r, left, true, err
}

func (b *dynamoBackend) ExpireApproval(ctx context.Context, client int, id string) (approvals.Verdict, time.Duration, bool, error) {
	v, left, err := b.services[client%len(b.services)].ExpireApproval(ctx, id)
	return v.Verdict, left, true, err
}

func (b *dynamoBackend) Approvals() bool { return true }

func (b *dynamoBackend) Clock() Clock              { return b.clock }
func (b *dynamoBackend) Timeout() time.Duration    { return b.timeout }
func (b *dynamoBackend) Service() *service.Service { return b.clean }
func (b *dynamoBackend) Close()                    { b.base.CloseIdleConnections() }
