package dynamo_test

import (
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
)

// The benchmarks count DynamoDB capacity with the client middleware
// capacity.Counter. Against a server that reports ConsumedCapacity the
// numbers are the server's; against the stand-in they are computed by the
// counter from the requests and the items they replace (see
// capacity.Counter). Time per op measures the stand-in, not DynamoDB.
//
//	go test ./internal/store/dynamo -run '^$' -bench . -benchtime 200x

// BenchmarkSpawnLifecycle runs full spawn lifecycles through service.Service
// on the DynamoDB store: spawn then callback (assume, dismiss with the
// request id), and spawn then timeout (assume, then the queue-driven
// ExpireSpawn the sweeper function runs when the spawn's message comes
// due). The same callback lifecycle through the HTTP API and the
// functions' multi-project backend is BenchmarkSpawnLifecycle/api in
// functions/internal/deployment.
func BenchmarkSpawnLifecycle(b *testing.B) {
	for _, path := range []string{"callback", "timeout"} {
		b.Run(path, func(b *testing.B) {
			needServer(b)
			counter := newCounter()
			st := dynamo.New(newClient(nil, counter), table, "bench-"+randomName())
			now := t0
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, SpawnTimeout: time.Hour, Author: "bench", Clock: func() time.Time { return now }})
			res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level"})
			if err != nil {
				b.Fatal(err)
			}
			id := res.ID
			if _, err := st.CreateProjectSecret(ctx); err != nil { // as the operator does; cached per process
				b.Fatal(err)
			}
			counter.Reset()
			b.ResetTimer()
			for range b.N {
				now = now.Add(time.Second)
				r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness})
				if err != nil {
					b.Fatal(err)
				}
				rid := requestOf(b, r).RequestID
				if path == "callback" {
					out, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id,
						Evidence: []string{"https://example.org/boiling"}, RequestID: rid})
					if err != nil || out.Resolution == nil {
						b.Fatalf("callback: %v", err)
					}
					continue
				}
				now = now.Add(2 * time.Hour)
				// As the sweeper function handles one message: one request.
				if r, _, err := svc.ExpireSpawn(readmemo.With(ctx), rid); err != nil || r.Outcome != spawn.TimeoutRestored {
					b.Fatalf("timeout: %+v %v", r, err)
				}
			}
			b.StopTimer()
			counter.Report(b, "lifecycle")
		})
	}
}

func requestOf(b testing.TB, r service.Spawned) spawn.Request {
	var req spawn.Request
	if err := json.Unmarshal(r.Request, &req); err != nil {
		b.Fatal(err)
	}
	return req
}

// BenchmarkSweep measures one bounded sweep (the scheduled backstop: up
// to 5000 spawns) over a table holding `stored` pending spawns of which
// `expired` are due. Each due spawn is an assume spawn with its claim;
// the others are guess spawns. The index query reads only the due range,
// so items read follow the expired, not the stored. Each case gets its
// own table; the store is seeded with BatchWriteItem.
//
//	go test ./internal/store/dynamo -run '^$' -bench Sweep -benchtime 1x
func BenchmarkSweep(b *testing.B) {
	for _, c := range []struct{ stored, expired int }{{10_000, 100}, {100_000, 100}, {100_000, 1_000}} {
		b.Run(fmt.Sprintf("stored=%d/expired=%d", c.stored, c.expired), func(b *testing.B) {
			needServer(b)
			tbl := "dont-bench-" + randomName()
			seeder := newClient(nil, nil)
			if err := dynamo.CreateTable(ctx, seeder, tbl); err != nil {
				b.Fatal(err)
			}
			defer seeder.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tbl)})
			counter := newCounter()
			st := dynamo.New(newClient(nil, counter), tbl, "sweep")
			now := t0
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Clock: func() time.Time { return now }})
			var total capacity.Usage
			index := 0.0
			b.StopTimer()
			for i := range b.N {
				fresh := c.expired // later rounds replace the swept ones
				if i == 0 {
					fresh = c.stored
				}
				seedSweep(b, seeder, tbl, st, now, fresh, c.expired)
				counter.Reset()
				b.StartTimer()
				rep, err := svc.Sweep(ctx, 5000)
				b.StopTimer()
				if err != nil || len(rep.TimedOut) != c.expired {
					b.Fatalf("swept %d of %d: %v", len(rep.TimedOut), c.expired, err)
				}
				if err := counter.Err(); err != nil {
					b.Fatal(err)
				}
				u := counter.Total()
				total.ItemsRead += u.ItemsRead
				total.ReadUnits += u.ReadUnits
				total.WriteUnits += u.WriteUnits
				index += float64(counter.Usage()["Query"].ItemsRead)
			}
			n := float64(b.N)
			b.ReportMetric(float64(total.ItemsRead)/n, "items-read/sweep")
			b.ReportMetric(index/n, "index-items-read/sweep")
			b.ReportMetric(total.ReadUnits/n, "RRU/sweep")
			b.ReportMetric(total.WriteUnits/n, "WRU/sweep")
			b.ReportMetric(float64(c.expired), "expired/sweep")
		})
	}
}

