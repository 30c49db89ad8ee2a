package tools

import (
	"strings"
	"testing"
)

// Every tool has a human title (hosts show it instead of the name), and
// the table names no tool that does not exist.
func TestEveryToolHasATitle(t *testing.T) {
	seen := map[string]bool{}
	for _, tl := range All() {
		seen[tl.Name] = true
		if tl.Title == "" || strings.Contains(tl.Title, ".") || strings.ToUpper(tl.Title[:1]) != tl.Title[:1] {
			t.Errorf("%s: title %q, want a capitalised human name", tl.Name, tl.Title)
		}
	}
	for name := range titles {
		if !seen[name] {
			t.Errorf("titles names %s, which is not a tool", name)
		}
	}
}
