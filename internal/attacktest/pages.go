package attacktest

import (
	"net/http"
	"strings"
)

// cursorOfAnotherListingReadsNothing: a cursor is good only for the
// listing, filters and project that gave it, unaltered (docs/design.md,
// "Paginated reads"); any other is refused with cursor-invalid.
func cursorOfAnotherListingReadsNothing(r run) {
	h := r.target.Token(r.t, "harness")
	for range 3 {
		r.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"})
	}
	next := r.ok(h, "list", map[string]any{"limit": 1}).Str("next_cursor")
	if next == "" {
		r.t.Fatal("a page of one of three claims names no next page")
	}
	flip := "A"
	if strings.HasPrefix(next, "A") {
		flip = "B"
	}
	for what, c := range map[string]struct {
		tool string
		args map[string]any
	}{
		"a cursor with its first character changed": {"list", map[string]any{"cursor": flip + next[1:]}},
		"a cursor of another status":                {"list", map[string]any{"status": "doubted", "cursor": next}},
		"a cursor of the entity listing for spawns": {"spawns", map[string]any{"cursor": next}},
		"a cursor that is not one":                  {"list", map[string]any{"cursor": "claim:01HX05A9K8VP0000000000000A"}},
	} {
		rep := r.call(h, c.tool, c.args)
		r.refused(rep, http.StatusBadRequest, "cursor-invalid", what)
		if rep.Data()["entities"] != nil || rep.Data()["spawns"] != nil {
			r.t.Fatalf("%s: the refusal lists items: %s", what, rep.Raw)
		}
	}
	// The same for a hook's deliveries (an admin's read): checked before
	// the hook is looked up, so nothing is read.
	rep := r.call(r.target.Token(r.t, "admin"), "hooks.deliveries", map[string]any{"id": "hook:01HX05A9K8VP0000000000000A", "cursor": next})
	r.refused(rep, http.StatusBadRequest, "cursor-invalid", "a cursor of the entity listing for a hook's deliveries")
	if rep.Data()["deliveries"] != nil || rep.Data()["attempts"] != nil {
		r.t.Fatalf("a cursor of the entity listing for a hook's deliveries: the refusal lists items: %s", rep.Raw)
	}
	r.refused(r.call(h, "list", map[string]any{"limit": 1001}), http.StatusBadRequest, "invalid-argument", "a page above the maximum")
}
