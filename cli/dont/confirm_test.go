package main

// The rows of both tables of client-side confirmation (docs/design.md §7.1,
// the gated actions, and §7.2, flags and exit codes), each run through the
// real binary twice: against the real API handler behind a counting
// middleware (remote mode) and on the embedded store (no server). Every row checks the exit code, stdout (empty on a
// decline), the exact stderr lines, and what reached the server / the store.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/client"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

// seenRequest is one request the counting middleware saw.
type seenRequest struct {
	method, path, caps string
	body               map[string]any
}

// countingServer is the real API handler on the project's SQLite file,
// behind a middleware that records every request.
type countingServer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	seen    []seenRequest
	handler atomic.Pointer[http.Handler]
	svc     *service.Service
}

func newCountingServer(t *testing.T, svc *service.Service, st *sqlite.Store, gateOn bool) *countingServer {
	cs := &countingServer{svc: svc}
	cs.setGate(st, gateOn)
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var parsed map[string]any
		_ = json.Unmarshal(body, &parsed)
		cs.mu.Lock()
		cs.seen = append(cs.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get(confirm.CapsHeader), parsed})
		cs.mu.Unlock()
		(*cs.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

// setGate swaps the handler for one with the server-side gate on or off,
// on the same URL (so the CLI's cache for this server stays in place).
func (cs *countingServer) setGate(st *sqlite.Store, on bool) {
	h := httpapi.New(httpapi.Options{Backend: httpapi.SingleProject{Project: httpapi.Project{Service: cs.svc, Idempotency: st}},
		RatePerSecond: -1, DisableInteractiveConfirm: !on})
	cs.handler.Store(&h)
}

func (cs *countingServer) reset() {
	cs.mu.Lock()
	cs.seen = nil
	cs.mu.Unlock()
}

func (cs *countingServer) requests(method string) []seenRequest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []seenRequest
	for _, r := range cs.seen {
		if method == "" || r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// gateEnv is one fresh project, driven by the binary in one mode.
type gateEnv struct {
	t      *testing.T
	mode   string // "remote" or "embedded"
	p      *testProject
	store  *sqlite.Store
	svc    *service.Service
	server *countingServer // remote only
	env    []string
	cache  string
	// Fixtures.
	claim, other, spawnID, tokenID string
	// unverified: a claim concluded and left as it is (no spawn).
	unverified string
}

func newGateEnv(t *testing.T, mode string, gateOn bool) *gateEnv {
	t.Helper()
	g := &gateEnv{t: t, mode: mode, p: newProject(t)}
	g.cache = filepath.Join(g.p.dir, ".cache")
	st, err := sqlite.Open(filepath.Join(g.p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g.store = st
	g.svc = service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "fixture", SpawnTimeout: time.Hour})
	ctx := context.Background()
	conclude := func(s string) string {
		res, err := g.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: s})
		if err != nil {
			t.Fatal(err)
		}
		id := res.ID
		if _, _, err := g.svc.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id, Evidence: []string{"https://example.org/bp"}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	g.claim, g.other = conclude("water boils at 100 C at sea level"), conclude("ice melts at 0 C")
	fresh, err := g.svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "salt water boils above 100 C"})
	if err != nil {
		t.Fatal(err)
	}
	g.unverified = fresh.ID
	if _, _, err := g.svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: g.other, Mode: spawn.ModeHarness}); err != nil {
		t.Fatal(err)
	}
	sps, _ := st.ListSpawns(ctx, store.SpawnFilter{})
	g.spawnID = sps[0].ID
	admin := g.token(auth.RoleAdmin)
	spare, _ := g.svc.Credentials.Create(ctx, auth.RoleHarness, "spare")
	g.tokenID = spare.ID
	if mode == "remote" {
		g.server = newCountingServer(t, g.svc, st, gateOn)
		g.env = []string{"DONT_ENDPOINT=" + g.server.srv.URL, "DONT_TOKEN=" + admin}
		g.warmSchemaCache()
		g.server.reset()
	} else {
		// Embedded, the CLI runs as the agent that asked for the
		// fixture's spawn: only it (or a person) may cancel it.
		g.env = []string{"DONT_AUTHOR=fixture"}
	}
	return g
}

// warmSchemaCache fills the schema cache as any earlier remote command
// would have: what app.toolSchema does on a miss (fetch without a token,
// cache under the project's XDG_CACHE_HOME), in this process, since as a
// `dont tools` per row it was 76 dont processes of a -short run. The
// binary's own fetch and cache are the subject of
// TestSchemaCacheIsKeyedByCapabilitiesAndLivesADay (from a cold cache) and
// the --refresh tests; a file named differently from the binary's would
// make every row fetch again and fail its request counts.
func (g *gateEnv) warmSchemaCache() {
	g.t.Helper()
	ep := g.server.srv.URL
	s, err := confirmclient.Fetch(context.Background(), &client.Client{Endpoint: ep, Header: capsHeader()})
	if err != nil || s.Source != "server" {
		g.t.Fatalf("fetch the tool schema: %v %+v", err, s)
	}
	s.Endpoint = ep
	file := filepath.Join(g.cache, "dont", filepath.Base(confirmclient.CacheFile(ep)))
	if confirmclient.WriteCache(file, s) == "" {
		g.t.Fatalf("write the schema cache %s", file)
	}
}

func (g *gateEnv) token(role string) string {
	res, err := g.svc.Credentials.Create(context.Background(), role, role)
	if err != nil {
		g.t.Fatal(err)
	}
	return res.Secret
}

