package repocheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// outside are the strings that cite a document this repository does not
// hold: the product design and house style that lived beside the checkout,
// and the source documents the protocols were built from. Each is split so
// that this file does not cite them itself. What they meant is
// docs/design.md now; cite its section, or the test that proves the rule.
var outside = []string{
	"DESIGN" + " §",
	"DESIGN" + ".md",
	"STYLE" + ".md",
	"../" + "shared",
	"seeds" + "/",
	"spawn-protocol" + "-spec",
	"tier-escalation" + "-story",
	"client-side-confirmation" + ".md",
}

func TestNoReferenceToDocumentsOutsideTheRepository(t *testing.T) {
	root, files := tracked(t)
	read, found := 0, 0
	for _, f := range files {
		text, ok := readText(t, root, f)
		if !ok {
			continue
		}
		read++
		for i, line := range strings.Split(text, "\n") {
			for _, s := range outside {
				if strings.Contains(line, s) {
					found++
					t.Errorf("%s:%d cites %q, a document outside the repository: point it at docs/design.md's section or at the test that proves the rule", f, i+1, s)
				}
			}
		}
	}
	t.Logf("%d tracked text files read, %d references outside the repository", read, found)
}

var (
	headingRe = regexp.MustCompile(`^#{1,6} +(.+?) *$`)
	numberRe  = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.? `)
	idRe      = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	sectionRe = regexp.MustCompile(`§ ?(\d+(?:\.\d+)*)`)
	anchorRe  = regexp.MustCompile(`design\.md#([A-Za-z0-9_-]+)`)
	localRe   = regexp.MustCompile(`\]\(#([A-Za-z0-9_-]+)\)`)
)

// TestDesignCitationsNameSectionsThatExist: code and docs cite
// docs/design.md by section number (docs/design.md §5.4) or by anchor
// (docs/design.md#spawn-protocol); every such citation, and every one
// inside docs/design.md, must name a section or anchor the page has.
func TestDesignCitationsNameSectionsThatExist(t *testing.T) {
	root, files := tracked(t)
	design, ok := readText(t, root, "docs/design.md")
	if !ok {
		t.Fatal("docs/design.md is missing or not text")
	}
	sections, anchors := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(design, "\n") {
		for _, m := range idRe.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		h := headingRe.FindStringSubmatch(line)
		if h == nil {
			continue
		}
		anchors[slug(h[1])] = true
		if n := numberRe.FindStringSubmatch(h[1]); n != nil {
			sections[n[1]] = true
		}
	}
	if len(sections) == 0 || len(anchors) == 0 {
		t.Fatalf("docs/design.md has %d numbered sections and %d anchors", len(sections), len(anchors))
	}
	cited := 0
	check := func(f string, line int, kind, ref string, known map[string]bool) {
		cited++
		if !known[ref] {
			t.Errorf("%s:%d cites docs/design.md %s%s, which does not exist", f, line, kind, ref)
		}
	}
	for _, f := range files {
		text, ok := readText(t, root, f)
		if !ok {
			continue
		}
		self := f == "docs/design.md"
		for i, line := range strings.Split(text, "\n") {
			for _, m := range anchorRe.FindAllStringSubmatch(line, -1) {
				check(f, i+1, "#", m[1], anchors)
			}
			if self {
				for _, m := range localRe.FindAllStringSubmatch(line, -1) {
					check(f, i+1, "#", m[1], anchors)
				}
			}
			// Elsewhere a section number counts as a citation of the
			// design on a line that names it.
			if self || strings.Contains(line, "design.md") {
				for _, m := range sectionRe.FindAllStringSubmatch(line, -1) {
					check(f, i+1, "§", m[1], sections)
				}
			}
		}
	}
	t.Logf("%d citations of docs/design.md checked against %d sections and %d anchors", cited, len(sections), len(anchors))
}

