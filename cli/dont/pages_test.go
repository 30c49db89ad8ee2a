package main

import (
	"context"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// seedClaims concludes n claims in the project's store, in process (n
// runs of the binary would take seconds).
func seedClaims(t *testing.T, p *testProject, n int) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Author: "seed"})
	for i := range n {
		if _, err := svc.Ledger.Conclude(context.Background(), service.ConcludeInput{Statement: fmt.Sprintf("claim %d holds", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func entityIDsOf(t *testing.T, r result) []string {
	t.Helper()
	var out []string
	es, _ := r.data()["entities"].([]any)
	for _, e := range es {
		out = append(out, e.(map[string]any)["id"].(string))
	}
	return out
}

// A person who runs `dont list` gets every claim: the CLI reads the pages
// itself when neither --limit nor --cursor is given.
func TestListWithoutLimitShowsEveryClaimAcrossPages(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	seedClaims(t, p, service.DefaultPageLimit*2+5)
	r := p.ok("list", "--json")
	ids := entityIDsOf(t, r)
	if len(ids) != service.DefaultPageLimit*2+5 || r.data()["count"] != float64(len(ids)) {
		t.Fatalf("list: %d entities, count %v", len(ids), r.data()["count"])
	}
	if _, more := r.data()["next_cursor"]; more {
		t.Fatalf("a listing of every page names a next page: %v", r.data()["next_cursor"])
	}
}

// With --limit the CLI prints one page, its next_cursor and a hint naming
// the command for the next; following the cursors reads each claim once.
func TestListWithLimitPrintsOnePageAndTheNextCommand(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	seedClaims(t, p, 25)
	seen := map[string]bool{}
	args := []string{"list", "--limit", "10", "--json"}
	for pages := 1; ; pages++ {
		r := p.ok(args...)
		for _, id := range entityIDsOf(t, r) {
			if seen[id] {
				t.Fatalf("%s on two pages", id)
			}
			seen[id] = true
		}
		next := r.str("next_cursor")
		if next == "" {
			if pages != 3 || len(seen) != 25 {
				t.Fatalf("%d pages, %d claims", pages, len(seen))
			}
			return
		}
		hints := fmt.Sprint(r.env["hints"])
		if !strings.Contains(hints, "dont list --limit 10 --cursor "+next) {
			t.Fatalf("hints %s do not name the next page", hints)
		}
		args = []string{"list", "--limit", "10", "--cursor", next, "--json"}
	}
}

// A cursor is good only for the listing that gave it: one of another
// query, or with a byte changed, is refused (exit 2, cursor-invalid, a
// remediation) and nothing is listed.
func TestACursorOfAnotherListingOrAlteredIsRefused(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	seedClaims(t, p, 5)
	next := p.ok("list", "--limit", "2", "--json").str("next_cursor")
	if next == "" {
		t.Fatal("no next_cursor")
	}
	altered := []byte(next)
	if altered[3] == 'A' {
		altered[3] = 'B'
	} else {
		altered[3] = 'A'
	}
	for name, args := range map[string][]string{
		"another status":  {"list", "--status", "doubted", "--cursor", next, "--json"},
		"another listing": {"spawns", "--all", "--cursor", next, "--json"},
		"altered":         {"list", "--cursor", string(altered), "--json"},
	} {
		r := p.run(args...)
		errv := r.data()
		if r.exit != 2 || errv["code"] != "cursor-invalid" {
			t.Fatalf("%s: exit %d %s", name, r.exit, r.stdout)
		}
		if rem, _ := errv["remediation"].([]any); len(rem) == 0 {
			t.Fatalf("%s: no remediation: %s", name, r.stdout)
		}
	}
	if r := p.run("list", "--limit", "1001", "--json"); r.exit != 2 {
		t.Fatalf("--limit 1001: exit %d %s", r.exit, r.stdout)
	}
	if r := p.run("show", entityIDsOf(t, p.ok("list", "--json"))[0], "--limit", "5", "--json"); r.exit != 2 {
		t.Fatalf("show --limit without --history: exit %d %s", r.exit, r.stdout)
	}
}

// Against an endpoint the CLI walks the pages the same way: each page one
// response of the API, one listing printed; with --limit, one page.
func TestListOverAnEndpointWithoutLimitShowsEveryClaimAcrossPages(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	seedClaims(t, p, service.MaxPageLimit+3)
	harness := p.token("harness")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	r := p.runEnv(remote, "list", "--json")
	if r.exit != 0 || len(entityIDsOf(t, r)) != service.MaxPageLimit+3 || r.data()["next_cursor"] != nil {
		t.Fatalf("list over HTTP: exit %d, %d entities, next %v", r.exit, len(entityIDsOf(t, r)), r.data()["next_cursor"])
	}
	seen := map[string]bool{}
	for _, id := range entityIDsOf(t, r) {
		if seen[id] {
			t.Fatalf("%s twice", id)
		}
		seen[id] = true
	}
	one := p.runEnv(remote, "list", "--limit", "7", "--json")
	if one.exit != 0 || len(entityIDsOf(t, one)) != 7 || one.str("next_cursor") == "" {
		t.Fatalf("list --limit 7 over HTTP: %d entities, next %q", len(entityIDsOf(t, one)), one.str("next_cursor"))
	}
}
