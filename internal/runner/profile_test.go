package runner_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/runner"
	"github.com/dont-cli/dont/internal/spawn"
)

var ledgerClaim = ledger.Entity{ID: "claim:01KB0000000000000000000001", Kind: ledger.KindClaim, Statement: "water boils at 100 C at sea level", Status: ledger.Unverified}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// request is a spawn request as assume issues it (fixed ids and times).
func request() spawn.Request {
	sp := spawn.Spawn{ID: "spawn:01KB0000000000000000000000", Kind: spawn.Assume, EntityID: "claim:01KB0000000000000000000001",
		State: spawn.Pending, Mode: spawn.ModeHarness, IssuedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		ExpiresAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	req := spawn.NewRequest(sp, &ledgerClaim)
	req.Callback.Token = "dontcb_spawn:01KB0000000000000000000000_c2lnbmF0dXJl"
	return req
}

// golden renders what a profile runs: argv one element a line (quoted),
// then the stdin.
func golden(r runner.Rendered) string {
	var b strings.Builder
	b.WriteString("# argv\n")
	for _, a := range r.Argv {
		b.WriteString(strconv.Quote(a) + "\n")
	}
	b.WriteString("# stdin\n" + r.Stdin)
	return b.String()
}

func TestTheBuiltInProfilesRenderTheirDocumentedCommandLines(t *testing.T) {
	generic := runner.Profile{Name: "custom", Command: []string{"my-agent", "--request", "{{.RequestID}}", "--tools", "{{join .Tools \",\"}}", "--until", "{{.ExpiresAt.Format \"2006-01-02T15:04:05Z07:00\"}}"}}.
		Merge(runner.Builtin["generic"])
	promptArg := runner.Profile{Name: "prompt-arg", Command: []string{"agent", "--", "{{.Prompt}}"}, Prompt: runner.PromptArg}.Merge(runner.Builtin["generic"])
	for name, p := range map[string]runner.Profile{
		"claude-code": runner.Builtin["claude-code"], "codex": runner.Builtin["codex"], "generic": generic, "generic-prompt-arg": promptArg,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := p.Render(request(), "http://127.0.0.1:8787")
			if err != nil {
				t.Fatal(err)
			}
			got := golden(r)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/runner/ -run Profiles -update)", err)
			}
			if got != string(want) {
				t.Fatalf("%s renders\n%s\nwant (testdata/%s.golden)\n%s", name, got, name, want)
			}
			if strings.Contains(strings.Join(r.Argv, " "), "dontcb_") {
				t.Fatal("the callback token is on the command line, where ps shows it; it belongs in DONT_TOKEN")
			}
		})
	}
}

func TestAProfileWithoutACommandOrWithABadTemplateIsRefused(t *testing.T) {
	for name, p := range map[string]runner.Profile{
		"no command":    runner.Builtin["generic"],
		"bad prompt":    {Name: "x", Command: []string{"a"}, Prompt: "file"},
		"bad template":  {Name: "x", Command: []string{"a", "{{.Nope"}, Prompt: runner.PromptStdin},
		"unknown field": {Name: "x", Command: []string{"a", "{{.Secret}}"}, Prompt: runner.PromptStdin},
	} {
		if _, err := p.Render(request(), "http://127.0.0.1:1"); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestAPromptTemplateCanNameTheProjectFolder(t *testing.T) {
	p := runner.Profile{Name: "reader", Command: []string{"agent"}, Prompt: runner.PromptStdin,
		PromptTemplate: "{{.Prompt}}\nThe project's files are under {{.ProjectDir}}; change nothing."}
	r, err := p.RenderIn(request(), "http://127.0.0.1:1", "/src/project")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Stdin, "\nThe project's files are under /src/project; change nothing.") {
		t.Fatalf("prompt %q", r.Stdin)
	}
}
