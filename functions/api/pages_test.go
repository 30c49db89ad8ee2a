package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// lambdaResponseLimit is the most a synchronous Lambda invocation may
// return (docs/aws.md, "Limits").
const lambdaResponseLimit = 6 << 20

// shortClaim is a claim of one sentence, about 200 bytes: at the ~15,000
// of them the issue measured, one listing passes 6 MB.
const shortClaim = "claim %05d: water at sea level boils at 100 degrees Celsius, at a standard pressure of 101.325 kPa, as the ITS-90 scale puts it after the 1990 revision of the temperature scale"

// seedShortClaims commits n short claims straight to the store, a
// thousand a transaction.
func seedShortClaims(t *testing.T, f *fn, n int) map[string]bool {
	t.Helper()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	all := map[string]bool{}
	for done := 0; done < n; {
		var tx store.Tx
		for ; done < n && len(tx.Entities) < 1000; done++ {
			e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Statement: fmt.Sprintf(shortClaim, done),
				Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at}
			tx.Entities = append(tx.Entities, store.EntityPut{Entity: e})
			tx.Events = append(tx.Events, ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvConcluded, EntityID: e.ID, At: at})
			all[e.ID] = true
		}
		if err := f.store.Commit(context.Background(), tx); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// Over the Lambda, a listing of more short claims than one response can
// carry comes in pages, each under Lambda's 6 MB, and a walk of its
// cursors returns every claim once.
func TestAListingTooBigForOneLambdaResponseComesInPagesThatWalkToEveryClaim(t *testing.T) {
	f := newFn(t)
	const n = 18000
	all := seedShortClaims(t, f, n)
	// The listing in one envelope would break the limit: what pages are for.
	whole, err := service.New(service.Deps{ToolNames: tools.Names(), Store: f.store}).Ledger.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.New(envelope.KindList, whole, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if size := len(envelope.Marshal(env)); size <= lambdaResponseLimit {
		t.Fatalf("the whole listing is %d bytes, within one response: the test proves nothing", size)
	}
	for _, limit := range []any{nil, float64(service.MaxPageLimit)} {
		seen := map[string]bool{}
		args := map[string]any{}
		if limit != nil {
			args["limit"] = limit
		}
		pages := 0
		for {
			body, _ := json.Marshal(map[string]any{"args": args})
			resp, env := f.call(fmt.Sprintf("req-%d", pages), event("POST", "/v1/tools/list", f.token, string(body), nil))
			raw, _ := json.Marshal(resp)
			if resp.StatusCode != 200 || len(raw) >= lambdaResponseLimit {
				t.Fatalf("page %d: status %d, %d bytes", pages, resp.StatusCode, len(raw))
			}
			pages++
			data, _ := env["data"].(map[string]any)
			es, _ := data["entities"].([]any)
			for _, e := range es {
				id := e.(map[string]any)["id"].(string)
				if seen[id] {
					t.Fatalf("%s on two pages", id)
				}
				seen[id] = true
			}
			next, _ := data["next_cursor"].(string)
			if next == "" {
				break
			}
			args = map[string]any{"cursor": next}
			if limit != nil {
				args["limit"] = limit
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("limit %v: the walk returned %d of %d claims in %d pages", limit, len(seen), len(all), pages)
		}
	}
}
