package service_test

import (
	"context"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// BenchmarkAnswerLatency measures, embedded, the time from an answer to
// (a) the blocked requester's verdict and (b) a watcher's ending frame.
// Requester, watcher and approver each hold their own connection to one
// SQLite file, as three processes would, and poll at the default
// interval. It reports p50 and p99 of both.
//
//	go test -run XXX -bench AnswerLatency -benchtime 300x ./internal/service/
func BenchmarkAnswerLatency(b *testing.B) {
	path := filepath.Join(b.TempDir(), "dont.db")
	first, err := sqlite.Create(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer first.Close()
	conn := func() *service.Service {
		st, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Author: "bench", Approvals: service.Approvals{Store: st}})
	}
	requester, watcher, approver := conn(), conn(), conn()
	res, err := requester.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: "read-only"})
	if err != nil {
		b.Fatal(err)
	}
	ses := res.ID
	var toVerdict, toFrame []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := watcher.Escalations.Frames(ctx, service.FramesInput{SessionID: ses, Subscriber: "bench"}); err != nil {
			b.Fatal(err)
		}
		r, _, err := requester.Escalations.Escalate(ctx, service.EscalateInput{SessionID: ses, CallID: fmt.Sprint("call-", i), To: "workspace-write", Reason: "bench", NoWait: true})
		if err != nil {
			b.Fatal(err)
		}
		id := r.ID
		var t0 time.Time
		var mu sync.Mutex
		answered := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, _, err := requester.Escalations.Wait(ctx, id); err != nil {
				b.Error(err)
			}
			<-answered
			mu.Lock()
			toVerdict = append(toVerdict, time.Since(t0))
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			after := int64(0)
			for {
				res, err := watcher.Escalations.Frames(context.Background(), service.FramesInput{SessionID: ses, After: after, Wait: 10 * time.Second, Subscriber: "bench"})
				if err != nil {
					b.Error(err)
					return
				}
				p := res
				for _, f := range p.Frames {
					if f.RequestID == id && f.Kind == approvals.FrameResolved {
						<-answered
						mu.Lock()
						toFrame = append(toFrame, time.Since(t0))
						mu.Unlock()
						return
					}
				}
				after = p.Cursor
			}
		}()
		// Answer at a random phase of the pollers' intervals.
		time.Sleep(time.Duration(rand.Int64N(int64(2 * service.DefaultPoll))))
		t0 = time.Now()
		close(answered)
		if _, _, err := approver.Escalations.Approve(ctx, id, "bench"); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
	}
	b.StopTimer()
	report(b, "answer→verdict", toVerdict)
	report(b, "answer→frame", toFrame)
}

func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), name+"-p50-ms")
	b.ReportMetric(q(0.99), name+"-p99-ms")
}
