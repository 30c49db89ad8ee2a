package main

// The CLI conventions agents and shells rely on.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandPaths walks the real command tree: every visible command.
func commandPaths() [][]string {
	root := newApp(nil, nil, nil, func(string) string { return "" }).rootCommand()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	return out
}

func TestEveryCommandHasHelpEqualToDontHelp(t *testing.T) {
	t.Parallel()
	p := &testProject{t: t, dir: t.TempDir()} // help needs no project
	paths := commandPaths()
	if len(paths) < 20 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	// Every command's three forms run in this process (inProcess, the
	// same app the binary runs), about 240 processes fewer; the binary
	// runs the three forms of a few commands and must print the same.
	for i, path := range paths {
		name := "dont " + strings.Join(path, " ")
		run, binaryToo := p.inProcess, i%30 == 0
		if binaryToo {
			run = func(args ...string) rawResult { return p.raw(nil, args...) }
		}
		viaHelp := run(append([]string{"help"}, path...)...)
		if viaHelp.exit != 0 || viaHelp.stdout == "" || viaHelp.stderr != "" {
			t.Fatalf("%s via help: exit %d, stdout %q, stderr %q", name, viaHelp.exit, viaHelp.stdout, viaHelp.stderr)
		}
		if binaryToo {
			if ran := p.inProcess(append([]string{"help"}, path...)...); ran != viaHelp {
				t.Fatalf("%s in this process differs from the binary's:\n%s\n---\n%s", name, ran.stdout, viaHelp.stdout)
			}
		}
		for _, flag := range []string{"--help", "-h"} {
			r := run(append(append([]string{}, path...), flag)...)
			if r.exit != 0 || r.stderr != "" {
				t.Fatalf("%s %s: exit %d, stderr %q", name, flag, r.exit, r.stderr)
			}
			if r.stdout != viaHelp.stdout {
				t.Fatalf("%s %s differs from dont help:\n%s\n---\n%s", name, flag, r.stdout, viaHelp.stdout)
			}
		}
	}
}

// rawResult is a run whose stdout is not parsed.
type rawResult struct {
	stdout, stderr string
	exit           int
}

func (p *testProject) raw(stdin []byte, args ...string) rawResult {
	p.t.Helper()
	c := p.cmd(args...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := rawResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.exit = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return r
}

func TestCompletionsForEveryShell(t *testing.T) {
	t.Parallel()
	p := &testProject{t: t, dir: t.TempDir()}
	for shell, marker := range map[string]string{
		"bash":       "__start_dont",
		"zsh":        "#compdef dont",
		"fish":       "complete -c dont",
		"powershell": "Register-ArgumentCompleter",
	} {
		for _, name := range []string{"completion", "completions"} { // completions: its old name, kept
			r := p.raw(nil, name, shell)
			if r.exit != 0 || !strings.Contains(r.stdout, marker) {
				t.Fatalf("%s %s: exit %d, %d bytes, stderr %q", name, shell, r.exit, len(r.stdout), r.stderr)
			}
		}
	}
	if r := p.raw(nil, "completion", "tcsh", "--json"); r.exit != 2 || !strings.Contains(r.stdout, `"code":"usage"`) {
		t.Fatalf("completion tcsh: exit %d %s", r.exit, r.stdout)
	}
	if r := p.raw(nil, "--help"); !strings.Contains(r.stdout, "  completion ") || strings.Contains(r.stdout, "  completions ") {
		t.Fatalf("help lists the command as completion only: %s", r.stdout)
	}
	// The scripts call back into the binary; that works too.
	if r := p.raw(nil, "__complete", "as"); r.exit != 0 || !strings.Contains(r.stdout, "assume") {
		t.Fatalf("dynamic completion: exit %d %q", r.exit, r.stdout)
	}
}

// TAB after `dont show ` offers the project's ids (cobra's __complete is
// what the shell scripts run); a prefix narrows them; the flags with a
// fixed set of values offer those values.
func TestCompletionOfShowListsTheIDsOfTheProject(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	a := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	b := p.ok("conclude", "ice melts at 0 C").str("id")
	r := p.raw(nil, "__complete", "show", "")
	if r.exit != 0 || !strings.Contains(r.stdout, a+"\n") || !strings.Contains(r.stdout, b+"\n") {
		t.Fatalf("__complete show \"\": exit %d %q", r.exit, r.stdout)
	}
	if r := p.raw(nil, "__complete", "show", "term:"); strings.Contains(r.stdout, "claim:") {
		t.Fatalf("a prefix does not narrow the ids: %q", r.stdout)
	}
	for args, want := range map[string]string{
		"list --status ":        "verified",
		"tokens create --role ": "approver",
		"sessions open --tier ": "workspace-write",
	} {
		argv := append([]string{"__complete"}, strings.Fields(args)...)
		if strings.HasSuffix(args, " ") {
			argv = append(argv, "")
		}
		r := p.raw(nil, argv...)
		if r.exit != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, ":4") {
			t.Fatalf("__complete %s: exit %d %q", args, r.exit, r.stdout)
		}
	}
}

