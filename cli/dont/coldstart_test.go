package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dont-cli/dont/cli/dont/cmdline"
	"github.com/dont-cli/dont/internal/tools"
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
