package httpapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/storetest"
)

// Attack 9 of docs/security.md over HTTP: eight concurrent POST
// /v1/tools/define of one CURIE, every one of them having read that no
// term holds it before any commits (storetest.Rendezvous). One term is
// stored; the other seven get 409 already-exists naming it, as any define
// of a taken CURIE does, and write nothing.
func TestConcurrentDefinesOfOneCurieLeaveOneTerm(t *testing.T) {
	a := newAPI(t)
	const n = 8
	a.svc.Store = storetest.Rendezvous(a.store, n)
	h := a.tokens["harness"]
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = a.call(h, "define", map[string]any{"curie": "ex:Widget", "doc": "a widget"})
		}()
	}
	wg.Wait()
	terms, err := a.store.ListEntities(context.Background(), store.EntityFilter{Kind: ledger.KindTerm})
	if err != nil {
		t.Fatal(err)
	}
	if len(terms) != 1 {
		t.Fatalf("%d terms of ex:Widget stored, want 1", len(terms))
	}
	winner := terms[0].ID
	won := 0
	for i, r := range replies {
		if r.status == 200 {
			won++
			if r.str("id") != winner {
				t.Errorf("define %d answered %s, stored is %s", i, r.str("id"), winner)
			}
			continue
		}
		rem, _ := r.data()["remediation"].([]any)
		if r.status != 409 || r.code() != "already-exists" || r.str("entity_id") != winner || !strings.Contains(r.str("message"), winner) ||
			len(rem) != 1 || rem[0].(map[string]any)["command"] != "dont show "+winner {
			t.Errorf("define %d: %d %s, want 409 already-exists on %s", i, r.status, r.raw, winner)
		}
	}
	if won != 1 {
		t.Fatalf("%d defines succeeded, want 1", won)
	}
	if evs, err := a.store.Events(context.Background(), winner); err != nil || len(evs) != 1 {
		t.Fatalf("the term's history: %v %v", evs, err)
	}
	if all, err := a.store.AllEvents(context.Background()); err != nil || len(all) != 1 {
		t.Fatalf("%d events stored, want the one define: %v", len(all), err)
	}
}
