package storetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// The paginated reads (docs/design.md, "Paginated reads"): a store pages
// ListEntities and ListSpawns by After and Limit in id order; the service
// hands out cursors for those positions and refuses any other.
var pageTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"entity pages return every entity once, in id order", entityPages},
	{"spawn pages return every spawn once, in id order", spawnPages},
	{"a walk of pages survives inserts made during it", walkWhileInserting},
	{"a cursor of another query, another project or altered is refused", invalidCursors},
}

// walkEntities reads every page of f, limit at a time.
func walkEntities(t *testing.T, s store.Store, f store.EntityFilter, limit int) []string {
	t.Helper()
	var got []string
	for f.Limit, f.After = limit, ""; ; {
		page, err := s.ListEntities(context.Background(), f)
		must(t, err)
		if len(page) > limit {
			t.Fatalf("a page of limit %d has %d entities", limit, len(page))
		}
		for _, e := range page {
			got = append(got, e.ID)
		}
		if len(page) < limit {
			return got
		}
		f.After = page[len(page)-1].ID
	}
}

func entityPages(t *testing.T, s store.Store) {
	ctx := context.Background()
	var all, doubted, claims []string
	statuses := []ledger.Status{ledger.Unverified, ledger.Doubted, ledger.Verified}
	for i := range 23 {
		e := claim(statuses[i%3])
		if i%5 == 4 {
			e = term(fmt.Sprintf("ex:page%d", i))
		} else {
			claims = append(claims, e.ID)
		}
		if e.Status == ledger.Doubted {
			doubted = append(doubted, e.ID)
		}
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev(ledger.EvConcluded, e.ID)}}))
		all = append(all, e.ID)
	}
	slices.Sort(all)
	slices.Sort(doubted)
	slices.Sort(claims)
	for _, limit := range []int{1, 4, 23, 50} {
		if got := walkEntities(t, s, store.EntityFilter{}, limit); !slices.Equal(got, all) {
			t.Fatalf("limit %d: walked %v, want %v", limit, got, all)
		}
		if limit == 1 {
			continue // a page of one under a filter is a whole read per item on DynamoDB: slow, and no other case
		}
		if got := walkEntities(t, s, store.EntityFilter{Status: ledger.Doubted}, limit); !slices.Equal(got, doubted) {
			t.Fatalf("limit %d, doubted: walked %v, want %v", limit, got, doubted)
		}
		if got := walkEntities(t, s, store.EntityFilter{Kind: ledger.KindClaim}, limit); !slices.Equal(got, claims) {
			t.Fatalf("limit %d, claims: walked %v, want %v", limit, got, claims)
		}
	}
	// A position between two ids starts after it; one past the end is an empty page.
	page, err := s.ListEntities(ctx, store.EntityFilter{After: all[10], Limit: 3})
	must(t, err)
	if got := entityIDs(page); !slices.Equal(got, all[11:14]) {
		t.Fatalf("after %s: %v, want %v", all[10], got, all[11:14])
	}
	page, err = s.ListEntities(ctx, store.EntityFilter{After: all[len(all)-1], Limit: 3})
	must(t, err)
	if len(page) != 0 {
		t.Fatalf("after the last: %v", entityIDs(page))
	}
}

func entityIDs(es []ledger.Entity) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func spawnPages(t *testing.T, s store.Store) {
	ctx := context.Background()
	var all, pending []string
	for i := range 13 {
		e := claim(ledger.Unverified)
		sp := newSpawn(e.ID, base.Add(time.Duration(i)*time.Second), base.Add(time.Hour))
		e.PendingSpawn, e.LastSpawn = sp.ID, sp.ID
		if i%3 == 1 {
			sp.State, sp.Outcome = spawn.Resolved, spawn.TimeoutRestored
			e.PendingSpawn = ""
		} else {
			pending = append(pending, sp.ID)
		}
		must(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}))
		all = append(all, sp.ID)
	}
	slices.Sort(all)
	slices.Sort(pending)
	walk := func(f store.SpawnFilter, limit int) []string {
		var got []string
		for f.Limit, f.After = limit, ""; ; {
			page, err := s.ListSpawns(ctx, f)
			must(t, err)
			if len(page) > limit {
				t.Fatalf("a page of limit %d has %d spawns", limit, len(page))
			}
			got = append(got, spawnIDs(page)...)
			if len(page) < limit {
				return got
			}
			f.After = page[len(page)-1].ID
		}
	}
	for _, limit := range []int{1, 5, 13, 40} {
		if got := walk(store.SpawnFilter{}, limit); !slices.Equal(got, all) {
			t.Fatalf("limit %d: walked %v, want %v", limit, got, all)
		}
		if limit == 1 {
			continue // as for entities
		}
		if got := walk(store.SpawnFilter{State: spawn.Pending}, limit); !slices.Equal(got, pending) {
			t.Fatalf("limit %d, pending: walked %v, want %v", limit, got, pending)
		}
	}
}

