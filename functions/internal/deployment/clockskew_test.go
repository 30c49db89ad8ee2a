package deployment_test

import (
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/ledger"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// The API function and the sweeper function run on different hosts and
// read different clocks. With the sweeper's `skew` ahead of the API's, a
// timeout message delivered before the sweeper's clock reaches the expiry
// is requeued (no timeout earlier than the expiry less the skew: the
// tolerance of docs/design.md, 5.5); at the expiry less the skew it times
// the spawn out; a callback raced against the sweeper there either wins or
// is refused, never both; and after the sweeper's clock jumps back an
// hour, a due message is requeued (late, not early) and the callback is
// applied. Every spawn ends with one terminal event.
func TestTheSweeperFunctionsClockAheadTimesOutNoEarlierThanItsLeadAndOnlyOnce(t *testing.T) {
	needServer(t)
	const timeout, skew = 10 * time.Minute, 3 * time.Second
	var apiNow, jump atomic.Int64
	apiNow.Store(t0.UnixNano())
	apiClock := func() time.Time { return time.Unix(0, apiNow.Load()).UTC() }
	sweeperClock := func() time.Time { return apiClock().Add(skew).Add(-time.Duration(jump.Load())) }
	project := "clock-" + randomName()
	q := &sentQueue{}
	function := func(now func() time.Time) *deployment.Deployment {
		return &deployment.Deployment{
			Config: deployment.Config{Table: table, QueueURL: "http://q", SpawnTimeout: timeout},
			Author: "api", Log: slog.New(slog.DiscardHandler), Now: now,
			Open:     func(p string) deployment.Store { return dynamo.New(newClient(nil, nil), table, p) },
			Queue:    &sqssched.Queue{Client: q, URL: "http://q"},
			Registry: &deployment.Registry{Client: newClient(nil, nil), Table: table},
		}
	}
	api, sweeper := function(apiClock).Service(project), function(sweeperClock).Sweeper()
	type issued struct{ claim, request string }
	issue := func() issued {
		c, err := tools.Call(ctx, api, "conclude", map[string]any{"statement": "a claim under skewed clocks"})
		if err != nil {
			t.Fatal(err)
		}
		id := c.Data.(service.EntityView).ID
		r, err := tools.Call(ctx, api, "assume", map[string]any{"id": id, "mode": string(spawn.ModeHarness)})
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(r.Data.(json.RawMessage), &req); err != nil || req.RequestID == "" {
			t.Fatalf("assume: %v %s", err, r.Data)
		}
		return issued{claim: id, request: req.RequestID}
	}
	expire := func(s issued) string {
		out, err := sweeper.Expire(ctx, sqssched.Message{Project: project, RequestID: s.request, ExpiresAt: t0.Add(timeout)})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// callback says whether the subagent's callback resolved the spawn
	// (a late one may still move the claim, as a plain transition).
	callback := func(s issued) bool {
		r, err := tools.Call(ctx, api, "dismiss", map[string]any{"id": s.claim, "evidence": []string{"https://example.org/clock"}, "request_id": s.request})
		if err != nil {
			return false
		}
		v, ok := r.Data.(service.EntityView)
		return ok && v.Resolution != nil && v.Resolution.Applied && v.Resolution.Outcome == spawn.CallbackApplied
	}

	swept := issue()
	raced := []issued{}
	for i := 0; i < 8; i++ {
		raced = append(raced, issue())
	}
	late := issue()

	apiNow.Store(t0.Add(timeout - skew - time.Second).UnixNano())
	if out := expire(swept); out != sqssched.OutcomeRequeued {
		t.Fatalf("a message delivered a second before the sweeper's clock reaches the expiry: %s, want %s", out, sqssched.OutcomeRequeued)
	}
	apiNow.Store(t0.Add(timeout - skew).UnixNano())
	if out := expire(swept); out != sqssched.OutcomeTimedOut {
		t.Fatalf("a message delivered when the sweeper's clock reaches the expiry: %s, want %s", out, sqssched.OutcomeTimedOut)
	}
	// The API's callback against the sweeper's timeout, at once.
	won := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range raced {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if callback(s) {
				mu.Lock()
				won[s.request]++
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			if expire(s) == sqssched.OutcomeTimedOut {
				mu.Lock()
				won[s.request]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The sweeper's host clock jumps back an hour.
	jump.Store(int64(time.Hour))
	apiNow.Store(t0.Add(timeout + time.Minute).UnixNano())
	if out := expire(late); out != sqssched.OutcomeRequeued {
		t.Fatalf("after the sweeper's clock jumped back, a message for a spawn past its real expiry: %s, want %s", out, sqssched.OutcomeRequeued)
	}
	if !callback(late) {
		t.Fatal("the callback after the sweeper's clock jumped back was refused")
	}

	st := dynamo.New(newClient(nil, nil), table, project)
	for _, s := range append([]issued{swept, late}, raced...) {
		sp, err := st.GetSpawn(ctx, s.request)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, s.claim)
		if err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, e := range evs {
			if e.RequestID == s.request && (e.Kind == ledger.EvSpawnResolved || e.Kind == ledger.EvSpawnTimeout) {
				terminal++
			}
		}
		if terminal != 1 || sp.State == spawn.Pending {
			t.Errorf("%s: %d terminal events, state %s", s.request, terminal, sp.State)
		}
		if sp.Outcome == spawn.TimeoutRestored && (sp.ResolvedAt == nil || sp.ResolvedAt.Before(sp.ExpiresAt)) {
			t.Errorf("%s timed out at %v by a clock before its expiry %s", s.request, sp.ResolvedAt, sp.ExpiresAt)
		}
	}
	for _, s := range raced {
		if won[s.request] != 1 {
			t.Errorf("%s: %d winners of the callback/timeout race, want 1", s.request, won[s.request])
		}
	}
}
