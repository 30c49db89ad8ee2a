package dynamo_test

import (
	"github.com/dont-cli/dont/internal/tools"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/storetest"
)

// Attack 9 of docs/security.md on the DynamoDB path: eight defines of one CURIE
// race, every one of them having read that no term holds it before any
// commits (storetest.Rendezvous). The CURIE's item in the term's
// transaction lets one commit; the others get the refusal a define of a
// taken CURIE always gets, naming the winner, and write nothing.
func TestConcurrentDefinesOfOneCurieLeaveOneTerm(t *testing.T) {
	st := newStore(t)
	const n = 8
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: storetest.Rendezvous(st, n), Clock: func() time.Time { return t0 }, Author: "racer"})
	var wg sync.WaitGroup
	results := make([]service.EntityView, n)
	fails := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], fails[i] = svc.Ledger.Define(ctx, "ex:Widget", "a widget", nil)
		}()
	}
	wg.Wait()
	terms, err := st.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
	if err != nil {
		t.Fatal(err)
	}
	if len(terms) != 1 {
		t.Fatalf("%d terms of ex:Widget stored, want 1", len(terms))
	}
	winner := terms[0].ID
	won := 0
	for i, err := range fails {
		if err == nil {
			won++
			if got := results[i].ID; got != winner {
				t.Errorf("define %d answered %s, stored is %s", i, got, winner)
			}
			continue
		}
		e := present.Explain(err)
		if e.Code != errs.AlreadyExists || e.EntityID != winner || present.Exit(err) != present.ExitRefusal ||
			len(e.Remediation) != 1 || e.Remediation[0].Command != "dont show "+winner || !strings.Contains(e.Message, winner) {
			t.Errorf("define %d: %+v, want already-exists on %s", i, e, winner)
		}
	}
	if won != 1 {
		t.Fatalf("%d defines succeeded, want 1", won)
	}
	if evs, err := st.Events(ctx, winner); err != nil || len(evs) != 1 || evs[0].Kind != ledger.EvDefined {
		t.Fatalf("the term's history: %v %v", evs, err)
	}
}
