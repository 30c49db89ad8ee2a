package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/gobuild"
	"github.com/dont-cli/dont/internal/oneproc"
)

// binary is the dont the tests drive, built as README.md installs it.
var binary string

// builtBinary is dont built without cgo as README.md builds it, with the
// extra tags; Go keeps it in its build cache (internal/gobuild), so a run
// of the tests links it only when its sources changed.
func builtBinary(tags ...string) (string, error) {
	args := []string{"."}
	if len(tags) > 0 {
		args = []string{"-tags", strings.Join(tags, ","), "."}
	}
	return gobuild.Executable(".", []string{"CGO_ENABLED=0"}, args...)
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dont-cli-test")
	if err != nil {
		panic(err)
	}
	// A test build: DONT_FAULT_COMMIT_DELAY holds write transactions open
	// (faulthooks.go, and the package comment).
	if binary, err = builtBinary("faulthooks"); err != nil {
		panic(err.Error())
	}
	if err := initFreshProject(filepath.Join(dir, "fresh")); err != nil {
		panic(err.Error())
	}
	// This test binary is package main, so internal/oneproc put it on one
	// P; it runs tests in parallel, so it takes every CPU back.
	oneproc.Restore()
	// The parallel tests mostly wait (on the binaries they run, on
	// deadlines and terminals), so they run four per CPU.
	// The flag's default is GOMAXPROCS; a -parallel given on the command
	// line still wins.
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	env    map[string]any
	stdout string
	stderr string
	exit   int
}

func (r result) data() map[string]any { d, _ := r.env["data"].(map[string]any); return d }
func (r result) str(k string) string  { s, _ := r.data()[k].(string); return s }

// testProject is a fresh project folder driven through the real binary.
type testProject struct {
	t   *testing.T
	dir string
	env []string
	// corrupted: the test broke the store on purpose; skip the closing doctor.
	corrupted bool
	// passphraseMu: setPassphrase writes the person's record once.
	passphraseMu sync.Mutex
}

// freshProject is the folder where TestMain ran dont init once. A fresh
// project's files are the same bytes in any folder (the default
// config.toml and an empty store: TestAFreshProjectIsTheSameBytesInAnyFolder),
// so newProject copies them instead of running init again, which costs
// each test a process, its fsyncs and a quarter of a second.
var freshProject string

// initFreshProject runs dont init in dir, as newProject did for every test.
func initFreshProject(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	p := &testProject{dir: dir}
	c := p.cmd("init")
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("dont init: %v\n%s", err, out)
	}
	freshProject = dir
	return nil
}

// copyFreshProject gives dir the .dont/ folder dont init made in
// freshProject, file by file with the same modes.
func copyFreshProject(t *testing.T, dir string) {
	t.Helper()
	from, to := filepath.Join(freshProject, ".dont"), filepath.Join(dir, ".dont")
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(to, 0o700); err != nil {
		t.Fatal(err)
	}
	copyMode(t, from, to)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		copyMode(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}

// copyMode gives to from's permission bits, whatever the umask.
func copyMode(t *testing.T, from, to string) {
	t.Helper()
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func newProject(t *testing.T, env ...string) *testProject {
	p := &testProject{t: t, dir: t.TempDir(), env: env}
	// What dont init makes (freshProject).
	copyFreshProject(t, p.dir)
	t.Cleanup(func() { // every test ends with the invariant checker
		if !p.corrupted {
			p.requireInvariants()
		}
	})
	return p
}

func (p *testProject) cmd(args ...string) *exec.Cmd {
	c := exec.Command(binary, args...)
	c.Dir = p.dir
	c.Env = append(os.Environ(), "DONT_HARNESS=", "DONT_PROJECT_DIR=", "DONT_REQUEST_ID=", "DONT_SPAWN_TIMEOUT=",
		"DONT_LLM_PROVIDER=", "DONT_LLM_MODEL=", "DONT_LLM_BASE_URL=", "DONT_LLM_API_KEY=", "DONT_LLM_REGION=", "NO_COLOR=", "COLUMNS=",
		"XDG_CACHE_HOME="+filepath.Join(p.dir, ".cache"), // the tool schema cache stays in the test's folder
		"DONT_TEST_PERSON_HOME="+p.personHome(),          // the person's own files, outside the workspace (passphrase.go)
		// Passphrase records at the least cost a record may carry, not a
		// fifth of a CPU second per proof (faulthooks.go); the test of the
		// record's cost clears it.
		"DONT_FAULT_PASSPHRASE_COST=least")
	c.Env = append(c.Env, p.env...)
	// Its own session, so no test inherits the terminal go test runs in:
	// a person's answer is read from a controlling terminal, which only
	// the tests that type one give (typedAtTerminal).
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return c
}

func (p *testProject) run(args ...string) result { return p.runEnv(nil, args...) }

func (p *testProject) runEnv(env []string, args ...string) result {
	p.t.Helper()
	return p.runIn(p.t, env, nil, args...)
}

// runIn runs the binary in the project with extra env and stdin (nil: none),
// failing t if it cannot run or prints anything but one JSON envelope.
func (p *testProject) runIn(t *testing.T, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	return p.runCmd(t, p.cmd(args...), env, stdin)
}

// runCmd is runIn for a command already built (and perhaps given a terminal).
func (p *testProject) runCmd(t *testing.T, c *exec.Cmd, env []string, stdin io.Reader) result {
	t.Helper()
	c.Env = append(c.Env, env...)
	c.Stdin = stdin
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &r.env); err != nil {
			t.Fatalf("stdout is not one JSON envelope: %q", out.String())
		}
	}
	return r
}