// run runs the binary with stdin; stdout is returned raw.
func (g *gateEnv) run(stdin string, args ...string) result {
	g.t.Helper()
	if g.mode == "embedded" && slices.Contains(args, "tokens") {
		// Embedded, minting or revoking a token also needs the person's
		// approver passphrase, typed at the controlling terminal.
		g.p.setPassphrase()
		c := g.p.cmd(args...)
		typedAtTerminal(g.t, c, testPassphrase+"\n")
		return g.p.runCmd(g.t, c, g.env, strings.NewReader(stdin))
	}
	return g.p.runIn(g.t, g.env, strings.NewReader(stdin), args...)
}

// help runs `<args> --help` and returns everything it printed (help goes to stdout).
func (g *gateEnv) help(args ...string) (string, int) {
	g.t.Helper()
	c := g.p.cmd(append(args, "--help")...)
	c.Env = append(c.Env, g.env...)
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		g.t.Fatal(err)
	}
	return string(out), code
}

// snapshot summarises everything a call could write: events, tokens
// (and their revocations), held confirmations.
func (g *gateEnv) snapshot() string {
	ctx := context.Background()
	evs, err := g.store.AllEvents(ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	toks, _ := g.store.ListTokens(ctx)
	revoked := 0
	for _, t := range toks {
		if t.RevokedAt != nil {
			revoked++
		}
	}
	confs, _ := g.store.ListConfirmations(ctx)
	return fmt.Sprintf("events=%d tokens=%d revoked=%d held=%d", len(evs), len(toks), revoked, len(confs))
}

func stderrLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// gateRow is one row of a table of docs/design.md §7.1 or §7.2.
type gateRow struct {
	name string
	// build returns the command line, stdin and the exact stderr lines.
	build func(g *gateEnv) (argv []string, stdin string, stderr []string)
	exit  int
	// out: "" (stdout empty), "ok" (a success envelope) or an error code.
	out string
	// Remote: the number of POSTs, and what the one POST carried.
	posts     int
	confirmed bool
	skipSent  bool
	// writes: the store changed.
	writes bool
	// remoteOnly / embeddedExit: where the two modes legitimately differ.
	remoteOnly bool
}

func (row gateRow) check(t *testing.T, g *gateEnv) {
	t.Helper()
	argv, stdin, wantErr := row.build(g)
	before := g.snapshot()
	r := g.run(stdin, argv...)
	if r.exit != row.exit {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.exit, row.exit, r.stdout, r.stderr)
	}
	if got := stderrLines(r.stderr); strings.Join(got, "\n") != strings.Join(wantErr, "\n") {
		t.Fatalf("stderr:\n%q\nwant:\n%q", got, wantErr)
	}
	switch row.out {
	case "":
		if r.stdout != "" {
			t.Fatalf("stdout not clean: %q", r.stdout)
		}
	case "ok":
		if r.env["ok"] != true {
			t.Fatalf("stdout: %s", r.stdout)
		}
	default:
		if r.env["ok"] != false || r.data()["code"] != row.out {
			t.Fatalf("stdout: %s, want error %s", r.stdout, row.out)
		}
		if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
			t.Fatalf("no remediation: %s", r.stdout)
		}
	}
	if changed := g.snapshot() != before; changed != row.writes {
		t.Fatalf("store changed: %v (%s -> %s), want %v", changed, before, g.snapshot(), row.writes)
	}
	if g.mode != "remote" {
		return
	}
	if gets := g.server.requests(http.MethodGet); len(gets) != 0 {
		t.Fatalf("%d schema fetches with a warm cache", len(gets))
	}
	posts := g.server.requests(http.MethodPost)
	if len(posts) != row.posts {
		t.Fatalf("%d POSTs, want %d", len(posts), row.posts)
	}
	for _, p := range posts {
		if p.caps != confirm.CLICaps {
			t.Fatalf("request without the capability header: %q", p.caps)
		}
		if got := p.body["cli_confirmed"] == true; got != row.confirmed {
			t.Fatalf("cli_confirmed sent: %v, want %v (%v)", got, row.confirmed, p.body)
		}
		args, _ := p.body["args"].(map[string]any)
		_, s1 := args[confirm.SkipParam]
		_, s2 := args[confirm.AutoSkipParam]
		if (s1 || s2) != row.skipSent {
			t.Fatalf("skip parameter sent: %v, want %v (%v)", s1 || s2, row.skipSent, args)
		}
	}
}

func runRows(t *testing.T, rows []gateRow) {
	for _, mode := range []string{"remote", "embedded"} {
		t.Run(mode, func(t *testing.T) {
			for _, row := range rows {
				if row.remoteOnly && mode != "remote" {
					continue
				}
				t.Run(row.name, func(t *testing.T) {
					t.Parallel()
					row.check(t, newGateEnv(t, mode, true))
				})
			}
		})
	}
}

// Preview lines, in the tool's parameter order, values as JSON.
func pv(kv ...string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		b, _ := json.Marshal(kv[i+1])
		out = append(out, "  "+kv[i]+": "+string(b))
	}
	return out
}

func cat(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			out = append(out, x)
		case []string:
			out = append(out, x...)
		}
	}
	return out
}

