package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// BenchmarkAnswerLatencyOverHTTP measures, over HTTP on loopback, the time
// from an approver's POST approvals.approve to (a) the requester's
// long-blocking POST approvals.wait returning the verdict and (b) a
// watcher's long-poll POST approvals.frames returning the ending frame.
// It reports p50 and p99 of both (goal: p99 under 300 ms).
//
//	go test -run XXX -bench AnswerLatencyOverHTTP -benchtime 200x ./internal/httpapi/
func BenchmarkAnswerLatencyOverHTTP(b *testing.B) {
	st, err := sqlite.Create(context.Background(), filepath.Join(b.TempDir(), "dont.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "api", Approvals: service.Approvals{Store: st}})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Backend: httpapi.SingleProject{Project: httpapi.Project{Service: svc}}, RatePerSecond: -1}))
	defer srv.Close()
	token := map[string]string{}
	for _, role := range []string{"harness", "approver"} {
		res, err := svc.Credentials.Create(context.Background(), role, role)
		if err != nil {
			b.Fatal(err)
		}
		token[role] = res.Secret
	}
	call := func(role, tool string, args map[string]any) map[string]any {
		// cli_confirmed as the approvals page sends it: a person answered.
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args, "cli_confirmed": true})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token[role])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(confirm.CapsHeader, confirm.CLICaps) // a client that prompts a person
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Error(err)
			return nil
		}
		defer resp.Body.Close()
		var env map[string]any
		json.NewDecoder(resp.Body).Decode(&env)
		if env["ok"] != true {
			b.Errorf("%s: %v", tool, env)
		}
		d, _ := env["data"].(map[string]any)
		return d
	}
	ses := call("harness", "sessions.open", map[string]any{"tier": "read-only"})["session_id"].(string)
	var toVerdict, toFrame []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call("approver", "approvals.frames", map[string]any{"session": ses})
		esc := call("harness", "escalate", map[string]any{"session": ses, "call": fmt.Sprint("c", i), "to": "workspace-write", "reason": "bench", "no_wait": true})
		id := esc["approval_id"].(string)
		var t0 time.Time
		var mu sync.Mutex
		answered := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			call("harness", "approvals.wait", map[string]any{"id": id})
			<-answered
			mu.Lock()
			toVerdict = append(toVerdict, time.Since(t0))
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			after := 0.0
			for {
				page := call("approver", "approvals.frames", map[string]any{"session": ses, "after": after, "wait": "20s"})
				if page == nil {
					return
				}
				for _, f := range page["frames"].([]any) {
					if f := f.(map[string]any); f["request_id"] == id && f["kind"] == "approval_resolved" {
						<-answered
						mu.Lock()
						toFrame = append(toFrame, time.Since(t0))
						mu.Unlock()
						return
					}
				}
				after = page["cursor"].(float64)
			}
		}()
		time.Sleep(time.Duration(rand.Int64N(int64(2 * service.DefaultPoll))))
		t0 = time.Now()
		close(answered)
		call("approver", "approvals.approve", map[string]any{"id": id, "shown_digest": esc["shown_digest"]})
		wg.Wait()
	}
	b.StopTimer()
	for name, ds := range map[string][]time.Duration{"answer→verdict": toVerdict, "answer→frame": toFrame} {
		if len(ds) == 0 {
			continue
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.50), name+"-p50-ms")
		b.ReportMetric(q(0.99), name+"-p99-ms")
	}
}
