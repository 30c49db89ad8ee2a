package main

import (
	"strings"
	"sync"
	"testing"
)

// Attack 9 of docs/security.md through the CLI: eight dont define processes of
// one CURIE on one embedded project, started together, each holding its
// write transaction open for a second before it commits
// (DONT_FAULT_COMMIT_DELAY), so that all have read that no term holds the
// CURIE before the first commits. The SQLite file's unique key on a term's
// CURIE lets one commit; the other seven exit 1 with already-exists naming
// it, as any define of a taken CURIE does, and write nothing.
func TestConcurrentDefinesOfOneCurieLeaveOneTerm(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	const n = 8
	var wg sync.WaitGroup
	results := make([]result, n)
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = p.runEnv([]string{"DONT_FAULT_COMMIT_DELAY=1s"}, "define", "ex:Widget", "--doc", "a widget", "--json")
		}()
	}
	close(start)
	wg.Wait()
	var terms []string
	for _, e := range p.ok("list", "--json").data()["entities"].([]any) {
		if e := e.(map[string]any); e["kind"] == "term" {
			terms = append(terms, e["id"].(string))
		}
	}
	if len(terms) != 1 {
		t.Fatalf("%d terms of ex:Widget stored, want 1: %v", len(terms), terms)
	}
	winner := terms[0]
	won := 0
	for i, r := range results {
		if r.exit == 0 {
			won++
			if r.str("id") != winner {
				t.Errorf("define %d answered %s, stored is %s", i, r.str("id"), winner)
			}
			continue
		}
		rem, _ := r.data()["remediation"].([]any)
		if r.exit != 1 || r.str("code") != "already-exists" || r.str("entity_id") != winner || !strings.Contains(r.str("message"), winner) ||
			len(rem) != 1 || rem[0].(map[string]any)["command"] != "dont show "+winner {
			t.Errorf("define %d: exit %d %s %s, want exit 1 already-exists on %s", i, r.exit, r.stdout, r.stderr, winner)
		}
	}
	if won != 1 {
		t.Fatalf("%d defines succeeded, want 1", won)
	}
	if hist := p.ok("show", winner, "--history", "--json").data()["history"].([]any); len(hist) != 1 {
		t.Fatalf("the term's history: %v", hist)
	}
}