func argsFile(t *testing.T, dir, body string) string {
	f := filepath.Join(dir, "args.json")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

const (
	lockPrompt = "About to execute dont lock. Proceed? [y/N] "
	aborted    = confirm.AbortedLine
	deprecated = confirm.DeprecatedLine
)

func TestFlagsAndExitCodesTable(t *testing.T) {
	t.Parallel()
	lock := func(stdin string, extra ...string) func(g *gateEnv) ([]string, string, []string) {
		return func(g *gateEnv) ([]string, string, []string) {
			return append([]string{"lock", g.claim, "--reason", "settled"}, extra...), stdin, nil
		}
	}
	withLines := func(f func(g *gateEnv) ([]string, string, []string), stderr func(g *gateEnv) []string) func(g *gateEnv) ([]string, string, []string) {
		return func(g *gateEnv) ([]string, string, []string) {
			argv, stdin, _ := f(g)
			return argv, stdin, stderr(g)
		}
	}
	asked := func(g *gateEnv) []string { return cat(pv("id", g.claim, "reason", "settled"), lockPrompt) }
	declined := func(g *gateEnv) []string { return cat(asked(g), aborted) }
	revokeAllWarning := "warning: dont tokens revoke-all is interactive-only: --yes and skip parameters do not skip its confirmation prompt."
	rows := []gateRow{
		// | Prompt answered y/yes | one server call, executes | tool result |
		{name: "prompt answered y", build: withLines(lock("y\n"), asked), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "prompt answered yes", build: withLines(lock("yes\n"), asked), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// | Prompt declined / EOF | no server call | 1 |
		{name: "prompt declined", build: withLines(lock("n\n"), declined), exit: 1},
		{name: "prompt answered with something else", build: withLines(lock("sure\n"), declined), exit: 1},
		{name: "EOF declines", build: withLines(lock(""), declined), exit: 1},
		// | --yes (or -y) on a normal action | no prompt, executes | tool result |
		{name: "--yes on a normal action", build: lock("", "--yes"), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "-y on a normal action", build: lock("", "-y"), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "--yes with a failing call gives the tool's result", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", g.unverified, "--yes"}, "", nil // not verified: invalid-transition
		}, exit: 1, out: "invalid-transition", posts: 1, confirmed: true},
		// | deprecated --skip_confirmation true / auto_skip_confirmation on a normal action |
		// no prompt, no cli_confirmed, forwarded verbatim; one [DEPRECATED] line | tool result |
		{name: "deprecated --skip_confirmation true", build: withLines(lock("", "--skip_confirmation", "true"), func(*gateEnv) []string { return []string{deprecated} }),
			exit: 0, out: "ok", posts: 1, skipSent: true, writes: true},
		{name: "deprecated --skip_confirmation without a value", build: withLines(lock("", "--skip_confirmation"), func(*gateEnv) []string { return []string{deprecated} }),
			exit: 0, out: "ok", posts: 1, skipSent: true, writes: true},
		{name: "deprecated --auto_skip_confirmation", build: withLines(lock("", "--auto_skip_confirmation"), func(*gateEnv) []string { return []string{deprecated} }),
			exit: 0, out: "ok", posts: 1, skipSent: true, writes: true},
		{name: "both deprecated flags print exactly one line", build: withLines(lock("", "--skip_confirmation=true", "--auto_skip_confirmation", "true"), func(*gateEnv) []string { return []string{deprecated} }),
			exit: 0, out: "ok", posts: 1, skipSent: true, writes: true},
		{name: "cron caller: skip_confirmation true through --args-file -", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "--args-file", "-"}, `{"id":"` + g.claim + `","skip_confirmation":true}`, []string{deprecated}
		}, exit: 0, out: "ok", posts: 1, skipSent: true, writes: true},
		{name: "falsy --skip_confirmation false prompts, no hint", build: withLines(lock("n\n", "--skip_confirmation", "false"), declined), exit: 1},
		{name: "falsy skip answered y sends cli_confirmed and no skip parameter", build: withLines(lock("y\n", "--skip_confirmation=false"), asked),
			exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "--yes beside a skip parameter: cli_confirmed, no hint", build: lock("", "--yes", "--skip_confirmation"), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// | --yes or a deprecated skip param on an interactive-only action | warning + prompt anyway; no deprecation hint | per answer |
		{name: "--yes on an interactive-only action, declined", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all", "--yes"}, "", []string{revokeAllWarning, "About to execute tokens revoke-all. Proceed? [y/N] ", aborted}
		}, exit: 1},
		{name: "--yes on an interactive-only action, answered y", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all", "-y"}, "y\n", []string{revokeAllWarning, "About to execute tokens revoke-all. Proceed? [y/N] "}
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "skip parameter on an interactive-only action: warning, prompt, no hint, not forwarded", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all", "--skip_confirmation"}, "y\n", []string{revokeAllWarning, "About to execute tokens revoke-all. Proceed? [y/N] "}
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "interactive-only without --yes prompts without a warning", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all"}, "no\n", []string{"About to execute tokens revoke-all. Proceed? [y/N] ", aborted}
		}, exit: 1},
		{name: "--no-input on an interactive-only action exits 2 even with --yes", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all", "--yes", "--no-input"}, "y\n", []string{revokeAllWarning}
		}, exit: 2, out: "confirmation-required"},
		// | --no-input without --yes on a gated action/value | error, no server call | 2 |
		{name: "--no-input without --yes", build: lock("y\n", "--no-input"), exit: 2, out: "confirmation-required"},
		{name: "--no-input on a gated value", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--op", "create", "--role", "harness", "--no-input"}, "", nil
		}, exit: 2, out: "confirmation-required"},
		{name: "--no-input with --yes executes", build: lock("", "--no-input", "--yes"), exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// | --args-file - (stdin consumed) without --yes on a gated action/value | error suggesting --yes, no server call | 2 |
		{name: "--args-file - without --yes", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "--args-file", "-"}, `{"id":"` + g.claim + `"}`, nil
		}, exit: 2, out: "confirmation-required"},
		{name: "--args-file - without --yes on a gated value", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", "-"}, `{"op":"revoke","id":"` + g.tokenID + `"}`, nil
		}, exit: 2, out: "confirmation-required"},
		{name: "--args-file - with --yes", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "--args-file", "-", "--yes"}, `{"id":"` + g.claim + `"}`, nil
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// Ids read from stdin ('-', the CLI convention) take stdin too.
		{name: "ids on stdin without --yes exits 2", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "-"}, g.claim + "\n", nil
		}, exit: 2, out: "confirmation-required"},
		{name: "ids on stdin with --yes", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "-", "--yes"}, g.claim + "\n", nil
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// | --args-file - with an exempt value | no prompt, no cli_confirmed, one server call | tool result |
		{name: "--args-file - with an exempt value", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", "-"}, `{"op":"list"}`, nil
		}, exit: 0, out: "ok", posts: 1},
		{name: "--args-file - with an exempt value and skip_confirmation: neither is sent, no hint", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage", "--args-file", "-"}, `{"op":"list","skip_confirmation":true}`, nil
		}, exit: 0, out: "ok", posts: 1},
		// | omitted argument whose annotation declares an exempt default | no prompt, no cli_confirmed, one server call | tool result |
		{name: "omitted --op with a declared exempt default", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage"}, "", nil
		}, exit: 0, out: "ok", posts: 1},
		// | exempt-looking value in another spelling, non-string, or omitted without a declared default | gated |
		{name: "another spelling (--op LIST) prompts", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--op", "LIST"}, "", cat(pv("op", "LIST"), "About to execute tokens manage. Proceed? [y/N] ", aborted)
		}, exit: 1},
		{name: "another spelling (surrounding space) with --no-input exits 2", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage", "--op", " list", "--no-input"}, "", nil
		}, exit: 2, out: "confirmation-required"},
		{name: "another spelling with --yes is sent confirmed (the server refuses the value)", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "-o", "List", "--yes"}, "", nil
		}, exit: 2, out: "usage", posts: 1, confirmed: true},
		{name: "non-string value in an args file prompts", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", argsFile(g.t, g.p.dir, `{"op":["list"]}`)}, "", cat("  op: [\"list\"]", "About to execute tokens manage. Proceed? [y/N] ", aborted)
		}, exit: 1},
		{name: "null value in --args-file - exits 2", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", "-"}, `{"op":null}`, nil
		}, exit: 2, out: "confirmation-required"},
		{name: "omitted --op without a declared default prompts", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage"}, "", []string{"About to execute spawns manage. Proceed? [y/N] ", aborted}
		}, exit: 1},
		// The exemption is matched on the final merged arguments.
		{name: "a flag wins over the args file: exempt", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", argsFile(g.t, g.p.dir, `{"op":"create","role":"admin"}`), "--op", "list"}, "", nil
		}, exit: 0, out: "ok", posts: 1},
		{name: "a flag wins over the args file: gated", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--args-file", argsFile(g.t, g.p.dir, `{"op":"list","role":"admin"}`), "-o", "create"}, "",
				cat(pv("op", "create", "role", "admin"), "About to execute tokens manage. Proceed? [y/N] ", aborted)
		}, exit: 1},
		{name: "an args file carries the positional argument", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", "--args-file", argsFile(g.t, g.p.dir, `{"id":"`+g.claim+`","reason":"from the file"}`)}, "y\n",
				cat(pv("id", g.claim, "reason", "from the file"), lockPrompt)
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// Deprecated skip parameters in args files: JSON booleans only.
		{name: `args file skip_confirmation "false" exits 1`, build: skipFile(`"false"`), exit: 1, out: "invalid-skip-confirmation"},
		{name: "args file skip_confirmation 1 exits 1", build: skipFile(`1`), exit: 1, out: "invalid-skip-confirmation"},
		{name: "args file skip_confirmation [] exits 1", build: skipFile(`[]`), exit: 1, out: "invalid-skip-confirmation"},
		{name: "args file skip_confirmation null exits 1", build: skipFile(`null`), exit: 1, out: "invalid-skip-confirmation"},
		{name: "args file auto_skip_confirmation false prompts", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "create", "--args-file", argsFile(g.t, g.p.dir, `{"role":"harness","auto_skip_confirmation":false}`)}, "",
				cat(pv("role", "harness"), "About to execute tokens create. Proceed? [y/N] ", aborted)
		}, exit: 1},
		// Non-gated tools refuse the skip parameters as unknown parameters.
		{name: "a non-gated tool refuses the skip flag", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"conclude", "x", "--skip_confirmation"}, "", nil
		}, exit: 2, out: "usage"},
		{name: "a non-gated tool refuses the skip key", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"conclude", "--args-file", "-"}, `{"statement":"x","skip_confirmation":true}`, nil
		}, exit: 2, out: "usage", posts: 1, skipSent: true},
	}
	runRows(t, rows)
}

