package tools_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/dont-cli/dont/internal/tools"
)

// A tool added without its row in the output table fails here, so that
// MCP's outputSchema and the OpenAPI responses never fall back to an
// untyped envelope.
func TestEveryToolDeclaresItsOutputKinds(t *testing.T) {
	kinds := tools.Kinds()
	for _, tl := range tools.All() {
		if !tools.DeclaresOutputKinds(tl.Name) {
			t.Errorf("tool %s has no row in outputKinds (internal/tools/outputs.go)", tl.Name)
			continue
		}
		for _, k := range tl.OutputKinds() {
			if !slices.Contains(kinds, k) {
				t.Errorf("tool %s returns kind %q, which has no data schema", tl.Name, k)
			}
		}
	}
	if k, _ := tools.Lookup("lock"); !slices.Contains(k.OutputKinds(), "confirmation") {
		t.Error("lock may be held but does not declare the confirmation kind")
	}
	if k, _ := tools.Lookup("confirmations.confirm"); !slices.Contains(k.OutputKinds(), "token") {
		t.Error("confirmations.confirm runs a held tokens.create but does not declare the token kind")
	}
}

// Every envelope_kind constant has a data schema, or is one a front end
// builds itself; a kind added without either fails here.
func TestEveryEnvelopeKindHasADataSchema(t *testing.T) {
	if err := tools.DataSchemaError(); err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "../envelope/kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					continue
				}
				kind, _ := strconv.Unquote(lit.Value)
				n++
				if _, ok := tools.DataSchema(kind); !ok && !slices.Contains(tools.FrontEndKinds, kind) {
					t.Errorf("envelope kind %q has no data schema (dataTypes in internal/tools/outputs.go) and is not a front end's", kind)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("read %d kinds from internal/envelope/kinds.go", n)
	}
	for _, k := range []string{"claim", "term"} {
		if _, ok := tools.DataSchema(k); !ok {
			t.Errorf("entity kind %s has no data schema", k)
		}
	}
	// The spawn request is typed down to its callback token.
	s, _ := tools.DataSchema("spawn_request")
	cb := s["properties"].(map[string]any)["callback"].(map[string]any)
	if tok := cb["properties"].(map[string]any)["token"].(map[string]any); tok["type"] != "string" {
		t.Fatalf("spawn_request callback.token: %v", tok)
	}
}
