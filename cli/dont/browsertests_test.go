package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// A browser test skipped under -short must skip before its setup: a
// project, dont serve and its tokens cost the README's test command
// seconds each, for nothing (.ci/run's Chromium step runs the test whole).
func TestEveryBrowserTestSkipsBeforeItsSetup(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	browserTests := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || len(fn.Name.Name) < 5 || fn.Name.Name[:4] != "Test" {
				continue
			}
			if !calls(fn.Body, "newBrowser", "openPage") {
				continue
			}
			browserTests++
			if len(fn.Body.List) == 0 || !calls(fn.Body.List[0], "needsChromium") {
				t.Errorf("%s (%s) opens a browser but does not begin with needsChromium(t)", fn.Name.Name, name)
			}
		}
	}
	if browserTests == 0 {
		t.Fatal("found no browser test: the check reads nothing")
	}
}

// calls reports whether n calls a function of one of the names.
func calls(n ast.Node, names ...string) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if c, ok := m.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok {
				for _, name := range names {
					found = found || id.Name == name
				}
			}
		}
		return !found
	})
	return found
}
