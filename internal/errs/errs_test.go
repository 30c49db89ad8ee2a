package errs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every error code the code base can emit has a class (exit code, HTTP
// status) and a non-empty default remediation, so no error envelope can
// ever carry an empty remediation[].
func TestEveryErrorCodeHasRemediation(t *testing.T) {
	emitted := emittedCodes(t)
	if len(emitted) < 10 {
		t.Fatalf("found only %d codes in the source; the scan is broken", len(emitted))
	}
	for code := range emitted {
		if _, ok := catalogue[Code(code)]; !ok {
			t.Errorf("code %q is emitted but not in the catalogue", code)
		}
	}
	for _, code := range Codes() {
		e := E(code, "x")
		if len(e.Remediation) == 0 || e.Remediation[0].Command == "" || e.Remediation[0].Description == "" {
			t.Errorf("%s: empty remediation", code)
		}
		if ExitCode(e) == ExitOK {
			t.Errorf("%s: exit code 0", code)
		}
		if HTTPStatus(e) < 400 {
			t.Errorf("%s: HTTP status %d", code, HTTPStatus(e))
		}
	}
}

// emittedCodes finds every errs.<Code> constant used in the module's Go
// files and every Code declared in this package.
func emittedCodes(t *testing.T) map[string]bool {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{} // identifier -> code value
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errs.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Code" {
				consts[v.Names[0].Name] = strings.Trim(v.Values[0].(*ast.BasicLit).Value, `"`)
			}
		}
	}
	out := map[string]bool{}
	for _, v := range consts {
		out[v] = true
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		pf, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(pf, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if x, isIdent := sel0(sel, ok); isIdent && x == "errs" {
				if code, known := consts[sel.Sel.Name]; known {
					out[code] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sel0(sel *ast.SelectorExpr, ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}
