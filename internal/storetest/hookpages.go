package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
)

// The paginated reads of hooks.deliveries (docs/design.md, "Paginated
// reads"): a store pages a hook's deliveries by message id and its
// delivery log by a position of its own, each newest first; the service
// joins the two positions under one cursor.

// loggedHook makes a hook that heard n messages, each attempted twice
// (a retry, then a delivery), and returns it with the message ids and
// the attempts, each newest first.
func loggedHook(t *testing.T, s HookStores, n int) (hooks.Hook, []string, []string) {
	t.Helper()
	ctx := context.Background()
	h := newHook(t, s.Hooks, hooks.Test)
	var msgs, attempts []string
	for i := range n {
		at := base.Add(time.Duration(i) * time.Minute)
		m := hooks.Message{ID: ids.New(ids.Message, at), Type: hooks.Test, At: at, Data: []byte("{}")}
		must(t, s.Hooks.Enqueue(ctx, m, []string{h.ID}))
		msgs = append(msgs, m.ID)
		d := hooks.Delivery{MessageID: m.ID, HookID: h.ID, Type: m.Type, State: hooks.StatePending, CreatedAt: at, NextAt: at}
		for try := 1; try <= 2; try++ {
			a := hooks.Attempt{MessageID: m.ID, HookID: h.ID, N: try, At: at.Add(time.Duration(try) * time.Second), Status: 500, Outcome: hooks.Retry}
			if try == 2 {
				a.Status, a.Outcome = 200, hooks.Delivered
			}
			d = hooks.Next(d, a, 0, 0)
			must(t, s.Hooks.RecordAttempt(ctx, a, d))
			attempts = append(attempts, fmt.Sprintf("%s#%d", m.ID, try))
		}
	}
	slices.Reverse(msgs)
	slices.Reverse(attempts)
	return h, msgs, attempts
}

func hookService(s HookStores, project string) *service.Service {
	return service.New(service.Deps{ToolNames: tools.Names(), Store: s.Store, Author: "storetest", Project: project, HooksConfig: service.HooksConfig{Store: s.Hooks}})
}

func hookDeliveryPages(t *testing.T, s HookStores) {
	ctx := context.Background()
	h, msgs, attempts := loggedHook(t, s, 7)
	svc := hookService(s, "")
	for _, limit := range []int{1, 3, 7, 14, 50} {
		var gotMsgs, gotAttempts []string
		pages := 0
		for p := (service.Page{Limit: limit}); ; {
			d, err := svc.Hooks.DeliveriesPage(ctx, h.ID, p)
			must(t, err)
			if pages++; pages > len(attempts)+1 {
				t.Fatalf("limit %d: a walk past %d pages does not end", limit, pages-1)
			}
			if len(d.Deliveries) > limit || len(d.Attempts) > limit {
				t.Fatalf("limit %d: a page of %d deliveries and %d attempts", limit, len(d.Deliveries), len(d.Attempts))
			}
			for _, x := range d.Deliveries {
				gotMsgs = append(gotMsgs, x.MessageID)
			}
			for _, a := range d.Attempts {
				gotAttempts = append(gotAttempts, fmt.Sprintf("%s#%d", a.MessageID, a.N))
			}
			if d.NextCursor == "" {
				break
			}
			p.Cursor = d.NextCursor
		}
		if !slices.Equal(gotMsgs, msgs) || !slices.Equal(gotAttempts, attempts) {
			t.Fatalf("limit %d: walked deliveries %v attempts %v, want %v and %v", limit, gotMsgs, gotAttempts, msgs, attempts)
		}
		// The longer list (14 attempts) sets the pages; none is empty.
		if want := (len(attempts) + limit - 1) / limit; pages != want {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	all, err := svc.Hooks.Deliveries(ctx, h.ID)
	must(t, err)
	if len(all.Deliveries) != len(msgs) || len(all.Attempts) != len(attempts) || all.NextCursor != "" {
		t.Fatalf("the whole read: %d deliveries, %d attempts, cursor %q", len(all.Deliveries), len(all.Attempts), all.NextCursor)
	}

	// A walk survives messages and attempts added during it: what was
	// there when it began comes exactly once, nothing twice.
	first, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Limit: 2})
	must(t, err)
	later := base.Add(time.Hour)
	m := hooks.Message{ID: ids.New(ids.Message, later), Type: hooks.Test, At: later, Data: []byte("{}")}
	must(t, s.Hooks.Enqueue(ctx, m, []string{h.ID}))
	d := hooks.Delivery{MessageID: m.ID, HookID: h.ID, Type: m.Type, State: hooks.StatePending, CreatedAt: later, NextAt: later}
	a := hooks.Attempt{MessageID: m.ID, HookID: h.ID, N: 1, At: later, Status: 200, Outcome: hooks.Delivered}
	must(t, s.Hooks.RecordAttempt(ctx, a, hooks.Next(d, a, 0, 0)))
	seen := map[string]int{}
	for _, x := range first.Deliveries {
		seen[x.MessageID]++
	}
	for c, pages := first.NextCursor, 0; c != ""; pages++ {
		if pages > len(msgs)+2 {
			t.Fatal("a walk during an insert does not end")
		}
		p, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Limit: 2, Cursor: c})
		must(t, err)
		for _, x := range p.Deliveries {
			seen[x.MessageID]++
		}
		c = p.NextCursor
	}
	for _, id := range msgs {
		if seen[id] != 1 {
			t.Fatalf("a walk during an insert saw %s %d times", id, seen[id])
		}
	}
}

