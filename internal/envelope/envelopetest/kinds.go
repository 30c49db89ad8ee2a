// Package envelopetest gives tests every envelope kind, read from the
// source of internal/envelope/kinds.go so that a kind added there is a
// kind each golden test asks for.
package envelopetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/dont-cli/dont/internal/envelope"
)

// Kinds are the values of the string constants of kinds.go, with the
// ledger's entity kinds (claim, term) and the error kind, sorted.
func Kinds(t testing.TB) []string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("envelopetest: no source path for kinds.go")
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(filepath.Dir(here), "..", "kinds.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"claim", "term", envelope.KindError}
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok {
			for _, x := range v.Values {
				if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
		return true
	})
	sort.Strings(out)
	return out
}