// slug is the anchor GitHub gives a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// domain are the packages that hold the rules (docs/design.md §3.1): they
// import the standard library and one another, nothing else, except what
// is listed for them here.
var domain = map[string][]string{
	"internal/errs":      nil,
	"internal/ids":       {"github.com/oklog/ulid/v2"},
	"internal/envelope":  nil,
	"internal/ledger":    nil,
	"internal/spawn":     nil,
	"internal/approvals": nil,
	"internal/confirm":   nil,
	"internal/auth":      nil,
	"internal/visible":   nil,
	// the person's approval rules, and the harnesses' permission requests
	"internal/rules":       nil,
	"internal/harnesshook": nil,
	// the special-purpose address ranges of a maintained SSRF library (a
	// table and its lookups: no I/O), for the hook address policy
	"internal/hooks": {"code.dny.dev/ssrf"},
	// not a domain package but held to the same rule, so that envelope
	// and every transport reach it: the presentation table
	"internal/present":  nil,
	"internal/settings": nil,
	// encoding/json's encodings without reflection, for the envelope,
	// the spawn request and the stores' documents
	"internal/jsontext": nil,
}

func TestDomainPackagesImportOnlyTheStandardLibrary(t *testing.T) {
	root, _ := tracked(t)
	module := modulePath(t, root)
	dirs := make([]string, 0, len(domain))
	for d := range domain {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, path := range matches {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			n++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				if !allowed(module, dir, imp) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s imports %s: a domain package imports only the standard library and the other domain packages (docs/design.md §3.1)", filepath.ToSlash(rel), imp)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s has no Go files: update the list of domain packages", dir)
		}
	}
}

// The domain does not pull in HTTP, not even through another package:
// statuses are the presentation table's, and plain numbers there.
func TestDomainPackagesDoNotDependOnNetHTTP(t *testing.T) {
	root, _ := tracked(t)
	module := modulePath(t, root)
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
	for d := range domain {
		args = append(args, module+"/"+d)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(domain) {
		t.Fatalf("go list answered for %d packages, want %d", len(lines), len(domain))
	}
	for _, line := range lines {
		deps := strings.Fields(line)
		for _, dep := range deps[1:] {
			if dep == "net/http" {
				t.Errorf("%s depends on net/http: a domain package pulls in no transport (docs/design.md §3.1)", strings.TrimPrefix(deps[0], module+"/"))
			}
		}
	}
}

// The domain says what went wrong, never what to type next: no domain
// package but errs and present builds a remediation step, so none writes
// CLI syntax into an error (docs/design.md §4.4). The service is held to
// the same rule: it says which clause refused and what the error concerns
// (Unmet, On, With), and the table says what to run.
func TestDomainPackagesWriteNoRemediation(t *testing.T) {
	root, _ := tracked(t)
	dirs := []string{"internal/service"}
	for dir := range domain {
		// settings is held to the import rule, not this one: it parses what
		// a person sets, and its errors say which variable or key to fix.
		if dir == "internal/errs" || dir == "internal/present" || dir == "internal/settings" {
			continue
		}
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		inspectSources(t, root, dir, func(rel string, fset *token.FileSet, n ast.Node) {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return
			}
			x, isIdent := sel.X.(*ast.Ident)
			if sel.Sel.Name == "Remediation" || isIdent && x.Name == "errs" && sel.Sel.Name == "Step" {
				t.Errorf("%s:%d builds a remediation: the presentation table (internal/present) says what to run next", rel, fset.Position(sel.Pos()).Line)
			}
		})
	}
}

// inspectSources walks the syntax of every non-test Go file of dir, with
// each file's slash path relative to root.
func inspectSources(t *testing.T, root, dir string, visit func(rel string, fset *token.FileSet, n ast.Node)) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			visit(filepath.ToSlash(rel), fset, n)
			return true
		})
	}
}