func hookDeliveryCursors(t *testing.T, s HookStores) {
	ctx := context.Background()
	h, _, _ := loggedHook(t, s, 3)
	other := newHook(t, s.Hooks, hooks.Test)
	svc := hookService(s, "")
	first, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Limit: 1})
	must(t, err)
	if first.NextCursor == "" {
		t.Fatal("a first page of one has no cursor")
	}
	raw, err := base64.RawURLEncoding.DecodeString(first.NextCursor)
	must(t, err)
	// Positions spelled by hand with a valid digest: the digest is not
	// keyed, so only the store's reading of a position stands between it
	// and the query.
	forged := func(pos string) string { return forgedCursor("", "hooks.deliveries\x00"+h.ID, pos) }
	refused := map[string]func() error{
		"a flipped position byte": func() error {
			b := slices.Clone(raw)
			b[len(b)-1] ^= 1
			_, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Cursor: base64.RawURLEncoding.EncodeToString(b)})
			return err
		},
		"another hook": func() error {
			_, err := svc.Hooks.DeliveriesPage(ctx, other.ID, service.Page{Cursor: first.NextCursor})
			return err
		},
		"another project": func() error {
			_, err := hookService(s, "globex").Hooks.DeliveriesPage(ctx, h.ID, service.Page{Cursor: first.NextCursor})
			return err
		},
		"another listing (list)": func() error {
			_, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: first.NextCursor})
			return err
		},
		"a delivery position that is no message id": func() error {
			_, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Cursor: forged("claim:01JQ0000000000000000000000\n")})
			return err
		},
		"an attempt position the store never gave": func() error {
			_, err := svc.Hooks.DeliveriesPage(ctx, h.ID, service.Page{Cursor: forged("\nnot a position")})
			return err
		},
	}
	for name, call := range refused {
		if err := call(); !errs.Is(err, service.CursorInvalid) {
			t.Fatalf("%s: want %s, got %v", name, service.CursorInvalid, err)
		}
	}
}

// forgedCursor is a cursor made by hand for position after of a listing:
// its digest spelled as the service spells it (internal/service/page.go),
// which anyone can, since it is not keyed.
func forgedCursor(project, query, after string) string {
	h := sha256.New()
	for _, part := range []string{"dont-cursor-v1", project, query, after} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{0})
		h.Write([]byte(part))
	}
	return base64.RawURLEncoding.EncodeToString(append(h.Sum(nil)[:16], after...))
}
