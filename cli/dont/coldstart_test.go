package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dont-cli/dont/cli/dont/cmdline"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The WAL is persistent (internal/store/sqlite, open.go): a CLI run neither
// deletes the -wal and -shm files beside the database nor makes them
// again, the last close leaves the -wal empty after its checkpoint, and
// what one run wrote the next one reads. A hard link to each file pins
// its inode, so a file deleted and made again cannot pass for the same.
func TestASecondShowLeavesTheWALFilesInPlace(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	p.ok("show", id)
	db := filepath.Join(p.dir, ".dont", "dont.db")
	pins := map[string]os.FileInfo{}
	for _, side := range []string{"-wal", "-shm"} {
		pin := filepath.Join(t.TempDir(), "pin"+side)
		if err := os.Link(db+side, pin); err != nil {
			t.Fatalf("%s after a show: %v", side, err)
		}
		fi, err := os.Stat(pin)
		if err != nil {
			t.Fatal(err)
		}
		pins[side] = fi
	}
	if r := p.ok("show", id); r.str("id") != id {
		t.Fatalf("second show read %q, want %s", r.str("id"), id)
	}
	other := p.ok("conclude", "ice melts at 0 C").str("id")
	if r := p.ok("show", other); r.str("statement") != "ice melts at 0 C" {
		t.Fatalf("a later run does not read the write: %v", r.data())
	}
	for side, pinned := range pins {
		fi, err := os.Stat(db + side)
		if err != nil {
			t.Fatalf("%s is gone after the second show: %v", side, err)
		}
		if !os.SameFile(fi, pinned) {
			t.Errorf("%s was deleted and made again", side)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", side, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(db + "-wal"); fi.Size() != 0 {
		t.Errorf("-wal holds %d bytes after the last close, want it truncated after the checkpoint", fi.Size())
	}
	// newProject's cleanup ends with doctor --strict.
}

// DONT_DEBUG_ADDR still serves what the soak reads — the goroutine count —
// and the CPU and heap profiles, without net/http/pprof linked.
func TestTheDebugListenerServesTheGoroutineCountAndProfiles(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.cmd("serve", "--addr", "127.0.0.1:0")
	c.Env = append(c.Env, "DONT_DEBUG_ADDR=127.0.0.1:0")
	errPipe, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	var url string
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		var l struct{ Debug string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Debug != "" {
			url = l.Debug
			break
		}
	}
	go func() { // drain the log so the server never blocks on it
		for sc.Scan() {
		}
	}()
	if url == "" {
		t.Fatal("serve printed no debug address")
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("goroutine?debug=1"); code != 200 || !strings.HasPrefix(body, "goroutine profile: total ") {
		t.Errorf("goroutine?debug=1: %d %.80q", code, body)
	}
	if code, body := get(""); code != 200 || !strings.Contains(body, "heap") || !strings.Contains(body, "profile") {
		t.Errorf("index: %d %q", code, body)
	}
	if code, body := get("heap"); code != 200 || len(body) == 0 {
		t.Errorf("heap: %d, %d bytes", code, len(body))
	}
	if code, body := get("profile?seconds=1"); code != 200 || len(body) == 0 {
		t.Errorf("profile: %d, %d bytes", code, len(body))
	}
	if code, _ := get("no-such-profile"); code != 404 {
		t.Errorf("an unknown profile: %d, want 404", code)
	}
}

// A run builds only the command it invokes (cmdline.InvokedTool, buildFor): for
// every tool, `dont <tool> --help` and a call with a bad flag print
// exactly what they print from the whole command tree.
func TestTheInvokedCommandAloneBehavesAsInTheWholeTree(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	for _, tool := range tools.All() {
		words := strings.Split(tool.Name, ".")
		for _, args := range [][]string{
			append(append([]string{}, words...), "--help"),
			append([]string{"--json"}, append(append([]string{}, words...), "--no-such-flag")...),
		} {
			if got := cmdline.InvokedTool(args); got != tool.Name && !cmdline.HasSubTools(tool.Name) {
				t.Errorf("cmdline.InvokedTool(%q) = %q, want %s: the run would build every command", args, got, tool.Name)
			}
			var lazyOut, lazyErr, fullOut, fullErr bytes.Buffer
			code := newApp(strings.NewReader(""), &lazyOut, &lazyErr, getenv).run(context.Background(), args)

			full := newApp(strings.NewReader(""), &fullOut, &fullErr, getenv)
			root := full.rootCommand()
			root.SetArgs(args)
			if err := root.ExecuteContext(context.Background()); err != nil {
				full.fail(full.usageError(err, args))
			}
			if code != full.exit || withoutRequestIDs(lazyOut.String()) != withoutRequestIDs(fullOut.String()) || lazyErr.String() != fullErr.String() {
				t.Errorf("dont %s: exit %d\n%s%s\nthe whole tree: exit %d\n%s%s", strings.Join(args, " "),
					code, lazyOut.String(), lazyErr.String(), full.exit, fullOut.String(), fullErr.String())
			}
		}
	}
}

var requestIDs = regexp.MustCompile(`"(request_id|duration_ms)":("[^"]*"|\d+)`)

func withoutRequestIDs(s string) string { return requestIDs.ReplaceAllString(s, "") }

// The main goroutine's stack is grown once, before the other packages
// initialise (internal/mainstack): its package must be initialised
// before the first one whose initialisation calls deep (the SQLite
// driver's C runtime, the JSON Schema library, the MCP SDK's gob) and
// before main's.
func TestTheMainStackIsGrownBeforeThePackagesThatCallDeepInitialise(t *testing.T) {
	for _, c := range []struct {
		bin  string
		deep []string
	}{
		{binary, []string{"modernc.org/libc", "github.com/google/jsonschema-go/jsonschema", "encoding/gob", "main"}},
	} {
		cmd := exec.Command(c.bin, "--help")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var trace bytes.Buffer
		cmd.Stderr = &trace
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		order := map[string]int{}
		for i, line := range strings.Split(trace.String(), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
				order[f[1]] = i
			}
		}
		first, ok := order["github.com/dont-cli/dont/internal/mainstack"]
		if !ok {
			t.Fatalf("%s: internal/mainstack is not initialised:\n%s", c.bin, trace.String())
		}
		for _, later := range c.deep {
			if at, ok := order[later]; !ok || at < first {
				t.Errorf("%s: %s initialised before internal/mainstack (lines %d, %d; not at all: %v)", c.bin, later, at, first, !ok)
			}
		}
	}
}

// A statement given on the command line that is not valid UTF-8 is kept as
// a JSON transport keeps it (each bad byte U+FFFD), so `show` and `show
// --history` read it back as the same bytes.
func TestArgvThatIsNotUTF8IsKeptAsAJSONTransportKeepsIt(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.ok("conclude", "bad \xff byte", "--atom", "a\xfe")
	id := r.str("id")
	if want := "bad \uFFFD byte"; r.str("statement") != want {
		t.Fatalf("conclude answered %q, want %q", r.str("statement"), want)
	}
	stmt := func(out string) string {
		i := strings.Index(out, `"statement":`)
		if i < 0 {
			t.Fatalf("no statement in %s", out)
		}
		return out[i : i+strings.Index(out[i:], ",")]
	}
	shown, history := p.ok("show", id), p.ok("show", id, "--history")
	if stmt(shown.stdout) != stmt(history.stdout) {
		t.Errorf("show wrote %s, show --history %s", stmt(shown.stdout), stmt(history.stdout))
	}
	if strings.Contains(shown.stdout, `\ufffd`) {
		t.Errorf("show escaped the replacement character, as encoding/json does for a byte that is not UTF-8: %s", stmt(shown.stdout))
	}
}

// A one-shot command runs on one P (internal/oneproc: fewer threads and
// page faults at start), and the commands that serve many callers at once
// — serve, mcp, spawns run — on the runtime's default, every CPU. The
// test build says how many Ps a process runs on when it opens the store.
func TestAOneShotCommandRunsOnOnePAndTheServingCommandsOnEveryCPU(t *testing.T) {
	p := newProject(t)
	report := "DONT_FAULT_REPORT_GOMAXPROCS=1"
	said := regexp.MustCompile(`fault-injection: GOMAXPROCS=\d+`)
	procs := func(stderr string) []string { return said.FindAllString(stderr, -1) }
	one := []string{"fault-injection: GOMAXPROCS=1"}
	every := "fault-injection: GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0)) // TestMain restored this binary's
	if r := p.runEnv([]string{report}, "list"); !slices.Equal(procs(r.stderr), one) {
		t.Errorf("dont list: %q, want %q", procs(r.stderr), one)
	}
	if r := p.runEnv([]string{report, "GOMAXPROCS=3"}, "list"); !slices.Equal(procs(r.stderr), []string{"fault-injection: GOMAXPROCS=3"}) {
		t.Errorf("dont list with GOMAXPROCS=3: %q, want the user's 3", procs(r.stderr))
	}

	// serve opens the store before it says where it listens.
	c := p.cmd("serve", "--addr", "127.0.0.1:0")
	c.Env = append(c.Env, report)
	var serveErr bytes.Buffer
	c.Stderr = &serveErr
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("serve printed no address: %v", err)
	}
	c.Process.Signal(syscall.SIGTERM)
	c.Wait()
	if got := procs(serveErr.String()); len(got) == 0 || got[0] != every {
		t.Errorf("dont serve: %q, want %q", got, every)
	}

	// mcp opens the store for each tool call.
	var mcpErr bytes.Buffer
	mc := p.cmd("mcp")
	mc.Env = append(mc.Env, report)
	mc.Stderr = &mcpErr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "dont-test", Version: "v0"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: mc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if got := procs(mcpErr.String()); len(got) == 0 || got[0] != every {
		t.Errorf("dont mcp: %q, want %q", got, every)
	}

	// spawns run opens the store for its loopback server, then runs the agent.
	rp, b := runnerBackends(t, "1h")["embedded"](t)
	_, _, req := rp.assumeJSON(t, b)
	env := []string{report, "DONT_BIN=" + binary, "AGENT_MODE=ok", "AGENT_LOG=" + filepath.Join(t.TempDir(), "agent.log")}
	if r := rp.runIn(t, env, bytes.NewReader(req), "spawns", "run", "--agent", "script"); r.exit != 0 || len(procs(r.stderr)) == 0 || procs(r.stderr)[0] != every {
		t.Errorf("dont spawns run: exit %d, %q, want %q\n%s", r.exit, procs(r.stderr), every, r.stderr)
	}
}
