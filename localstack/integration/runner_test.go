package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/dont-cli/dont/internal/gobuild"
)

// gateway is API Gateway's HTTP API in front of one function under the
// emulator: each HTTP request becomes one payload-2.0 event, so that the
// real CLI (`dont spawns run` and the agents it starts) can use the
// function as its DONT_ENDPOINT.
func (s *suite) gateway(t *testing.T, fn *function) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		headers := map[string]string{}
		for k, v := range r.Header {
			if !strings.EqualFold(k, "Authorization") && len(v) > 0 {
				headers[k] = v[0]
			}
		}
		ev := httpEvent(r.Method, r.URL.Path, token, body, headers)
		ev.RawQueryString = r.URL.RawQuery
		ev.RequestContext.HTTP.Method = r.Method
		var resp events.APIGatewayV2HTTPResponse
		if err := fn.invoke(r.Context(), ev, &resp); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		io.WriteString(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// dontBinary builds the CLI once.
var builtDont string

func dontBinary(t *testing.T) string {
	t.Helper()
	if builtDont != "" {
		return builtDont
	}
	// A test build: it reads the person's folders from DONT_TEST_PERSON_HOME
	// (runnerDir), never the real home.
	bin, err := gobuild.Executable(".", nil, "-tags", "faulthooks", "../../cli/dont")
	if err != nil {
		t.Fatalf("build the CLI: %v", err)
	}
	builtDont = bin
	return bin
}

// runnerDir is a project folder whose person's config (in personHome:
// a profile in .dont/config.toml counts only once trusted,
// docs/security.md) names the scripted agent (cli/dont/testdata/agent.sh)
// as the profile "script"; the runner reaches the function at its
// endpoint.
func runnerDir(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "init", "--no-passphrase") // no person here: never ask at a terminal
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DONT_ENDPOINT=", "DONT_PROJECT_DIR=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	script, _ := filepath.Abs("../../cli/dont/testdata/agent.sh")
	conf := filepath.Join(personHome(dir), ".config", "dont")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	profile := fmt.Sprintf("[agents.script]\ncommand = [\"bash\", %q]\nenv = [\"PATH\", \"HOME\", \"XDG_CACHE_HOME\", \"DONT_BIN\", \"AGENT_MODE\", \"AGENT_LOG\", \"AGENT_SLEEP\"]\n", script)
	if err := os.WriteFile(filepath.Join(conf, "config.toml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// personHome is the person's home folder of the project in dir.
func personHome(dir string) string { return filepath.Join(dir, ".person") }

// spawnsRun runs `dont spawns run` against endpoint with the project's
// harness token and returns its one run, its exit code and its stderr.
// spawnsRun runs `dont spawns run` against endpoint with the spawn request
// as issued on its stdin (a read by id never carries the callback token).
func (p *project) spawnsRun(t *testing.T, endpoint, dir string, req spawnRequest, env []string, args ...string) (map[string]any, int, string) {
	t.Helper()
	bin := dontBinary(t)
	cmd := exec.Command(bin, append([]string{"spawns", "run", "--agent", "script"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DONT_PROJECT_DIR=", "DONT_HARNESS=", "DONT_ENDPOINT="+endpoint, "DONT_TOKEN="+p.token,
		"DONT_BIN="+bin, "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"), "DONT_TEST_PERSON_HOME="+personHome(dir))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(req.Issued)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var envl struct {
		Kind string `json:"envelope_kind"`
		Data struct {
			Runs []map[string]any `json:"runs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out.Bytes(), &envl); err != nil || envl.Kind != "spawn_run" || len(envl.Data.Runs) != 1 {
		t.Fatalf("spawns run printed %q (exit %d)\n%s", out.String(), code, errb.String())
	}
	return envl.Data.Runs[0], code, errb.String()
}

// The reference harness against the API function over DynamoDB: the
// scripted agent resolves its spawn; a hanging one is killed at the
// spawn's expiry and the spawn ends; heartbeats keep a slow one, which
// shows progress, alive past the original expiry; a forbidden tool with
// its token is refused.
func TestSpawnsRunThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	bin := dontBinary(t)
	dir := runnerDir(t, bin)

	t.Run("assume, run, resolved", func(t *testing.T) {
		p := s.newProject(t)
		claim := p.verifiedClaim(s.api)
		req := p.assume(s.api, claim)
		run, code, stderr := p.spawnsRun(t, s.gateway(t, s.api), dir, req, []string{"AGENT_MODE=ok"})
		if code != 0 || run["outcome"] != "resolved" {
			t.Fatalf("exit %d, run %v\n%s", code, run, stderr)
		}
		if e := p.entity(claim); e.Status != "verified" || e.PendingSpawn != "" {
			t.Fatalf("after the run: %+v", e)
		}
	})
	t.Run("a hanging agent is killed at the deadline and the spawn times out", func(t *testing.T) {
		p := s.newProject(t)
		claim := p.verifiedClaim(s.apiShort)
		req := p.assume(s.apiShort, claim)
		run, code, stderr := p.spawnsRun(t, s.gateway(t, s.apiShort), dir, req, []string{"AGENT_MODE=hang"}, "--heartbeat", "0", "--grace", "200ms")
		if code != 1 || run["outcome"] != "timed-out" || run["killed"] != "expired" {
			t.Fatalf("exit %d, run %v\n%s", code, run, stderr)
		}
		// The store's timeout, or the runner's cancel if the store had not
		// yet swept it: the claim is free either way.
		if n := len(p.events(claim, "spawn_timeout")) + len(p.events(claim, "spawn_cancelled")); n != 1 {
			t.Fatalf("%d spawn_timeout and spawn_cancelled events", n)
		}
	})
	t.Run("heartbeats keep a slow agent alive past the original expiry", func(t *testing.T) {
		p := s.newProject(t)
		claim := p.verifiedClaim(s.apiShort)
		req := p.assume(s.apiShort, claim)
		sleep := s.short + 2*time.Second
		run, code, stderr := p.spawnsRun(t, s.gateway(t, s.apiShort), dir, req, []string{"AGENT_MODE=slow", fmt.Sprintf("AGENT_SLEEP=%d", int(sleep.Seconds()))},
			"--heartbeat", "300ms", "--extend", s.short.String(), "--deadline", (sleep + time.Minute).String())
		if code != 0 || run["outcome"] != "resolved" {
			t.Fatalf("exit %d, run %v\n%s", code, run, stderr)
		}
		ended, _ := time.Parse(time.RFC3339Nano, run["ended_at"].(string))
		if !ended.After(req.ExpiresAt) || len(p.events(claim, "spawn_heartbeat")) == 0 || len(p.events(claim, "spawn_timeout")) != 0 {
			t.Fatalf("ended %v (expiry as issued %v), events heartbeat %d timeout %d", ended, req.ExpiresAt,
				len(p.events(claim, "spawn_heartbeat")), len(p.events(claim, "spawn_timeout")))
		}
	})
	t.Run("an agent trying a forbidden tool with its token is refused", func(t *testing.T) {
		p := s.newProject(t)
		claim := p.verifiedClaim(s.api)
		req := p.assume(s.api, claim)
		logf := filepath.Join(t.TempDir(), "agent.log")
		run, code, stderr := p.spawnsRun(t, s.gateway(t, s.api), dir, req, []string{"AGENT_MODE=forbidden", "AGENT_LOG=" + logf})
		if code != 0 || run["outcome"] != "resolved" {
			t.Fatalf("exit %d, run %v\n%s", code, run, stderr)
		}
		log, _ := os.ReadFile(logf)
		for _, k := range []string{"lock", "tokens-create"} {
			if !strings.Contains(string(log), k+" ") || !strings.Contains(string(log), `"code":"forbidden"`) {
				t.Fatalf("%s with the callback token was not refused: %s", k, log)
			}
		}
		if e := p.entity(claim); e.Status != "verified" {
			t.Fatalf("status %s: the forbidden lock changed the claim", e.Status)
		}
	})
}
