package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// seedDeliveries makes a hook with n deliveries, each attempted once, in
// the project's store, in process; it returns the hook's id.
func seedDeliveries(t *testing.T, p *testProject, n int) string {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := hooks.Hook{ID: ids.New(ids.Hook, at), URL: "https://hooks.example.com/in", Events: []hooks.EventType{hooks.Test}, Format: hooks.FormatJSON,
		CreatedAt: at, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if err := st.PutHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := hooks.Message{ID: ids.New(ids.Message, at.Add(time.Duration(i)*time.Second)), Type: hooks.Test, At: at, Data: []byte("{}")}
		if err := st.Enqueue(ctx, m, []string{h.ID}); err != nil {
			t.Fatal(err)
		}
		d := hooks.Delivery{MessageID: m.ID, HookID: h.ID, Type: m.Type, State: hooks.StatePending, CreatedAt: at, NextAt: at}
		a := hooks.Attempt{MessageID: m.ID, HookID: h.ID, N: 1, At: m.At, Status: 200, Outcome: hooks.Delivered}
		if err := st.RecordAttempt(ctx, a, hooks.Next(d, a, 0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	return h.ID
}

// deliveryIDs are the message ids of a hooks deliveries output's
// deliveries and of its attempts.
func deliveryIDs(t *testing.T, r result) (deliveries, attempts []string) {
	t.Helper()
	for _, list := range []string{"deliveries", "attempts"} {
		items, ok := r.data()[list].([]any)
		if !ok {
			t.Fatalf("no %s: %s", list, r.stdout)
		}
		for _, it := range items {
			id := it.(map[string]any)["message_id"].(string)
			if list == "deliveries" {
				deliveries = append(deliveries, id)
			} else {
				attempts = append(attempts, id)
			}
		}
	}
	return deliveries, attempts
}

// `hooks deliveries` comes in pages like `list`: without --limit the CLI
// reads every page (embedded and against an endpoint); with --limit it
// prints one page and names the command for the next; a cursor of
// another listing is refused.
func TestHooksDeliveriesComeInPagesThatTheCLIWalks(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	n := service.MaxPageLimit + 3
	hook := seedDeliveries(t, p, n)
	once := func(what string, ids []string) {
		t.Helper()
		seen := map[string]bool{}
		for i, id := range ids {
			if seen[id] || (i > 0 && id > ids[i-1]) {
				t.Fatalf("%s: %s twice or out of order (newest first)", what, id)
			}
			seen[id] = true
		}
		if len(seen) != n {
			t.Fatalf("%s: %d of %d", what, len(seen), n)
		}
	}
	r := p.ok("hooks", "deliveries", hook, "--json")
	ds, as := deliveryIDs(t, r)
	once("the deliveries", ds)
	once("the attempts", as)
	if r.data()["next_cursor"] != nil {
		t.Fatalf("a read of every page names a next page: %v", r.data()["next_cursor"])
	}

	var walked, walkedAttempts []string
	args := []string{"hooks", "deliveries", hook, "--limit", "400", "--json"}
	for pages := 1; ; pages++ {
		r := p.ok(args...)
		ds, as := deliveryIDs(t, r)
		if len(ds) > 400 || len(as) > 400 {
			t.Fatalf("a page of --limit 400 has %d deliveries and %d attempts", len(ds), len(as))
		}
		walked, walkedAttempts = append(walked, ds...), append(walkedAttempts, as...)
		next := r.str("next_cursor")
		if next == "" {
			if pages != 3 {
				t.Fatalf("%d pages of 400 for %d", pages, n)
			}
			break
		}
		if hints := fmt.Sprint(r.env["hints"]); !strings.Contains(hints, "dont hooks deliveries "+hook+" --limit 400 --cursor "+next) {
			t.Fatalf("hints %s do not name the next page", hints)
		}
		args = []string{"hooks", "deliveries", hook, "--limit", "400", "--cursor", next, "--json"}
	}
	once("the walked deliveries", walked)
	once("the walked attempts", walkedAttempts)

	seedClaims(t, p, 3)
	listCursor := p.ok("list", "--limit", "1", "--json").str("next_cursor")
	bad := p.run("hooks", "deliveries", hook, "--cursor", listCursor, "--json")
	if bad.exit != 2 || bad.data()["code"] != "cursor-invalid" {
		t.Fatalf("a list cursor on hooks deliveries: exit %d %s", bad.exit, bad.stdout)
	}
	if rem, _ := bad.data()["remediation"].([]any); len(rem) == 0 || !strings.Contains(fmt.Sprint(rem), "hooks deliveries") {
		t.Fatalf("the refusal's remediation: %v", rem)
	}

	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + p.token("admin")}
	r = p.runEnv(remote, "hooks", "deliveries", hook, "--json")
	if r.exit != 0 || r.data()["next_cursor"] != nil {
		t.Fatalf("hooks deliveries over HTTP: exit %d, next %v", r.exit, r.data()["next_cursor"])
	}
	ds, as = deliveryIDs(t, r)
	once("the deliveries over HTTP", ds)
	once("the attempts over HTTP", as)
}
