package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/tools"
)

const lintDir = "testdata/openapilint"

type lintSummary struct {
	OK        bool   `json:"ok"`
	Validator string `json:"validator"`
	Version   string `json:"version"`
	Paths     int    `json:"paths"`
	Schemas   int    `json:"schemas"`
	Error     string `json:"error"`
}

// needTools returns node, and fails under CI (.ci/run installs the tools)
// or skips elsewhere, naming the install command, when node or one of the
// npm packages (testdata/openapilint, its own Node project) is missing.
func needTools(t *testing.T, packages ...string) string {
	t.Helper()
	if testing.Short() {
		// Node and four foreign tools cost the README's test command about
		// half a minute of CPU; .ci/run's OpenAPI step runs these tests by
		// name without -short and fails on a skip.
		t.Skip("the OpenAPI tools (Node) run without -short: .ci/run's OpenAPI step")
	}
	missing := func(why string) {
		t.Helper()
		msg := why + "; install the tools with: npm ci --prefix internal/httpapi/testdata/openapilint"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (.ci/run does this before the tests)")
		}
		t.Skip(msg + " (CI installs them and fails instead of skipping)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	for _, pkg := range packages {
		if _, err := os.Stat(filepath.Join(lintDir, "node_modules", pkg, "package.json")); err != nil {
			missing(lintDir + "/node_modules has no " + pkg)
		}
	}
	return node
}

// lint runs swagger-parser on documents, in one process.
func lint(t *testing.T, docs ...any) []lintSummary {
	t.Helper()
	node := needTools(t, "@apidevtools/swagger-parser")
	dir := t.TempDir()
	var files []string
	for i, doc := range docs {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(dir, "openapi"+strconv.Itoa(i)+".json"))
		if err := os.WriteFile(files[i], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, node, append([]string{filepath.Join(lintDir, "lint.mjs")}, files...)...)
	c.Stdout, c.Stderr = &out, &errb
	runErr := c.Run()
	var all []lintSummary
	allOK := true
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var s lintSummary
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("the validator printed no summary (%v)\nstderr:\n%s\nstdout:\n%s", runErr, errb.String(), out.String())
		}
		allOK = allOK && s.OK
		all = append(all, s)
	}
	if len(all) != len(docs) || (runErr == nil) != allOK {
		t.Fatalf("validator exit %v with %d summaries for %d documents\nstderr:\n%s", runErr, len(all), len(docs), errb.String())
	}
	return all
}

// The served document passes an independent validator (not the Go code
// that wrote it), and the validator bites on a broken one.
func TestTheOpenAPIDocumentPassesAnIndependentValidator(t *testing.T) {
	broken := httpapi.OpenAPI()
	broken["components"].(map[string]any)["schemas"].(map[string]any)["ErrorEnvelope"] = map[string]any{"$ref": "#/components/schemas/NoSuchSchema"}
	noInfo := httpapi.OpenAPI()
	delete(noInfo, "info")
	res := lint(t, httpapi.OpenAPI(), broken, noInfo)
	s := res[0]
	if !s.OK {
		t.Fatalf("%s %s rejects the document: %s", s.Validator, s.Version, s.Error)
	}
	if s.Paths < 10 || s.Schemas < 20 {
		t.Fatalf("the validator saw %d paths and %d schemas", s.Paths, s.Schemas)
	}
	t.Logf("%s %s: %d paths, %d schemas valid", s.Validator, s.Version, s.Paths, s.Schemas)
	if res[1].OK {
		t.Fatal("the validator accepted a dangling $ref")
	}
	if res[2].OK {
		t.Fatal("the validator accepted a document without info")
	}
}

// servedDocument is GET /v1/openapi.json as a server answers it, written
// to dir.
func servedDocument(t *testing.T, a *api, dir string) (string, []byte) {
	t.Helper()
	r := a.do("GET", "/v1/openapi.json", "", nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/openapi.json: %d", r.status)
	}
	path := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(path, r.raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, r.raw
}

// runTool runs an npm package's command (node_modules/.bin) in dir with
// node; a non-zero exit is returned, not fatal.
func runTool(t *testing.T, node, dir, command string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(lintDir, "node_modules", ".bin", command))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, node, append([]string{bin}, args...)...)
	c.Dir, c.Stdout, c.Stderr = dir, &out, &errb
	// No telemetry and no update check: the lint is offline.
	c.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_NOTIFICATIONS=true", "NO_UPDATE_NOTIFIER=1")
	err = c.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s timed out\n%s", command, errb.String())
	}
	return out.Bytes(), errb.Bytes(), err
}

