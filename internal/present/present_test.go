package present_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
)

// Every code the source declares — each constant of type errs.Code and
// each errs.Code("…") conversion of a literal, in every non-test file of
// the module — is in the table, and the table holds nothing else. Every
// row has an exit code other than 0, an HTTP error status and a non-empty
// remediation, so no error envelope can carry an empty remediation[].
func TestEveryCodeIsInTheTable(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) < 40 {
		t.Fatalf("found only %d codes in the source; the scan is broken", len(declared))
	}
	for _, code := range sortedKeys(declared) {
		if _, ok := present.Of(errs.Code(code)); !ok {
			t.Errorf("%s declares code %q, which internal/present's table lacks", declared[code], code)
		}
	}
	for _, code := range present.Codes() {
		if _, ok := declared[string(code)]; !ok {
			t.Errorf("the table holds %q, which no package declares", code)
		}
		c, _ := present.Of(code)
		e := present.Explain(errs.E(code, "x"))
		if len(e.Remediation) == 0 || e.Remediation[0].Command == "" || e.Remediation[0].Description == "" {
			t.Errorf("%s: empty remediation", code)
		}
		if c.Exit == present.ExitOK || present.Exit(e) != c.Exit {
			t.Errorf("%s: exit code %d", code, present.Exit(e))
		}
		if c.Status < 400 || present.Status(e) != c.Status {
			t.Errorf("%s: HTTP status %d", code, present.Status(e))
		}
	}
}

// The table is one map literal; a code written twice in it (once by
// constant, once by value) would be a compile error, but a code spelled
// twice by value in different case or with a stray space would not be.
func TestTheTableHoldsEachCodeOnce(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "present.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	errsConsts := constants(t, filepath.Join("..", "errs"))
	seen := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok || len(v.Names) != 1 || v.Names[0].Name != "table" {
			return true
		}
		var lit *ast.CompositeLit // the map literal the table's function returns
		ast.Inspect(v.Values[0], func(n ast.Node) bool {
			if c, ok := n.(*ast.CompositeLit); ok && lit == nil {
				if _, isMap := c.Type.(*ast.MapType); isMap {
					lit = c
				}
			}
			return lit == nil
		})
		if lit == nil {
			t.Fatal("the table holds no map literal")
		}
		for _, elt := range lit.Elts {
			var key string
			switch k := elt.(*ast.KeyValueExpr).Key.(type) {
			case *ast.BasicLit:
				key, _ = strconv.Unquote(k.Value)
			case *ast.SelectorExpr:
				key = errsConsts[k.Sel.Name]
			}
			seen[strings.ToLower(strings.TrimSpace(key))]++
			if key == "" || key != strings.ToLower(strings.TrimSpace(key)) {
				t.Errorf("table key %q is not a kebab-case code", key)
			}
		}
		return false
	})
	if len(seen) != len(present.Codes()) {
		t.Errorf("parsed %d table keys, the table has %d", len(seen), len(present.Codes()))
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("the table holds %q %d times", k, n)
		}
	}
}

// An invalid transition tells the caller what to run next for the rule
// that refused it, with the entity filled in.
func TestInvalidTransitionsRemediateByTheUnmetClause(t *testing.T) {
	for _, c := range []struct {
		from ledger.Status
		a    ledger.Action
		want string
	}{
		{ledger.Unverified, ledger.Lock, "dont dismiss claim:x --evidence <uri>"},
		{ledger.Locked, ledger.Doubt, "dont conclude \"<corrected statement>\""},
		{ledger.Ignored, ledger.Verify, "dont reopen claim:x --reason \"<why>\""},
		{ledger.Unverified, ledger.Reopen, "dont show claim:x --history"},
	} {
		_, err := ledger.Next("claim:x", c.from, c.a)
		if got := present.Explain(err).Remediation; len(got) != 1 || got[0].Command != c.want {
			t.Errorf("%s from %s: remediation %+v, want %q", c.a, c.from, got, c.want)
		}
	}
}

// An override a transport gives wins over the default, and
// <id> is filled in it too.
func TestAnOverrideWinsAndNamesTheEntity(t *testing.T) {
	e := errs.E(errs.NotFound, "x", errs.Step{Command: "dont approvals wait <id>", Description: "wait again"}).On("apr:1")
	if got := present.Explain(e).Remediation; len(got) != 1 || got[0].Command != "dont approvals wait apr:1" {
		t.Fatalf("remediation %+v", got)
	}
	if present.Exit(nil) != present.ExitOK || present.Status(nil) != 200 || present.Explain(nil) != nil {
		t.Fatal("a nil error is not ok")
	}
	if present.Exit(errs.E("no-such-code", "x")) != present.ExitInternal || present.Status(errs.E("no-such-code", "x")) != 500 {
		t.Fatal("an unknown code is not internal")
	}
}