func TestStdinIDsPrintNDJSONAndExitWithTheWorstCode(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	a := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	b := p.ok("conclude", "ice melts at 0 C").str("id")
	missing := "claim:01HX05A9K8VP0000000000000A"

	ndjson := func(r rawResult) []map[string]any {
		t.Helper()
		var envs []map[string]any
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		for sc.Scan() {
			var env map[string]any
			if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
				t.Fatalf("not NDJSON: %q", r.stdout)
			}
			envs = append(envs, env)
		}
		return envs
	}

	ok := p.raw([]byte(a+"\n\n  "+b+"  \n"), "trust", "-", "--reason", "the 100 C figure needs 1 atm exactly")
	if envs := ndjson(ok); ok.exit != 0 || len(envs) != 2 || envs[0]["data"].(map[string]any)["id"] != a || envs[1]["data"].(map[string]any)["status"] != "doubted" {
		t.Fatalf("trust -: exit %d\n%s", ok.exit, ok.stdout)
	}

	mixed := p.raw([]byte(strings.Join([]string{a, "not-an-id", missing, b}, "\n")), "show", "-")
	envs := ndjson(mixed)
	if len(envs) != 4 {
		t.Fatalf("show -: %d envelopes\n%s", len(envs), mixed.stdout)
	}
	var codes []string
	for _, env := range envs {
		if env["ok"] == true {
			codes = append(codes, "ok")
		} else {
			codes = append(codes, env["data"].(map[string]any)["code"].(string))
		}
	}
	if strings.Join(codes, " ") != "ok invalid-id not-found ok" {
		t.Fatalf("per-id results %v", codes)
	}
	if mixed.exit != 3 { // worst of 0, 2 (invalid-id), 3 (not-found)
		t.Fatalf("exit %d, want 3", mixed.exit)
	}
	if r := p.raw([]byte(a+"\nclaim:bad\n"), "show", "-"); r.exit != 2 {
		t.Fatalf("exit %d, want 2 for one usage error among successes", r.exit)
	}
	if r := p.raw([]byte("\n\n"), "show", "-", "--json"); r.exit != 2 || !strings.Contains(r.stdout, "no ids on stdin") {
		t.Fatalf("no ids: exit %d %s", r.exit, r.stdout)
	}
}

func TestStdinIDsWorkAgainstTheRemoteAPI(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	a := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	c := p.cmd("show", "-")
	c.Env = append(c.Env, "DONT_ENDPOINT="+srv.endpoint, "DONT_TOKEN="+harness)
	c.Stdin = strings.NewReader(a + "\nclaim:01HX05A9K8VP0000000000000A\n")
	out, err := c.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || len(lines) != 2 {
		t.Fatalf("remote show -: %v\n%s", err, out)
	}
	if !strings.Contains(lines[0], `"ok":true`) || !strings.Contains(lines[1], `"code":"not-found"`) {
		t.Fatalf("remote NDJSON:\n%s", out)
	}
}