func skipFile(value string) func(g *gateEnv) ([]string, string, []string) {
	return func(g *gateEnv) ([]string, string, []string) {
		return []string{"lock", "--args-file", "-"}, `{"id":"` + g.claim + `","skip_confirmation":` + value + `}`, nil
	}
}

// The gated actions (docs/design.md §7.1): actions dispatched on --op,
// with their exempt read values, plus the actions gated as a whole.
func TestPerOperationActionsTable(t *testing.T) {
	t.Parallel()
	asked := func(command string, preview ...string) []string {
		return cat(pv(preview...), "About to execute "+command+". Proceed? [y/N] ")
	}
	ask := func(command string, preview ...string) []string { return cat(asked(command, preview...), aborted) }
	free := func(argv ...string) func(g *gateEnv) ([]string, string, []string) {
		return func(g *gateEnv) ([]string, string, []string) { return argv, "", nil }
	}
	rows := []gateRow{
		// tokens manage: --op list (or no --op: list is the declared default) runs; create, revoke ask.
		{name: "tokens manage --op list runs without a prompt", build: free("tokens", "manage", "--op", "list"), exit: 0, out: "ok", posts: 1},
		{name: "tokens manage without --op runs without a prompt", build: free("tokens", "manage"), exit: 0, out: "ok", posts: 1},
		{name: "tokens manage -o list (short alias) runs without a prompt", build: free("tokens", "manage", "-o", "list"), exit: 0, out: "ok", posts: 1},
		{name: "tokens manage --op create asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--op", "create", "--role", "harness"}, "", ask("tokens manage", "op", "create", "role", "harness")
		}, exit: 1},
		{name: "tokens manage --op revoke asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--op", "revoke", "--id", g.tokenID}, "", ask("tokens manage", "op", "revoke", "id", g.tokenID)
		}, exit: 1},
		{name: "tokens manage --op revoke, answered y", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "manage", "--op", "revoke", "--id", g.tokenID}, "y\n", asked("tokens manage", "op", "revoke", "id", g.tokenID)
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		// spawns manage: --op list, show run; cancel asks; no --op asks (no declared default).
		{name: "spawns manage --op list runs without a prompt", build: free("spawns", "manage", "--op", "list", "--view", "pending"), exit: 0, out: "ok", posts: 1},
		{name: "spawns manage --op show runs without a prompt", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage", "--op", "show", "--request-id", g.spawnID}, "", nil
		}, exit: 0, out: "ok", posts: 1},
		{name: "spawns manage --op cancel asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage", "--op", "cancel", "--request-id", g.spawnID}, "", ask("spawns manage", "op", "cancel", "request_id", g.spawnID)
		}, exit: 1},
		{name: "spawns manage without --op asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "manage"}, "", ask("spawns manage")
		}, exit: 1},
		// Gated as a whole.
		{name: "lock asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"lock", g.claim}, "", ask("dont lock", "id", g.claim)
		}, exit: 1},
		{name: "ignore asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"ignore", g.claim, "--reason", "out of scope here"}, "", ask("dont ignore", "id", g.claim, "reason", "out of scope here")
		}, exit: 1},
		{name: "spawns cancel asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "cancel", g.spawnID}, "", ask("spawns cancel", "request_id", g.spawnID)
		}, exit: 1},
		{name: "spawns cancel, answered yes, restores the entity", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"spawns", "cancel", g.spawnID}, "yes\n", asked("spawns cancel", "request_id", g.spawnID)
		}, exit: 0, out: "ok", posts: 1, confirmed: true, writes: true},
		{name: "tokens create asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "create", "--role", "approver"}, "", ask("tokens create", "role", "approver")
		}, exit: 1},
		{name: "tokens revoke asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke", g.tokenID}, "", ask("tokens revoke", "id", g.tokenID)
		}, exit: 1},
		{name: "tokens revoke-all (interactive-only) asks", build: func(g *gateEnv) ([]string, string, []string) {
			return []string{"tokens", "revoke-all"}, "", ask("tokens revoke-all")
		}, exit: 1},
		// Ungated actions never ask.
		{name: "spawns (list) does not ask", build: free("spawns", "--pending"), exit: 0, out: "ok", posts: 1},
		{name: "tokens list does not ask", build: free("tokens", "list"), exit: 0, out: "ok", posts: 1},
	}
	runRows(t, rows)
}