// declaredCodes maps every code the module's non-test Go files declare to
// the file that declares it.
func declaredCodes(t *testing.T) map[string]string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		path string
		f    *ast.File
	}
	var files []file
	consts := map[string]map[string]string{} // package name -> constant -> string value
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{filepath.ToSlash(rel), f})
		if consts[f.Name.Name] == nil {
			consts[f.Name.Name] = map[string]string{}
		}
		for name, v := range literalConstants(f) {
			consts[f.Name.Name][name] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// value resolves a constant's value: a literal, errs.Code(literal),
	// errs.Code(pkg.Const) or Code(Const) within the package.
	var value func(pkg string, x ast.Expr) (string, bool)
	value = func(pkg string, x ast.Expr) (string, bool) {
		switch x := x.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		case *ast.Ident:
			s, ok := consts[pkg][x.Name]
			return s, ok
		case *ast.SelectorExpr:
			if p, ok := x.X.(*ast.Ident); ok {
				s, ok := consts[p.Name][x.Sel.Name]
				return s, ok
			}
		case *ast.CallExpr:
			if isCode(pkg, x.Fun) && len(x.Args) == 1 {
				return value(pkg, x.Args[0])
			}
		}
		return "", false
	}
	out := map[string]string{}
	for _, fl := range files {
		pkg := fl.f.Name.Name
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				typed := n.Type != nil && isCode(pkg, n.Type)
				if !typed {
					// an untyped constant of an errs.Code(…) conversion
					for i, name := range n.Names {
						if i < len(n.Values) {
							if c, ok := n.Values[i].(*ast.CallExpr); ok && isCode(pkg, c.Fun) {
								if v, ok := value(pkg, c); ok {
									out[v] = fl.path
								} else {
									t.Errorf("%s: code %s has no value the scan can read", fl.path, name.Name)
								}
							}
						}
					}
					return true
				}
				for i, name := range n.Names {
					if i >= len(n.Values) {
						t.Errorf("%s: code %s has no value the scan can read", fl.path, name.Name)
						continue
					}
					v, ok := value(pkg, n.Values[i])
					if !ok {
						t.Errorf("%s: code %s has no value the scan can read", fl.path, name.Name)
						continue
					}
					out[v] = fl.path
				}
			case *ast.CallExpr:
				if isCode(pkg, n.Fun) && len(n.Args) == 1 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = fl.path
					}
				}
			}
			return true
		})
	}
	return out
}

// isCode reports whether x names the type errs.Code (Code inside errs).
func isCode(pkg string, x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.SelectorExpr:
		p, ok := x.X.(*ast.Ident)
		return ok && p.Name == "errs" && x.Sel.Name == "Code"
	case *ast.Ident:
		return pkg == "errs" && x.Name == "Code"
	}
	return false
}

// literalConstants are the file's constants whose value is a string literal.
func literalConstants(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, name := range v.Names {
				if i < len(v.Values) {
					if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

// constants are the string constants of the package in dir.
func constants(t *testing.T, dir string) map[string]string {
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range matches {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range literalConstants(f) {
			out[k] = v
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A row refines its default by the first unmet clause (exactly, else by
// the longest key the clause begins with) or by the kind of what the
// error concerns, and fills <key> from the error's arguments.
func TestRefinementsFillArguments(t *testing.T) {
	cases := []struct {
		e    *errs.Error
		want []string
	}{
		{errs.E(errs.SpawnPending, "x").On("claim:1").Unmet("at most one pending verification spawn per entity").With("request", "spawn:2"),
			[]string{"dont spawns --pending", "dont dismiss claim:1 --evidence <uri> --request-id spawn:2"}},
		{errs.E("forbidden", "x").Unmet("request_id = spawn:2").With("tool", "trust").With("request", "spawn:2"),
			[]string{"dont trust … --request-id spawn:2"}},
		{errs.E(errs.Interrupted, "x").On("apr:1"),
			[]string{"dont approvals wait apr:1", "dont approvals cancel apr:1"}},
		{errs.E(errs.Interrupted, "x").On("ses:1").With("after", "7"),
			[]string{"dont approvals frames --session ses:1 --after 7"}},
		{errs.E("provider-error", "x").With("kind", "guess").With("question", `a "b"`).With("n", "3"),
			[]string{`dont guess "a \"b\"" --n 3 --direct`, "env | grep DONT_LLM_; cat .dont/config.toml", `dont guess "a \"b\"" --n 3 --harness`}},
		{errs.E("provider-timeout", "x").On("claim:1").With("kind", "overlook"),
			[]string{"dont overlook claim:1 --direct", `timeout = "120s"  # in [llm] of .dont/config.toml`, "dont overlook claim:1 --harness"}},
		{errs.E(errs.AlreadyExists, "x").On("term:1"), []string{"dont show term:1"}},
		{errs.E(errs.InvalidArgument, "x").Unmet("tier is one of read-only, workspace-write"), []string{"dont sessions open --tier read-only"}},
		{errs.E(errs.InvalidArgument, "x").Unmet("no such clause"), []string{"dont help"}},
	}
	for _, c := range cases {
		got := present.Explain(c.e).Remediation
		var cmds []string
		for _, s := range got {
			cmds = append(cmds, s.Command)
		}
		if strings.Join(cmds, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s %v: remediation %q, want %q", c.e.Code, c.e.UnmetClauses, cmds, c.want)
		}
	}
	e := errs.E(errs.SpawnPending, "x").Unmet("at most one pending verification spawn per entity").With("request", "spawn:2")
	if d := present.Remediation(e)[0].Description; d != "see the pending spawn spawn:2" {
		t.Errorf("description %q is not filled", d)
	}
}
