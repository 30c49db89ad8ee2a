package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// An entity grown past idempotency.MaxBody (only the service itself, as
// the embedded CLI does, can grow one: the HTTP body cap stops a request
// long before) answers a keyed dismiss with a response over 2 MiB. On
// SQLite that response is committed with the dismiss like any other: a
// process that dies right after the commit has remembered it, and the
// retry replays it instead of running the dismiss again.
func TestAKeyedResponseOver2MiBIsCommittedWithItsWriteOnSQLite(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	refs := make([]string, 0, 300)
	for i := range 300 {
		refs = append(refs, "https://example.org/"+strings.Repeat("r", 8<<10)+"/"+string(rune('a'+i%26)))
	}
	e, err := a.svc.Ledger.Conclude(context.Background(), service.ConcludeInput{Statement: "an entity grown past 2 MiB", Refs: refs})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"id": e.ID, "evidence": []string{"https://example.org/e"}}
	body, _ := json.Marshal(map[string]any{"args": args})
	a.callDyingWith(h, "dismiss", body, "large-dies")
	applied := a.eventCount()
	again := a.do(http.MethodPost, "/v1/tools/dismiss", h, body, "Idempotency-Key", "large-dies")
	if len(again.raw) <= idempotency.MaxBody {
		t.Fatalf("a %d-byte response does not test the bound", len(again.raw))
	}
	if again.status/100 != 2 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry was not replayed: %d %.300s", again.status, again.raw)
	}
	if a.eventCount() != applied {
		t.Fatal("the retry applied the dismiss again")
	}
}