// The service's messages and warnings may name entities but not commands:
// what to run is the presentation's (internal/present's table for errors,
// internal/tools' output builders for hints and warnings).
func TestServiceWritesNoCommands(t *testing.T) {
	root, _ := tracked(t)
	inspectSources(t, root, "internal/service", func(rel string, fset *token.FileSet, n ast.Node) {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		v, err := strconv.Unquote(lit.Value)
		if err == nil && (strings.HasPrefix(v, "dont ") || strings.Contains(v, "run dont ")) {
			t.Errorf("%s:%d writes a command %q: presentation says what to run", rel, fset.Position(lit.Pos()).Line, v)
		}
	})
}

// The errors of the service and the domain name a parameter the way the
// API spells it, in backticks (`request_id`), never as a CLI flag: an HTTP or MCP caller
// has no --request-id, and the CLI writes the flag for its own user
// (cli/dont/cmdline).
func TestServiceAndDomainNameNoCLIFlag(t *testing.T) {
	root, _ := tracked(t)
	flag := regexp.MustCompile(`(^|[\s(])--[a-z]`)
	for _, dir := range []string{"internal/service", "internal/spawn", "internal/approvals", "internal/ledger"} {
		inspectSources(t, root, dir, func(rel string, fset *token.FileSet, n ast.Node) {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "E" || fmt.Sprint(sel.X) != "errs" {
				return
			}
			ast.Inspect(call.Args[1], func(m ast.Node) bool {
				lit, ok := m.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if v, err := strconv.Unquote(lit.Value); err == nil && flag.MatchString(v) {
					t.Errorf("%s:%d names a CLI flag in %q: name the parameter in backticks", rel, fset.Position(lit.Pos()).Line, v)
				}
				return true
			})
		})
	}
}

func allowed(module, dir, imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return true // the standard library
	}
	if _, ok := domain[strings.TrimPrefix(imp, module+"/")]; ok && strings.HasPrefix(imp, module+"/") {
		return true
	}
	for _, extra := range domain[dir] {
		if imp == extra {
			return true
		}
	}
	return false
}