func (p *testProject) ok(args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.exit != 0 || r.env["ok"] != true {
		p.t.Fatalf("dont %s: exit %d\n%s%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	}
	return r
}

func warnings(r result) []string {
	var out []string
	ws, _ := r.env["warnings"].([]any)
	for _, w := range ws {
		out = append(out, w.(map[string]any)["code"].(string))
	}
	return out
}

func TestDirectCLIHarnessConsumesStdoutEnvelope(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level", "--json").str("id")
	spawnReq := p.ok("assume", id, "--json")
	if spawnReq.env["envelope_kind"] != "spawn_request" {
		t.Fatalf("envelope_kind = %v", spawnReq.env["envelope_kind"])
	}
	rid := spawnReq.str("request_id")
	ctx := spawnReq.data()["context"].(map[string]any)
	if ctx["clean"] != true || ctx["prompt"] == "" || fmt.Sprint(ctx["allowed_tools"]) != "[show dismiss trust]" {
		t.Fatalf("context = %v", ctx)
	}
	r := p.ok("dismiss", id, "--evidence", "https://example.org/boiling", "--request-id", rid, "--json")
	if r.str("status") != "verified" || r.data()["resolution"].(map[string]any)["outcome"] != "callback-applied" {
		t.Fatalf("callback: %s", r.stdout)
	}
	all := p.ok("spawns", "--all", "--json")
	if all.data()["count"] != 1.0 {
		t.Fatalf("spawns --all: %s", all.stdout)
	}
}

func TestPipedStdoutImpliesHarnessMode(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := p.ok("overlook", id) // no --json, stdout is a pipe
	if r.env["envelope_kind"] != "spawn_request" || r.env["meta"].(map[string]any)["mode"] != "harness" {
		t.Fatalf("piped overlook: %s", r.stdout)
	}
}

func TestDirectFlagOverridesEnvironment(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "assume", id, "--direct", "--json")
	if r.exit != 3 || r.data()["code"] != "config-missing" {
		t.Fatalf("--direct with DONT_HARNESS=1: exit %d %s", r.exit, r.stdout)
	}
	if p.ok("spawns", "--all").data()["count"] != 0.0 {
		t.Fatal("a refused direct call stored a spawn")
	}
}

func TestCommandsOutsideAProjectRefuse(t *testing.T) {
	t.Parallel()
	p := &testProject{t: t, dir: t.TempDir()}
	r := p.run("list", "--json")
	if r.exit != 3 || r.data()["code"] != "not-initialised" {
		t.Fatalf("outside a project: exit %d %s", r.exit, r.stdout)
	}
	rem := r.data()["remediation"].([]any)
	if len(rem) == 0 || rem[0].(map[string]any)["command"] != "dont init" {
		t.Fatalf("remediation = %v", rem)
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".dont")); err == nil {
		t.Fatal("a refused command created .dont/")
	}
}

func TestProjectDirFromEnvironment(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	elsewhere := &testProject{t: t, dir: t.TempDir(), env: []string{"DONT_PROJECT_DIR=" + p.dir}}
	id := elsewhere.ok("conclude", "remote folder claim").str("id")
	if p.ok("show", id).str("id") != id {
		t.Fatal("DONT_PROJECT_DIR did not select the project")
	}
}