func (g *gateEnv) cacheFile() string {
	g.t.Helper()
	matches, _ := filepath.Glob(filepath.Join(g.cache, "dont", "tools.*.json"))
	if len(matches) != 1 {
		g.t.Fatalf("schema cache files: %v", matches)
	}
	return matches[0]
}

func (g *gateEnv) editCache(edit func(c map[string]any)) {
	g.t.Helper()
	f := g.cacheFile()
	raw, err := os.ReadFile(f)
	if err != nil {
		g.t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		g.t.Fatal(err)
	}
	edit(c)
	raw, _ = json.Marshal(c)
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		g.t.Fatal(err)
	}
}

func TestFeatureOffServersNeverPrompt(t *testing.T) {
	t.Parallel()
	g := newGateEnv(t, "remote", false)
	before := g.snapshot()
	r := g.run("", "lock", g.claim, "--reason", "settled")
	if r.exit != 0 || r.stderr != "" || r.str("status") != confirm.StatusPending || r.str("confirmation_id") == "" {
		t.Fatalf("feature off: exit %d stderr %q stdout %s", r.exit, r.stderr, r.stdout)
	}
	posts := g.server.requests(http.MethodPost)
	if len(posts) != 1 || posts[0].body["cli_confirmed"] != nil {
		t.Fatalf("posts %+v", posts)
	}
	if after := g.snapshot(); after == before || !strings.HasSuffix(after, "held=1") || !strings.HasPrefix(after, strings.Split(before, " ")[0]) {
		t.Fatalf("the held call changed the ledger: %s -> %s", before, after)
	}
	// --yes and --no-input do not turn into anything: the server's own flow applies.
	if r := g.run("", "ignore", g.claim, "--reason", "out of scope here", "--no-input"); r.exit != 0 || r.stderr != "" || r.str("status") != confirm.StatusPending {
		t.Fatalf("--no-input with the feature off: %d %q %s", r.exit, r.stderr, r.stdout)
	}
	// A legacy skip parameter is honoured by the server, with no hint.
	r = g.run("", "lock", g.claim, "--skip_confirmation", "true")
	if r.exit != 0 || r.stderr != "" || r.str("status") != "locked" {
		t.Fatalf("legacy skip with the feature off: %d %q %s", r.exit, r.stderr, r.stdout)
	}
	// --help shows the skip flags (the schema lists them) and no Confirmation: note.
	help, _ := g.help("tokens", "create")
	if !strings.Contains(help, "--skip_confirmation") || !strings.Contains(help, "--auto_skip_confirmation") || strings.Contains(help, "Confirmation:") {
		t.Fatalf("feature-off help:\n%s", help)
	}
}