// lintCounts are one linter's findings on one document.
type lintCounts struct {
	errors, warnings int
	firstErrors      []string
}

// redocly lints path with Redocly's recommended ruleset (redocly.yaml).
func redocly(t *testing.T, node, path string) lintCounts {
	t.Helper()
	config, _ := filepath.Abs(filepath.Join(lintDir, "redocly.yaml"))
	out, errb, runErr := runTool(t, node, filepath.Dir(path), "redocly", "lint", "--config", config, "--format", "json", path)
	var report struct {
		Totals struct {
			Errors   int `json:"errors"`
			Warnings int `json:"warnings"`
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly printed no report (%v)\nstderr:\n%s\nstdout:\n%s", runErr, errb, out)
	}
	c := lintCounts{errors: report.Totals.Errors, warnings: report.Totals.Warnings}
	for _, p := range report.Problems {
		if p.Severity == "error" && len(c.firstErrors) < 10 {
			where := ""
			if len(p.Location) > 0 {
				where = p.Location[0].Pointer
			}
			c.firstErrors = append(c.firstErrors, p.RuleID+" at "+where+": "+p.Message)
		}
	}
	if (runErr == nil) != (c.errors == 0) {
		t.Fatalf("redocly exit %v with %d errors\nstderr:\n%s", runErr, c.errors, errb)
	}
	return c
}

// spectral lints path with Spectral's OpenAPI ruleset (.spectral.yaml).
func spectral(t *testing.T, node, path string) lintCounts {
	t.Helper()
	ruleset, _ := filepath.Abs(filepath.Join(lintDir, ".spectral.yaml"))
	out, errb, runErr := runTool(t, node, filepath.Dir(path), "spectral", "lint", "--ruleset", ruleset, "--format", "json", "--fail-severity", "error", path)
	var findings []struct {
		Code     string   `json:"code"`
		Message  string   `json:"message"`
		Path     []string `json:"path"`
		Severity int      `json:"severity"` // 0 error, 1 warning, 2 info, 3 hint
	}
	if err := json.Unmarshal(out, &findings); err != nil {
		t.Fatalf("spectral printed no report (%v)\nstderr:\n%s\nstdout:\n%s", runErr, errb, out)
	}
	var c lintCounts
	for _, f := range findings {
		switch f.Severity {
		case 0:
			c.errors++
			if len(c.firstErrors) < 10 {
				c.firstErrors = append(c.firstErrors, f.Code+" at "+strings.Join(f.Path, "/")+": "+f.Message)
			}
		case 1:
			c.warnings++
		}
	}
	if (runErr == nil) != (c.errors == 0) {
		t.Fatalf("spectral exit %v with %d errors\nstderr:\n%s", runErr, c.errors, errb)
	}
	return c
}

// The served document has no error under Redocly's recommended ruleset
// and Spectral's OpenAPI ruleset (two linters nobody here wrote), and
// both bite on a broken one: a path parameter no operation declares.
// .ci/run prints the warning counts this test logs.
func TestTheServedOpenAPIDocumentHasNoRedoclyOrSpectralErrors(t *testing.T) {
	node := needTools(t, "@redocly/cli", "@stoplight/spectral-cli")
	dir := t.TempDir()
	path, raw := servedDocument(t, newAPI(t), dir)
	var broken map[string]any
	if err := json.Unmarshal(raw, &broken); err != nil {
		t.Fatal(err)
	}
	paths := broken["paths"].(map[string]any)
	paths["/v1/health/{probe}"] = paths["/v1/health"]
	delete(paths, "/v1/health")
	brokenDir := t.TempDir()
	brokenRaw, _ := json.Marshal(broken)
	brokenPath := filepath.Join(brokenDir, "openapi.json")
	if err := os.WriteFile(brokenPath, brokenRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, linter := range []struct {
		name string
		run  func(*testing.T, string, string) lintCounts
	}{
		{"redocly (recommended)", redocly},
		{"spectral (spectral:oas)", spectral},
	} {
		c := linter.run(t, node, path)
		if c.errors != 0 {
			t.Errorf("%s: %d errors in the served document:\n%s", linter.name, c.errors, strings.Join(c.firstErrors, "\n"))
		}
		t.Logf("openapi lint: %s: %d errors, %d warnings (%d bytes)", linter.name, c.errors, c.warnings, len(raw))
		if b := linter.run(t, node, brokenPath); b.errors == 0 {
			t.Errorf("%s found no error in a document with an undeclared path parameter", linter.name)
		}
	}
}

// A TypeScript client generated from the served document (openapi-typescript
// and openapi-fetch, pinned in testdata/openapilint's lockfile) reads
// GET /v1/tools' data.tools[0].name, a whole lifecycle and the webhook
// payloads without a cast under tsc --strict (testdata/openapilint/client.ts);
// reading a field the document does not have, or comparing data.code
// with a code the enum does not have, fails to compile. Then the same
// client runs against the server.
func TestATypeScriptClientGeneratedFromTheServedDocumentTypechecks(t *testing.T) {
	node := needTools(t, "openapi-typescript", "openapi-fetch", "typescript")
	a := newAPI(t)
	dir := t.TempDir()
	path, _ := servedDocument(t, a, dir)
	if out, errb, err := runTool(t, node, dir, "openapi-typescript", path, "--output", filepath.Join(dir, "api.d.ts")); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s\n%s", err, out, errb)
	}
	client, err := os.ReadFile(filepath.Join(lintDir, "client.ts"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := `import createClient from "openapi-fetch";
import type { paths } from "./api";
export async function wrong(baseUrl: string): Promise<void> {
  const res = await createClient<paths>({ baseUrl }).GET("/v1/tools");
  if (res.error) {
    if (res.error.data.code === "no-such-code") return;
    return;
  }
  const n: number = res.data.data.tools[0].name;
  console.log(n, res.data.data.tools[0].nmae);
}
`
	modules, err := filepath.Abs(filepath.Join(lintDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"client.ts": client, "wrong.ts": []byte(wrong), "package.json": []byte(`{"type":"module"}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	out, errb, err := runTool(t, node, dir, "tsc", "--strict", "--noEmit", "--target", "es2022", "--module", "esnext",
		"--moduleResolution", "bundler", "--lib", "es2022,dom", "--pretty", "false", "client.ts", "wrong.ts")
	if err == nil {
		t.Fatal("tsc accepted wrong.ts: the generated types do not bite")
	}
	var clientErrs []string
	wrongErrs := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "client.ts"):
			clientErrs = append(clientErrs, line)
		case strings.HasPrefix(line, "wrong.ts"):
			for _, code := range []string{"TS2367", "TS2322", "TS2339"} {
				if strings.Contains(line, "error "+code) {
					wrongErrs[code] = true
				}
			}
		}
	}
	if len(clientErrs) > 0 {
		t.Fatalf("client.ts does not typecheck against the served document:\n%s", strings.Join(clientErrs, "\n"))
	}
	// An unknown code (TS2367), a name read as a number (TS2322), a
	// misspelt field (TS2339).
	if len(wrongErrs) != 3 {
		t.Fatalf("tsc found %v in wrong.ts, want TS2367, TS2322 and TS2339\n%s\n%s", wrongErrs, out, errb)
	}

	run, err := filepath.Abs(filepath.Join(lintDir, "run.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, node, run, dir, a.srv.URL, a.tokens["harness"])
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("the client's lifecycle failed: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var seen []string
	if err := json.Unmarshal(stdout.Bytes(), &seen); err != nil {
		t.Fatalf("the lifecycle printed %q: %v", stdout.String(), err)
	}
	first := tools.All()[0].Name
	if len(seen) != 7 || seen[0] != "up true" || !strings.HasPrefix(seen[1], first+" (") || !strings.HasPrefix(seen[2], "claim:") ||
		!strings.HasPrefix(seen[5], "assume spawn:") || seen[6] != "held 202" {
		t.Fatalf("the client's lifecycle saw %q", seen)
	}
	t.Logf("the typed client's lifecycle: %q", seen)
}