func TestBadInputGetsUsageErrorAndChangesNothing(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	for _, args := range [][]string{
		{"conclude"},
		{"conclude", "x", "--no-such-flag"},
		{"trust", id},
		{"trust", id, "--reason", ""},
		{"trust", id, "--reason", "seems off, maybe wrong"},
		{"dismiss", id, "--evidence", "not a uri"},
		{"show", "claim:nope"},
		{"guess", "q?", "--n", "0"},
		{"list", "--status", "bogus"},
		{"spawns", "--pending", "--all"},
		{"lock", id, "--yes"},
	} {
		r := p.run(append(args, "--json")...)
		if r.exit == 0 || r.env["ok"] != false || r.env["envelope_kind"] != "error" {
			t.Fatalf("%v: exit %d %s", args, r.exit, r.stdout)
		}
		if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
			t.Fatalf("%v: empty remediation: %s", args, r.stdout)
		}
	}
	hist := p.ok("show", id, "--history").data()["history"].([]any)
	if len(hist) != 1 || p.ok("show", id).str("status") != "unverified" {
		t.Fatalf("bad input changed state: %d events", len(hist))
	}
	if r := p.run("conclude", "--json"); r.exit != 2 {
		t.Fatalf("usage error exit %d, want 2", r.exit)
	}
}

func TestRequestIDFromEnvironment(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	rid := p.ok("assume", id).str("request_id")
	r := p.runEnv([]string{"DONT_REQUEST_ID=" + rid}, "trust", id, "--reason", "at 1 atm it is 99.97 C per ITS-90")
	if r.exit != 0 || r.data()["resolution"].(map[string]any)["request_id"] != rid {
		t.Fatalf("DONT_REQUEST_ID ignored: %s", r.stdout)
	}
}

func TestUnknownRequestIDExitsThree(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := p.run("dismiss", id, "--evidence", "doi:10.1000/182", "--request-id", "spawn:01HX05A9K8VP0000000000000A")
	if r.exit != 3 || r.data()["code"] != "spawn-not-found" {
		t.Fatalf("exit %d %s", r.exit, r.stdout)
	}
}

func TestSpawnTimeoutFromEnvironmentAndNextInvocationSweeps(t *testing.T) {
	t.Parallel()
	p := newProject(t, "DONT_SPAWN_TIMEOUT=1ms")
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	p.ok("dismiss", id, "--evidence", "https://example.org/a")
	rid := p.ok("assume", id).str("request_id")
	r := p.ok("list")
	if hints := fmt.Sprint(r.env["hints"]); !strings.Contains(hints, rid+" timed out") {
		t.Fatalf("the next invocation did not sweep: hints %s", hints)
	}
	if st := p.ok("show", id).str("status"); st != "verified" {
		t.Fatalf("status %s, want verified restored", st)
	}
	to := p.ok("spawns", "--timed-out").data()
	if to["count"] != 1.0 {
		t.Fatalf("timed-out view: %v", to)
	}
	if bad := p.runEnv([]string{"DONT_SPAWN_TIMEOUT=soon"}, "assume", id); bad.exit != 3 || bad.data()["code"] != "config-invalid" {
		t.Fatalf("bad DONT_SPAWN_TIMEOUT: exit %d %s", bad.exit, bad.stdout)
	}
}

// Many separate dont processes race on one SQLite file: callbacks against
// sweeps on an expired request. Exactly one resolver commits.
func TestManyProcessesTimeoutAndCallbackRaceYieldsOneResolver(t *testing.T) {
	p := newProject(t)
	for round := 0; round < 3; round++ {
		id := p.ok("conclude", fmt.Sprintf("claim %d", round)).str("id")
		p.ok("dismiss", id, "--evidence", "https://example.org/a")
		rid := p.runEnv([]string{"DONT_SPAWN_TIMEOUT=1ms"}, "assume", id).str("request_id")
		var wg sync.WaitGroup
		results := make([]result, 8)
		for i := range results {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if i%2 == 0 {
					results[i] = p.run("sweep")
				} else {
					results[i] = p.run("trust", id, "--reason", "ITS-90 gives 99.97 C", "--request-id", rid)
				}
			}(i)
		}
		wg.Wait()
		resolvers := 0
		for i, r := range results {
			if r.exit != 0 {
				t.Fatalf("process %d: exit %d %s %s", i, r.exit, r.stdout, r.stderr)
			}
			if i%2 == 0 {
				resolvers += len(r.data()["timed_out"].([]any))
			} else if r.data()["resolution"].(map[string]any)["applied"] == true {
				resolvers++
			} else if w := warnings(r); len(w) == 0 {
				t.Fatalf("a losing callback carried no warning: %s", r.stdout)
			}
		}
		if resolvers != 1 {
			t.Fatalf("round %d: %d resolvers committed", round, resolvers)
		}
		hist := p.ok("show", id, "--history").data()["history"].([]any)
		n := 0
		for _, h := range hist {
			if k := h.(map[string]any)["kind"]; k == "spawn_resolved" || k == "spawn_timeout" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d terminal events", round, n)
		}
	}
}