func TestStaleSchemaCacheExitsOneAndNeverReplays(t *testing.T) {
	t.Parallel()
	t.Run("an annotation the cache does not know", func(t *testing.T) {
		g := newGateEnv(t, "remote", true)
		g.editCache(func(c map[string]any) {
			for _, v := range c["schema"].(map[string]any)["tools"].([]any) {
				if tool := v.(map[string]any); tool["name"] == "lock" {
					tool["annotations"] = map[string]any{}
				}
			}
		})
		before := g.snapshot()
		r := g.run("", "lock", g.claim)
		if r.exit != 1 || r.stderr != confirm.StaleLine+"\n" || r.data()["code"] != string(confirm.SchemaStale) {
			t.Fatalf("stale cache: exit %d stderr %q stdout %s", r.exit, r.stderr, r.stdout)
		}
		if posts := g.server.requests(http.MethodPost); len(posts) != 1 || posts[0].body["cli_confirmed"] != nil {
			t.Fatalf("%d POSTs (a replay?): %+v", len(posts), posts)
		}
		if !strings.Contains(g.snapshot(), "events="+strings.TrimPrefix(strings.Split(before, " ")[0], "events=")) {
			t.Fatal("the stale call changed the ledger")
		}
		// dont --refresh tools heals it: the next lock prompts.
		g.server.reset()
		if r := g.run("", "--refresh", "tools"); r.exit != 0 || r.str("source") != "server" || len(g.server.requests(http.MethodGet)) != 1 {
			t.Fatalf("--refresh tools: %d %s", r.exit, r.stdout)
		}
		g.server.reset()
		if r := g.run("", "lock", g.claim); r.exit != 1 || !strings.HasSuffix(r.stderr, confirm.AbortedLine+"\n") || len(g.server.seen) != 0 {
			t.Fatalf("after refresh: %d %q", r.exit, r.stderr)
		}
	})
	t.Run("the server turned the feature off", func(t *testing.T) {
		g := newGateEnv(t, "remote", true)
		g.server.setGate(g.store, false)
		r := g.run("", "tokens", "create", "--role", "harness", "--yes")
		if r.exit != 1 || r.stderr != confirm.StaleLine+"\n" {
			t.Fatalf("exit %d stderr %q stdout %s", r.exit, r.stderr, r.stdout)
		}
		if posts := g.server.requests(http.MethodPost); len(posts) != 1 || posts[0].body["cli_confirmed"] != true {
			t.Fatalf("posts %+v", posts)
		}
		g.server.reset()
		// Refreshed, the CLI knows the feature is off: it never prompts again.
		if r := g.run("", "--refresh", "tokens", "create", "--role", "harness"); r.exit != 0 || r.stderr != "" || r.str("status") != confirm.StatusPending {
			t.Fatalf("refreshed: %d %q %s", r.exit, r.stderr, r.stdout)
		}
	})
}

func TestSchemaCacheIsKeyedByCapabilitiesAndLivesADay(t *testing.T) {
	t.Parallel()
	g := newGateEnv(t, "remote", true)
	// The binary fetches and caches the schema itself on a cold cache
	// (newGateEnv warmed it in the test's process).
	if err := os.RemoveAll(filepath.Join(g.cache, "dont")); err != nil {
		t.Fatal(err)
	}
	g.server.reset()
	if r := g.run("", "tools"); r.exit != 0 || r.str("source") != "server" || len(g.server.requests(http.MethodGet)) != 1 {
		t.Fatalf("dont tools on a cold cache: %d %s %s", r.exit, r.stdout, r.stderr)
	}
	f := g.cacheFile()
	if !strings.HasPrefix(filepath.Base(f), "tools.cli-confirm-v1+cli-yes-only-v1.") || filepath.Dir(filepath.Dir(f)) != g.cache {
		t.Fatalf("cache file %s", f)
	}
	if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode: %v %v", info, err)
	}
	fetches := func(args ...string) int {
		g.server.reset()
		g.run("", args...)
		return len(g.server.requests(http.MethodGet))
	}
	if n := fetches("tokens", "list"); n != 0 {
		t.Fatalf("a fresh cache was re-fetched (%d)", n)
	}
	setAge := func(age time.Duration) {
		g.editCache(func(c map[string]any) { c["fetched_at"] = time.Now().Add(-age).UTC().Format(time.RFC3339Nano) })
	}
	setAge(23 * time.Hour)
	if n := fetches("tokens", "list"); n != 0 {
		t.Fatalf("a 23 h old cache was re-fetched (%d)", n)
	}
	setAge(25 * time.Hour)
	if n := fetches("tokens", "list"); n != 1 {
		t.Fatalf("a 25 h old cache was used (%d fetches)", n)
	}
	if n := fetches("tokens", "list"); n != 0 {
		t.Fatalf("the re-fetched schema was not cached (%d)", n)
	}
	if n := fetches("--refresh", "tokens", "list"); n != 1 {
		t.Fatalf("--refresh did not re-fetch (%d)", n)
	}
	// A cache written for other capabilities is never read.
	g.editCache(func(c map[string]any) { c["caps"] = confirm.CapConfirm })
	if n := fetches("tokens", "list"); n != 1 {
		t.Fatalf("a cache of other capabilities was read (%d fetches)", n)
	}
	for _, r := range g.server.requests("") {
		if r.caps != confirm.CLICaps {
			t.Fatalf("%s %s without the capability header", r.method, r.path)
		}
	}
	// dont tools prints the schema it gates by.
	tl := g.run("", "tools")
	if tl.exit != 0 || tl.str("source") != "cache" || tl.data()["features"].(map[string]any)["interactive_confirm"] != true || tl.str("caps") != confirm.CLICaps {
		t.Fatalf("dont tools: %s", tl.stdout)
	}
}