func TestSIGPIPEExitsZero(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// The listing must outgrow a pipe's buffer (64 KiB on Linux) for
	// `| head -c1` below to close the pipe under dont's write: 30 claims of
	// about 3 KB each, concluded in this process (seedClaims).
	words := strings.Repeat(" with enough words to make the listing long", 70)
	var statements []string
	for i := range 30 {
		statements = append(statements, fmt.Sprintf("claim number %d%s", i, words))
	}
	p.seedClaims(statements...)
	if out, err := p.cmd("list").Output(); err != nil || len(out) < 80<<10 {
		t.Fatalf("the listing is %d bytes (%v), not longer than a pipe's buffer", len(out), err)
	}
	// The reader is gone before dont writes a byte.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	c := p.cmd("list")
	c.Stdout = w
	err = c.Run()
	w.Close()
	if err != nil {
		t.Fatalf("dont list into a closed pipe: %v", err)
	}
	// And as a shell writes it.
	sh := exec.Command("bash", "-o", "pipefail", "-c", binary+" list | head -c1 >/dev/null")
	sh.Dir, sh.Env = p.dir, p.cmd().Env
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("dont list | head -c1: %v %s", err, out)
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.run("frobnicate", "--json")
	if r.exit != 2 || r.data()["code"] != "usage" {
		t.Fatalf("exit %d %s", r.exit, r.stdout)
	}
}

func TestColourOnlyOnATerminalWithoutNoColorOrPlain(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	p.ok("dismiss", id, "--evidence", "https://example.org/boiling")
	coloured := p.cmd("show", id)
	coloured.Env = append(coloured.Env, "TERM=xterm-256color")
	out, _, exit := onTerminal(t, coloured)
	if exit != 0 || !strings.Contains(out, "\x1b[32mverified\x1b[0m") {
		t.Fatalf("on a terminal: exit %d %q", exit, out)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{[]string{"NO_COLOR=1"}, nil},
		{nil, []string{"--plain"}},
		{[]string{"TERM=dumb"}, nil},
	} {
		c := p.cmd(append([]string{"show", id}, tc.args...)...)
		c.Env = append(c.Env, tc.env...)
		out, _, exit := onTerminal(t, c)
		if exit != 0 || strings.Contains(out, "\x1b") || !strings.Contains(out, id+"  verified\n") {
			t.Fatalf("%v %v: exit %d %q", tc.env, tc.args, exit, out)
		}
	}
	// Errors on a terminal are coloured on stderr only when stderr is one too.
	_, errOut, exit := onTerminal(t, p.cmd("show", "claim:nope"))
	if exit != 2 || strings.Contains(errOut, "\x1b") || !strings.HasPrefix(errOut, "error: invalid-id") {
		t.Fatalf("error with stderr not a terminal: exit %d %q", exit, errOut)
	}
}

func TestJSONLeavesStdoutWithNothingButTheEnvelope(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	for _, args := range [][]string{
		{"show", id, "--json"},
		{"list", "--json"},
		{"conclude", "x", "--json"}, // has hints
		{"show", "claim:nope", "--json"},
		{"trust", id, "--json"}, // usage error
		{"nosuch", "--json"},
		{"assume", id, "--json"}, // a terminal and no provider: direct mode, config-missing
	} {
		out, errOut, _ := onTerminal(t, p.cmd(args...))
		var env map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&env); err != nil || env["envelope_version"] != "1" {
			t.Fatalf("%v: stdout is not an envelope: %q", args, out)
		}
		if rest := strings.TrimSpace(out[dec.InputOffset():]); rest != "" || strings.Contains(out, "\x1b") {
			t.Fatalf("%v: stdout has more than the envelope: %q", args, out)
		}
		if errOut != "" {
			t.Fatalf("%v: --json printed on stderr too: %q", args, errOut)
		}
	}
}
