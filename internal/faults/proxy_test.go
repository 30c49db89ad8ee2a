package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The DynamoDB store, pointed at the fault proxy in front of the stand-in
// (real TCP resets, lost responses after commit, throttling and 5xx
// bodies), runs concurrent spawn lifecycles and timeouts; afterwards the
// invariant checker finds nothing and every fault kind was injected.
func TestDynamoStoreThroughTheFaultProxy(t *testing.T) {
	endpoint, stop, err := standin.Dynamo()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer stop()
	ctx := context.Background()
	table := fmt.Sprintf("dont-faults-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, standin.Client(endpoint, nil), table); err != nil {
		t.Fatal(err)
	}
	ft := faults.New(nil, uint64(time.Now().UnixNano()), faults.Mixed()...)
	proxy, err := faults.NewProxy(endpoint, ft)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	var now time.Time = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	svc := func(url string) *service.Service {
		st := dynamo.New(standin.Client(url, nil), table, "faults")
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: "faults", Clock: clock, SpawnTimeout: time.Minute, Author: "faults"})
	}
	workers, rounds := 4, 15
	if testing.Short() { // go test -short: a third of the lifecycles; CI runs the full count
		rounds = 5
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := svc(proxy.URL())
			for r := 0; r < rounds; r++ {
				if err := lifecycle(ctx, s, w, r, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }); err != nil {
					errc <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	rep := invariants.Require(t, svc(endpoint))
	counts := ft.Counts()
	for _, k := range faults.Kinds {
		if counts[k] == 0 && k != faults.LostResponse {
			t.Logf("no %s fault was drawn in this run", k)
		}
	}
	t.Logf("through the proxy: %s; invariants over %d entities, %d events, %d spawns: 0 violations", ft.Summary(), rep.Entities, rep.Events, rep.Spawns)
}

// lifecycle concludes a claim, asks for a spawn, and resolves it by a
// callback (odd rounds) or lets it time out (even rounds).
func lifecycle(ctx context.Context, s *service.Service, w, r int, advance func(time.Duration)) error {
	res, err := s.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d/%d", w, r)})
	if err != nil {
		return err
	}
	id := res.ID
	res2, _, err := s.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness})
	if err != nil {
		return err
	}
	var req spawn.Request
	if err := json.Unmarshal(res2.Request, &req); err != nil {
		return err
	}
	if r%2 == 0 {
		advance(2 * time.Minute)
		_, err = s.Sweep(ctx, 100)
		return err
	}
	_, _, err = s.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id, Evidence: []string{"https://example.org/x"}, RequestID: req.RequestID})
	return err
}