func TestGatedHelpEndsWithAConfirmationNote(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"embedded", "remote"} {
		t.Run(mode, func(t *testing.T) {
			g := newGateEnv(t, mode, true)
			for _, cmd := range [][]string{{"lock"}, {"ignore"}, {"spawns", "cancel"}, {"tokens", "create"}, {"tokens", "revoke"}, {"tokens", "manage"}, {"spawns", "manage"}, {"tokens", "revoke-all"}} {
				help, code := g.help(cmd...)
				i := strings.LastIndex(help, "\nConfirmation:\n")
				if code != 0 || i < 0 {
					t.Fatalf("%v --help has no Confirmation: note:\n%s", cmd, help)
				}
				note := help[i:]
				if !strings.Contains(note, "--yes") || !strings.Contains(note, "--no-input") || strings.Contains(note, "Flags:") {
					t.Fatalf("%v note:\n%s", cmd, note)
				}
				if strings.Contains(help, "skip_confirmation") {
					t.Fatalf("%v --help shows the deprecated flags:\n%s", cmd, help)
				}
			}
			for _, cmd := range [][]string{{"conclude"}, {"tokens", "list"}, {"confirmations", "confirm"}, {"spawns"}} {
				if help, _ := g.help(cmd...); strings.Contains(help, "Confirmation:") {
					t.Fatalf("%v is not gated but its help has a note", cmd)
				}
			}
			if help, _ := g.help("tokens", "manage"); !strings.Contains(help, "--op list runs without asking, and so does an omitted --op") {
				t.Fatalf("tokens manage note: %s", help)
			}
			if help, _ := g.help("tokens", "revoke-all"); !strings.Contains(help, "Interactive-only") {
				t.Fatalf("revoke-all note: %s", help)
			}
		})
	}
}

// The server's own flow, through a real `dont serve` with the gate off: a
// gated call is held, an approver confirms it with the CLI, it runs once.
func TestTheServersOwnFlowThroughDontServe(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness, approver := p.token("harness"), p.token("approver")
	off := p.serveWith(t, []string{"--sweep-interval", "50ms", "--interactive-confirm=false"})
	asHarness := []string{"DONT_ENDPOINT=" + off.endpoint, "DONT_TOKEN=" + harness}
	asApprover := []string{"DONT_ENDPOINT=" + off.endpoint, "DONT_TOKEN=" + approver}
	id := p.runEnv(asHarness, "conclude", "water boils at 100 C at sea level").str("id")
	p.runEnv(asHarness, "dismiss", id, "--evidence", "https://example.org/bp")
	held := p.runEnv(asHarness, "lock", id, "--reason", "settled")
	conf := held.str("confirmation_id")
	if held.exit != 0 || held.str("status") != confirm.StatusPending || conf == "" || held.stderr != "" {
		t.Fatalf("held: %d %s %s", held.exit, held.stdout, held.stderr)
	}
	if s := p.runEnv(asHarness, "show", id).str("status"); s != "verified" {
		t.Fatalf("the held call ran: %s", s)
	}
	if r := p.runEnv(asHarness, "confirmations", "confirm", conf); r.exit != 3 || r.data()["code"] != "forbidden" {
		t.Fatalf("a harness token confirmed: %d %s", r.exit, r.stdout)
	}
	listed := p.runEnv(asApprover, "confirmations", "list")
	if listed.data()["count"] != 1.0 {
		t.Fatalf("list: %s", listed.stdout)
	}
	// Two approvers at once: one runs it, the other gets the existing verdict.
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) { defer wg.Done(); results[i] = p.runEnv(asApprover, "confirmations", "confirm", conf) }(i)
	}
	wg.Wait()
	ran := 0
	for _, r := range results {
		if r.exit != 0 {
			t.Fatalf("confirm: %d %s", r.exit, r.stdout)
		}
		if r.env["envelope_kind"] == "claim" && r.str("status") == "locked" {
			ran++
		} else if w := warnings(r); len(w) != 1 || w[0] != "confirmation-duplicate" {
			t.Fatalf("the losing confirm: %s", r.stdout)
		}
	}
	hist := p.runEnv(asHarness, "show", id, "--history").data()["history"].([]any)
	locked := 0
	for _, h := range hist {
		if h.(map[string]any)["kind"] == "locked" {
			locked++
		}
	}
	if ran != 1 || locked != 1 {
		t.Fatalf("ran %d, %d locked events; want exactly one", ran, locked)
	}
	if r := p.runEnv(asApprover, "confirmations", "show", conf); r.str("state") != "executed" {
		t.Fatalf("record: %s", r.stdout)
	}
}

