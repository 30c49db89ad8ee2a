package tools

import "testing"

// What only a person may do at the embedded CLI is the registry's to say
// (docs/security.md, "What only a person may do"): every answer and every
// token minted or revoked; reading tokens is not.
func TestOnlyThePersonAnswersOrMintsOrRevokesTokens(t *testing.T) {
	for _, c := range []struct {
		tool string
		args map[string]any
		want bool
	}{
		{"approvals.approve", map[string]any{"id": "apr:x"}, true},
		{"approvals.refuse", map[string]any{"id": "apr:x"}, true},
		{"confirmations.confirm", map[string]any{"id": "conf:x"}, true},
		{"tokens.create", map[string]any{"role": "admin"}, true},
		{"tokens.revoke", map[string]any{"id": "tok:x"}, true},
		{"tokens.revoke-all", map[string]any{}, true},
		{"tokens.manage", map[string]any{"op": "create", "role": "admin"}, true},
		{"tokens.manage", map[string]any{"op": "revoke", "id": "tok:x"}, true},
		{"tokens.manage", map[string]any{"op": "list"}, false},
		{"tokens.manage", map[string]any{}, false},
		{"tokens.list", map[string]any{}, false},
		{"lock", map[string]any{"id": "claim:x"}, false},
		{"approvals.cancel", map[string]any{"id": "apr:x"}, false},
	} {
		tool, ok := Lookup(c.tool)
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		if got := tool.NeedsPerson(c.args); got != c.want {
			t.Errorf("%s %v: needs the person %v, want %v", c.tool, c.args, got, c.want)
		}
	}
}