// walkWhileInserting walks the service's listing a few entities a page
// while claims are concluded before, between and during its reads: each
// claim there at the start comes exactly once, none comes twice, and the
// order never goes back.
func walkWhileInserting(t *testing.T, s store.Store) {
	ctx := context.Background()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Author: "storetest"})
	conclude := func(i int) string {
		v, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d of the walk", i)})
		must(t, err)
		return v.ID
	}
	var start []string
	for i := range 30 {
		start = append(start, conclude(i))
	}
	var wg sync.WaitGroup
	inserts := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		// At most 20: a walk must end, and one that reads slower than
		// claims arrive would chase them (every new id sorts last).
		for i := 0; i < 20; i++ {
			select {
			case <-inserts:
				return
			default:
			}
			if _, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("concurrent claim %d", i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[string]int{}
	var order []string
	p := service.Page{Limit: 4}
	for n := 0; ; n++ {
		l, err := svc.Ledger.ListPage(ctx, "", p)
		if err != nil {
			close(inserts)
			wg.Wait()
			t.Fatal(err)
		}
		for _, e := range l.Entities {
			seen[e.ID]++
			order = append(order, e.ID)
		}
		conclude(100 + n) // one more between every two pages
		if l.NextCursor == "" {
			break
		}
		p.Cursor = l.NextCursor
	}
	close(inserts)
	wg.Wait()
	for _, id := range start {
		if seen[id] != 1 {
			t.Fatalf("%s came %d times in the walk", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s came %d times in the walk", id, n)
		}
	}
	if !slices.IsSorted(order) {
		t.Fatalf("the walk went back: %v", order)
	}
}

func invalidCursors(t *testing.T, s store.Store) {
	ctx := context.Background()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Author: "storetest", Project: "acme"})
	for i := range 5 {
		_, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d", i)})
		must(t, err)
	}
	first, err := svc.Ledger.ListPage(ctx, "", service.Page{Limit: 2})
	must(t, err)
	if first.NextCursor == "" || first.Count != 2 {
		t.Fatalf("first page: %+v", first)
	}
	raw, err := base64.RawURLEncoding.DecodeString(first.NextCursor)
	must(t, err)
	tampered := func(i int) string {
		b := slices.Clone(raw)
		b[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	// Another position spelled with the digest of the first.
	other := base64.RawURLEncoding.EncodeToString(append(slices.Clone(raw[:16]), ids.New(ids.Claim, base)...))
	otherProject := service.New(service.Deps{ToolNames: tools.Names(), Store: s, Author: "storetest", Project: "globex"})
	refused := map[string]func() error{
		"a flipped digest byte": func() error { _, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: tampered(0)}); return err },
		"a flipped position byte": func() error {
			_, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: tampered(len(raw) - 1)})
			return err
		},
		"another position": func() error { _, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: other}); return err },
		"not base64": func() error {
			_, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: "not a cursor!"})
			return err
		},
		"too short": func() error { _, err := svc.Ledger.ListPage(ctx, "", service.Page{Cursor: "AAAA"}); return err },
		"another status": func() error {
			_, err := svc.Ledger.ListPage(ctx, "unverified", service.Page{Cursor: first.NextCursor})
			return err
		},
		"another listing (spawns)": func() error {
			_, err := svc.Spawns.ListPage(ctx, service.ViewAll, service.Page{Cursor: first.NextCursor})
			return err
		},
		"another project": func() error {
			_, err := otherProject.Ledger.ListPage(ctx, "", service.Page{Cursor: first.NextCursor})
			return err
		},
		"another listing (a history)": func() error {
			_, err := svc.Ledger.ShowPage(ctx, first.Entities[0].ID, true, service.Page{Cursor: first.NextCursor})
			return err
		},
		"a history of another entity ": func() error { return historyOfAnother(ctx, svc, first.Entities) },
	}
	for name, call := range refused {
		if err := call(); !errs.Is(err, service.CursorInvalid) {
			t.Fatalf("%s: want %s, got %v", name, service.CursorInvalid, err)
		}
	}
	for _, limit := range []int{-1, service.MaxPageLimit + 1} {
		if _, err := svc.Ledger.ListPage(ctx, "", service.Page{Limit: limit}); !errs.Is(err, errs.InvalidArgument) {
			t.Fatalf("limit %d: want %s, got %v", limit, errs.InvalidArgument, err)
		}
	}
	// The cursor itself still reads the next page.
	next, err := svc.Ledger.ListPage(ctx, "", service.Page{Limit: 2, Cursor: first.NextCursor})
	must(t, err)
	if next.Count != 2 || next.Entities[0].ID <= first.Entities[1].ID {
		t.Fatalf("second page: %+v", next)
	}
}

// historyOfAnother reads the history of one entity with a cursor of
// another's.
func historyOfAnother(ctx context.Context, svc *service.Service, es []ledger.Entity) error {
	a, b := es[0].ID, es[1].ID
	for _, id := range []string{a, b} {
		in := service.TransitionInput{Action: ledger.Doubt, EntityID: id, Reason: "the boiling point falls with the air pressure"}
		if _, _, err := svc.Ledger.Transition(ctx, in); err != nil {
			return err
		}
	}
	v, err := svc.Ledger.ShowPage(ctx, a, true, service.Page{Limit: 1})
	if err != nil || v.NextCursor == "" {
		return fmt.Errorf("a history of two events in pages of one: %+v %v", v, err)
	}
	_, err = svc.Ledger.ShowPage(ctx, b, true, service.Page{Limit: 1, Cursor: v.NextCursor})
	return err
}