// An interrupt while the prompt waits sends nothing: exit 130, no write.
func TestInterruptAtThePromptSendsNothing(t *testing.T) {
	for _, mode := range []string{"remote", "embedded"} {
		t.Run(mode, func(t *testing.T) {
			g := newGateEnv(t, mode, true)
			before := g.snapshot()
			c := g.p.cmd("lock", g.claim)
			c.Env = append(c.Env, g.env...)
			stdin, _ := c.StdinPipe()
			defer stdin.Close()
			var out bytes.Buffer
			errPipe, _ := c.StderrPipe()
			c.Stdout = &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			asked := make(chan string, 1)
			go func() {
				var seen strings.Builder
				buf := make([]byte, 256)
				for {
					n, err := errPipe.Read(buf)
					seen.Write(buf[:n])
					if strings.Contains(seen.String(), "Proceed? [y/N] ") {
						asked <- seen.String()
						io.Copy(io.Discard, errPipe)
						return
					}
					if err != nil {
						asked <- seen.String()
						return
					}
				}
			}()
			select {
			case s := <-asked:
				if !strings.Contains(s, "Proceed? [y/N] ") {
					t.Fatalf("no prompt: %q", s)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the prompt never appeared")
			}
			c.Process.Signal(os.Interrupt)
			err := c.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 130 || out.Len() != 0 {
				t.Fatalf("interrupted prompt: %v, stdout %q", err, out.String())
			}
			if g.snapshot() != before || (g.server != nil && len(g.server.requests(http.MethodPost)) != 0) {
				t.Fatal("an interrupted prompt sent or wrote something")
			}
		})
	}
}

// answered runs the binary as a person confirming at the [y/N] prompt
// (approvals approve is interactive-only: --yes does not do): "y" and the
// approver passphrase typed at its controlling terminal, where the
// embedded CLI reads a person's answer, and "y" on stdin, where the CLI
// reads it over the API.
func (p *testProject) answered(env []string, args ...string) result {
	p.t.Helper()
	p.setPassphrase()
	c := p.cmd(args...)
	typedAtTerminal(p.t, c, "y\n"+testPassphrase+"\n")
	return p.runCmd(p.t, c, env, strings.NewReader("y\n"))
}

func (p *testProject) okAnswered(args ...string) result {
	p.t.Helper()
	r := p.answered(nil, args...)
	if r.exit != 0 || r.env["ok"] != true {
		p.t.Fatalf("dont %s: exit %d\n%s%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	}
	return r
}

// `dont mcp` keeps the server-side contract: no prompt (stdin is the
// protocol); a gated call is held until an approver confirms it, exempt
// reads and legacy skip parameters run, and no [y/N] ever reaches stderr.
func TestMCPKeepsTheServerSideContract(t *testing.T) {
	t.Parallel()
	g := newGateEnv(t, "embedded", true)
	s := g.p.mcp()
	before := g.snapshot()
	held := s.call("lock", map[string]any{"id": g.claim, "reason": "settled"})
	conf, _ := held.data()["confirmation_id"].(string)
	if held.isError || held.data()["status"] != confirm.StatusPending || conf == "" {
		t.Fatalf("lock over MCP: %s", held.text)
	}
	if after := g.snapshot(); !strings.HasPrefix(after, strings.Split(before, " ")[0]+" ") {
		t.Fatalf("the held call changed the ledger: %s -> %s", before, after)
	}
	if r := s.call("list", map[string]any{}); r.isError || r.env["envelope_kind"] != "list" {
		t.Fatalf("a read over MCP: %s", r.text)
	}
	if r := s.call("ignore", map[string]any{"id": g.other, "reason": "out of scope here", "skip_confirmation": true}); !r.isError || r.data()["code"] != "usage" {
		t.Fatalf("skip_confirmation over MCP must be an unknown parameter: %s", r.text)
	}
	// The owner confirms the held lock at a terminal of the CLI; it runs.
	if r := g.p.answered(nil, "confirmations", "confirm", conf); r.exit != 0 || r.str("status") != "locked" {
		t.Fatalf("confirm: %d %s", r.exit, r.stdout)
	}
}

// The embedded CLI reads a tool's gate from the tool itself rather than
// building the embedded schema on every run; for every tool that is the
// gate (and the feature) the embedded schema — what `dont tools` prints —
// carries.
func TestTheEmbeddedGateIsTheEmbeddedSchemas(t *testing.T) {
	t.Parallel()
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" })
	full := newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" })
	schema, err := full.toolSchema(context.Background())
	if err != nil || schema.Source != "embedded" {
		t.Fatalf("embedded schema: %v, source %q", err, schema.Source)
	}
	gated := 0
	for _, tool := range tools.All() {
		g, feature, err := a.gateOf(context.Background(), tool)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if !reflect.DeepEqual(g, schema.Gate(tool.Name)) || feature != schema.Schema.Features.InteractiveConfirm {
			t.Errorf("%s: gate %+v feature %v, the embedded schema says %+v feature %v", tool.Name, g, feature,
				schema.Gate(tool.Name), schema.Schema.Features.InteractiveConfirm)
		}
		if g.Gated() {
			gated++
		}
	}
	if gated == 0 {
		t.Fatal("no tool is gated: the comparison proves nothing")
	}
	if a.confirm.schema != nil {
		t.Error("reading the embedded gates built the schema")
	}
}
