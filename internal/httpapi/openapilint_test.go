package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
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

// lint runs swagger-parser (testdata/openapilint, its own Node project)
// on documents, in one process. Without node or the installed validator it fails under
// CI (.ci/run installs it) and skips elsewhere, naming the install command.
func lint(t *testing.T, docs ...any) []lintSummary {
	t.Helper()
	missing := func(why string) {
		msg := why + "; install the validator with: npm ci --prefix internal/httpapi/testdata/openapilint"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (.ci/run does this before the tests)")
		}
		t.Skip(msg + " (CI installs it and fails instead of skipping)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(lintDir, "node_modules", "@apidevtools", "swagger-parser", "package.json")); err != nil {
		missing(lintDir + "/node_modules has no @apidevtools/swagger-parser")
	}
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