// seedSweep writes n pending spawns, the first `expired` of them due (each
// with its claim), with BatchWriteItem, 25 items per request, from a few
// writers at once.
func seedSweep(b *testing.B, client *dynamodb.Client, tbl string, st *dynamo.Store, now time.Time, n, expired int) {
	var items []map[string]types.AttributeValue
	for i := range n {
		sp := spawn.Spawn{ID: ids.New(ids.Spawn, now), Kind: spawn.Guess, State: spawn.Pending, Mode: spawn.ModeHarness,
			Question: "how many?", N: 3, IssuedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(time.Hour), Request: []byte(`{"request_kind":"guess"}`)}
		if i < expired {
			e := ledger.Entity{ID: ids.New(ids.Claim, now), Kind: ledger.KindClaim, Statement: "seeded claim", Status: ledger.Unverified,
				Version: 2, CreatedAt: now, UpdatedAt: now, PendingSpawn: sp.ID, LastSpawn: sp.ID}
			sp.Kind, sp.EntityID, sp.PreStatus, sp.EntityVersion, sp.ExpiresAt = spawn.Assume, e.ID, ledger.Verified, 2, now.Add(-time.Minute)
			items = append(items, dynamo.EntityItem(st, e, sp))
		}
		items = append(items, dynamo.SpawnItem(st, sp))
	}
	batches := make(chan []map[string]types.AttributeValue)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				reqs := make([]types.WriteRequest, len(batch))
				for i, it := range batch {
					reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
				}
				for len(reqs) > 0 {
					out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: reqs}})
					if err != nil {
						b.Error(err)
						return
					}
					reqs = out.UnprocessedItems[tbl]
				}
			}
		}()
	}
	for len(items) > 0 {
		k := min(25, len(items))
		batches <- items[:k]
		items = items[k:]
	}
	close(batches)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// BenchmarkApprovalLifecycle runs tier-escalation questions through
// service.Service on the DynamoDB store, each from the question to its
// ending frame: "approved" asks without waiting and an approver answers;
// "timed-out" asks and the queue-driven ExpireApproval (the sweeper
// function's work) ends it at the deadline. The session is opened and
// watched once (its subscriber lease outlives the run); every service
// call includes its sweep-first, as in the api function.
//
//	go test ./internal/store/dynamo -run '^$' -bench ApprovalLifecycle -benchtime 200x
func BenchmarkApprovalLifecycle(b *testing.B) {
	for _, path := range []string{"approved", "timed-out"} {
		b.Run(path, func(b *testing.B) {
			needServer(b)
			counter := newCounter()
			st := dynamo.New(newClient(nil, counter), table, "bench-"+randomName())
			now := t0
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "bench", Clock: func() time.Time { return now },
				Approvals: service.Approvals{Store: st, Lease: 1000 * time.Hour}})
			res, err := svc.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: "read-only"})
			if err != nil {
				b.Fatal(err)
			}
			session := res.ID
			if err := st.TouchSubscriber(ctx, session, "approver", now.Add(100*time.Hour)); err != nil {
				b.Fatal(err)
			}
			counter.Reset()
			b.ResetTimer()
			for i := range b.N {
				now = now.Add(time.Second)
				r, _, err := svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: session, CallID: fmt.Sprintf("c-%d", i), To: "workspace-write",
					Reason: "writes the build directory", Preview: "make", NoWait: true})
				if err != nil {
					b.Fatal(err)
				}
				id := r.ID
				if path == "approved" {
					if _, _, err := svc.Escalations.Approve(ctx, id, "approver"); err != nil {
						b.Fatal(err)
					}
					continue
				}
				now = now.Add(approvals.DefaultTimeout)
				if e, _, err := svc.ExpireApproval(ctx, id); err != nil || !e.Committed {
					b.Fatalf("timeout: %+v %v", e, err)
				}
			}
			b.StopTimer()
			counter.Report(b, "question")
		})
	}
}