func modulePath(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// tracked returns the repository's root and its tracked files (slash
// paths relative to the root): what `git ls-files` lists, or, outside a
// git checkout, every file under the root but version control, installed
// node modules and build outputs.
func tracked(t *testing.T) (string, []string) {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the working directory")
		}
		root = parent
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return root, files
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "build", "bin", "cdk.out":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ".git" { // a worktree's link to its repository
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// readText returns a file's contents, or false for a file that is gone
// from the work tree or is binary (a NUL byte in its first 8 KiB).
func readText(t *testing.T, root, rel string) (string, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		if os.IsNotExist(err) {
			return "", false
		}
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	head := make([]byte, 8<<10)
	n, _ := f.Read(head)
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return "", false
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// The service and the stores sit inside the adapters, never beside them
// (docs/design.md §3): neither reaches, directly or through any other
// package of this module, a transport, a provider or a front end.
// reachNot lists what each may not reach: a package of this module (a
// path relative to the module, a trailing slash for everything under
// it) or an import path outside it (a prefix).
var reachNot = map[string][]string{
	"internal/service": {
		"internal/httpapi", "internal/mcp", "internal/llm", "internal/client", "internal/scheduler/sqs",
		"internal/webhook", "internal/store/", "cli/", "functions/",
		// no SDK of a provider, a cloud, a database or a front end
		"github.com/aws/", "github.com/modelcontextprotocol/", "github.com/spf13/", "modernc.org/",
	},
	// The runner is an adapter of its own: it reaches dont only through
	// its Dont port, which the CLI wires (docs/harnesses.md).
	"internal/runner": {
		"internal/httpapi", "internal/mcp", "internal/llm", "internal/client", "internal/scheduler",
		"internal/service", "internal/tools", "internal/store/", "internal/project", "cli/", "functions/",
		"github.com/aws/", "github.com/modelcontextprotocol/", "github.com/spf13/", "modernc.org/",
	},
	"internal/store/": {
		"internal/httpapi", "internal/mcp", "internal/llm", "internal/client", "internal/scheduler/sqs",
		"internal/webhook", "cli/", "functions/",
		"github.com/aws/aws-lambda-go", "github.com/awslabs/", "github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		"github.com/aws/aws-sdk-go-v2/service/sqs", "github.com/modelcontextprotocol/", "github.com/spf13/",
	},
}

func TestStoresAndServiceImportNoTransportOrProvider(t *testing.T) {
	root, files := tracked(t)
	module := modulePath(t, root)
	imports := moduleImports(t, root, module, files)
	checked := 0
	for _, pkg := range sortedKeys(imports) {
		for scope, forbidden := range reachNot {
			if !under(pkg, scope) {
				continue
			}
			checked++
			reported := map[string]bool{} // the first path to each forbidden one says enough
			for _, path := range reach(imports, pkg) {
				for _, f := range forbidden {
					if under(path.to, f) && !reported[f] {
						reported[f] = true
						t.Errorf("%s reaches %s (%s): the service and the stores import no transport, provider or front end; declare a port where it is used and let the adapter implement it (docs/design.md §3)",
							pkg, path.to, strings.Join(path.via, " -> "))
					}
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("%d packages checked: internal/service and the stores are missing", checked)
	}
	t.Logf("%d packages of %d checked", checked, len(imports))
}

// No store imports the use-case layer: the ports a store implements, and
// every type they take and return, live in internal/store, which the
// service and the stores both import (docs/design.md §3). So no non-test
// file of internal/store or of a package under it reaches
// internal/service, directly or through another package of this module;
// tests that build a service over a store may import it.
func TestNoStoreImportsTheUseCaseLayer(t *testing.T) {
	root, files := tracked(t)
	module := modulePath(t, root)
	imports := moduleImports(t, root, module, files)
	checked := 0
	for _, pkg := range sortedKeys(imports) {
		if !under(pkg, "internal/store") {
			continue
		}
		checked++
		for _, path := range reach(imports, pkg) {
			if under(path.to, "internal/service") {
				t.Errorf("%s reaches internal/service (%s): a store imports the port it implements (internal/store), never the use-case layer; move the type it needs into internal/store",
					pkg, strings.Join(path.via, " -> "))
				break
			}
		}
	}
	if checked < 3 {
		t.Fatalf("%d packages checked: internal/store and its two stores are missing", checked)
	}
}

// moduleImports parses the imports of every tracked non-test Go file and
// returns them by package, as paths relative to the module for its own
// packages and full import paths for the others.
func moduleImports(t *testing.T, root, module string, files []string) map[string][]string {
	t.Helper()
	seen := map[string]map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(f)), nil, parser.ImportsOnly)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		pkg := filepath.ToSlash(filepath.Dir(f))
		if seen[pkg] == nil {
			seen[pkg] = map[string]bool{}
		}
		for _, spec := range parsed.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imp = rel
			}
			seen[pkg][imp] = true
		}
	}
	out := map[string][]string{}
	for pkg, imps := range seen {
		out[pkg] = sortedKeys(imps)
	}
	return out
}

type importPath struct {
	to  string
	via []string
}

// reach is everything pkg imports, directly or through the module's
// other packages, each with one chain of imports that gets there.
func reach(imports map[string][]string, pkg string) []importPath {
	var out []importPath
	seen := map[string]bool{pkg: true}
	queue := []importPath{{to: pkg, via: []string{pkg}}}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p.to] {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			next := importPath{to: imp, via: append(append([]string{}, p.via...), imp)}
			out = append(out, next)
			if _, ours := imports[imp]; ours {
				queue = append(queue, next)
			}
		}
	}
	return out
}

// under reports whether path is scope, or lies under it when scope ends
// in a slash (a package path, or an outside prefix, otherwise).
func under(path, scope string) bool {
	if strings.HasSuffix(scope, "/") {
		return strings.HasPrefix(path, scope)
	}
	return path == scope || strings.HasPrefix(path, scope+"/") || (strings.Contains(scope, ".") && strings.HasPrefix(path, scope))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