func TestManyProcessesConcurrentDuplicateCallbacksResolveOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	rid := p.ok("assume", id).str("request_id")
	var wg sync.WaitGroup
	results := make([]result, 6)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = p.run("dismiss", id, "--evidence", fmt.Sprintf("https://example.org/%d", i), "--request-id", rid)
		}(i)
	}
	wg.Wait()
	applied := 0
	for _, r := range results {
		if r.data()["resolution"].(map[string]any)["applied"] == true {
			applied++
		} else if fmt.Sprint(warnings(r)) != "[spawn-duplicate]" {
			t.Fatalf("loser warnings %v", warnings(r))
		}
	}
	if applied != 1 {
		t.Fatalf("%d callbacks applied", applied)
	}
}

func TestSignalMidCommandLeavesNoPartialWrite(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		exit int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			p := newProject(t)
			c := p.cmd("conclude", "never written")
			c.Env = append(c.Env, "DONT_FAULT_COMMIT_DELAY=20s")
			stderr, _ := c.StderrPipe()
			var out bytes.Buffer
			c.Stdout = &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(stderr).ReadString('\n')
			if !strings.Contains(line, "holding the write transaction open") {
				t.Fatalf("stderr: %q", line)
			}
			c.Process.Signal(tc.sig)
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.Process.Kill()
				t.Fatal("the command did not stop on the signal")
			}
			if c.ProcessState.ExitCode() != tc.exit {
				t.Fatalf("exit %d, want %d; stdout %s", c.ProcessState.ExitCode(), tc.exit, out.String())
			}
			var env map[string]any
			json.Unmarshal(out.Bytes(), &env)
			if d, _ := env["data"].(map[string]any); d["code"] != "interrupted" {
				t.Fatalf("envelope: %s", out.String())
			}
			if n := p.ok("list").data()["count"]; n != 0.0 {
				t.Fatalf("%v entities after an interrupted conclude", n)
			}
		})
	}
}

func TestSpawnTimeoutFromConfigFile(t *testing.T) {
	p := newProject(t)
	cfg := filepath.Join(p.dir, ".dont", "config.toml")
	if err := os.WriteFile(cfg, []byte("spawn_timeout = \"90m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	req := p.ok("assume", id)
	issued, _ := time.Parse(time.RFC3339Nano, req.str("issued_at"))
	expires, _ := time.Parse(time.RFC3339Nano, req.str("expires_at"))
	if expires.Sub(issued) != 90*time.Minute {
		t.Fatalf("expiry %s after issue, want the configured 90m", expires.Sub(issued))
	}
	os.WriteFile(cfg, []byte("spawn_timeout = \"never\"\n"), 0o644)
	if r := p.run("overlook", id); r.exit != 3 || r.data()["code"] != "config-invalid" {
		t.Fatalf("bad spawn_timeout: exit %d %s", r.exit, r.stdout)
	}
}

// newProject copies the .dont/ folder TestMain's dont init made
// (freshProject): that holds only while init writes the same files, bytes
// and modes, whatever the folder and whenever it runs.
func TestAFreshProjectIsTheSameBytesInAnyFolder(t *testing.T) {
	t.Parallel()
	p := &testProject{t: t, dir: t.TempDir()}
	if r := p.run("init"); r.exit != 0 {
		t.Fatalf("init: %s %s", r.stdout, r.stderr)
	}
	describe := func(dir string) map[string]string {
		files := map[string]string{}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			files[rel] = fi.Mode().String()
			if !d.IsDir() {
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				files[rel] += " " + string(raw)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	got, want := describe(filepath.Join(p.dir, ".dont")), describe(filepath.Join(freshProject, ".dont"))
	if len(got) != len(want) {
		t.Fatalf("init made %d files and folders here, %d in the fresh project", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Fatalf("%s differs from the fresh project's (mode, then bytes): a project's files depend on where or when init ran, so newProject cannot copy them", name)
		}
	}
	// The copy is what the tests get.
	q := newProject(t)
	if copied := describe(filepath.Join(q.dir, ".dont")); len(copied) != len(want) {
		t.Fatalf("the copy has %d files and folders, init made %d", len(copied), len(want))
	} else {
		for name, w := range want {
			if copied[name] != w {
				t.Fatalf("the copy's %s differs from init's", name)
			}
		}
	}
}
