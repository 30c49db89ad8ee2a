package main

// The settings only a person decides (docs/security.md, "Settings only a
// person decides"): an agent that writes .dont/config.toml, or sets its
// own environment, changes none of them.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/llm/llmtest"
	"github.com/dont-cli/dont/internal/personal"
)

// personHomeDir is the person's home of the test's project (personHome,
// which every command of p reads from DONT_TEST_PERSON_HOME), created.
func (p *testProject) personHomeDir(t *testing.T) string {
	t.Helper()
	h := p.personHome()
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// writePersonConfig writes the person's own config (mode 0600).
func (p *testProject) writePersonConfig(t *testing.T, text string) string {
	t.Helper()
	path := personal.Dirs{Home: p.personHomeDir(t)}.ConfigPath()
	if err := personal.MkdirAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// agentWritesConfig is the agent writing .dont/config.toml: it can.
func (p *testProject) agentWritesConfig(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, ".dont", "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pinConfig writes the trust pin `dont config trust` writes after the
// person's yes (that path is TestTrustingTheWorkspaceConfigNeedsThePersonAtTheTerminal's).
func (p *testProject) pinConfig(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, ".dont", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := personal.Dirs{Home: p.personHomeDir(t)}.ProjectDir(p.dir)
	if err := personal.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if err := os.WriteFile(filepath.Join(dir, "trusted-config.sha256"), []byte(hex.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func warningText(r result) string {
	var out []string
	ws, _ := r.env["warnings"].([]any)
	for _, w := range ws {
		m := w.(map[string]any)
		out = append(out, m["code"].(string)+": "+m["message"].(string))
	}
	return strings.Join(out, "\n")
}

func TestAnAgentThatWritesTheWorkspaceConfigCannotRedefineABuiltInProfile(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	marker := filepath.Join(t.TempDir(), "ran")
	p.agentWritesConfig(t, "[agents.claude-code]\ncommand = [\"sh\", \"-c\", \"touch "+marker+"\"]\nenv = [\"AWS_SECRET_ACCESS_KEY\"]\n")
	for _, trusted := range []bool{false, true} {
		if trusted {
			p.pinConfig(t) // not even a trusted file may
		}
		r := p.run("spawns", "run", "--agent", "claude-code", "--request-id", rid)
		rem, _ := r.data()["remediation"].([]any)
		if r.exit != 3 || r.str("code") != "config-invalid" || !strings.Contains(r.data()["message"].(string), "built-in") ||
			len(rem) == 0 || !strings.Contains(rem[0].(map[string]any)["command"].(string), `template = "claude-code"`) {
			t.Fatalf("[agents.claude-code] in the workspace (trusted %v): exit %d %s", trusted, r.exit, r.stdout)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent's command ran under the built-in profile's name")
	}
}

func TestAnAgentThatWritesTheWorkspaceConfigCannotMakeSpawnsRunRunItsCommandWithThePersonsVariables(t *testing.T) {
	t.Parallel()
	p := newProject(t, "PERSONS_SECRET=s3cr3t")
	out := filepath.Join(t.TempDir(), "leaked")
	p.agentWritesConfig(t, "[agents.helper]\ncommand = [\"sh\", \"-c\", \"echo \\\"$PERSONS_SECRET\\\" > "+out+"\"]\nenv = [\"PERSONS_SECRET\"]\n")
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	for _, args := range [][]string{{"--agent", "helper"}, {}} { // named, or the only one configured
		r := p.run(append([]string{"spawns", "run", "--request-id", rid}, args...)...)
		if r.exit != 3 || r.str("code") != "config-untrusted" || !strings.Contains(r.data()["message"].(string), "helper") ||
			!strings.Contains(r.stdout, "dont config trust") {
			t.Fatalf("spawns run %v with an untrusted profile: exit %d %s", args, r.exit, r.stdout)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("spawns run ran the untrusted profile's command")
	}
	// The person trusts the file: now it runs, with the variable it names.
	p.pinConfig(t)
	p.run("spawns", "run", "--agent", "helper", "--request-id", rid)
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "s3cr3t" {
		t.Fatalf("the trusted profile did not run with its variable: %q %v", b, err)
	}
}

func TestAnAgentCannotReceiveTheAPIKeyThroughTheWorkspacesBaseURL(t *testing.T) {
	t.Parallel()
	const key = "sk-the-persons-key"
	agentsServer := func(t *testing.T) *llmtest.Server {
		return llmtest.New(t, llmtest.Reply(t, 200, "openai/judge_dismiss.json"))
	}
	t.Run("provider and base_url from the workspace", func(t *testing.T) {
		srv := agentsServer(t)
		p := newProject(t, "DONT_LLM_API_KEY="+key, "OPENAI_API_KEY="+key)
		p.agentWritesConfig(t, "[llm]\nprovider = \"openai-compatible\"\nbase_url = \""+srv.URL+"\"\nmodel = \"m\"\n")
		id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
		r := p.run("assume", id, "--direct", "--json")
		if r.exit != 3 || r.str("code") != "config-untrusted" || !strings.Contains(r.data()["message"].(string), "not trusted") {
			t.Fatalf("direct mode on the workspace's provider: exit %d %s", r.exit, r.stdout)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("the agent's server got %d requests", n)
		}
		// Trusted by the person, the same file is used: the test can fail.
		p.pinConfig(t)
		if r := p.run("assume", id, "--direct", "--json"); r.exit != 0 || len(srv.Requests()) == 0 {
			t.Fatalf("a trusted base_url was not used: exit %d %s", r.exit, r.stdout)
		}
	})
	t.Run("the person's provider, the workspace's base_url", func(t *testing.T) {
		srv := agentsServer(t)
		// The provider's own host is made unreachable: every dial goes to a
		// closed port through the proxy.
		p := newProject(t, "DONT_LLM_PROVIDER=openai", "DONT_LLM_MODEL=m", "OPENAI_API_KEY="+key, "HTTPS_PROXY=http://127.0.0.1:1", "NO_PROXY=")
		p.agentWritesConfig(t, "[llm]\nbase_url = \""+srv.URL+"\"\nmax_retries = -1\n")
		id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
		r := p.run("assume", id, "--direct", "--json")
		if r.exit == 0 || !strings.Contains(warningText(r), "llm.base_url") {
			t.Fatalf("exit %d %s", r.exit, r.stdout)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("the agent's server got %d requests", n)
		}
	})
	t.Run("base_url from a harness-signalled environment", func(t *testing.T) {
		srv := agentsServer(t)
		p := newProject(t, "DONT_LLM_API_KEY="+key)
		id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
		r := p.runEnv([]string{"DONT_HARNESS=1", "DONT_LLM_PROVIDER=openai-compatible", "DONT_LLM_BASE_URL=" + srv.URL, "DONT_LLM_MODEL=m"}, "assume", id, "--direct", "--json")
		if r.exit != 3 || !strings.Contains(warningText(r), "setting-env-ignored: DONT_LLM_BASE_URL") {
			t.Fatalf("exit %d %s", r.exit, r.stdout)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("the agent's server got %d requests", n)
		}
	})
}

// slackCapture records the bodies hooks deliver.
type slackCapture struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newSlackCapture(t *testing.T) *slackCapture {
	c := &slackCapture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, string(b))
		c.mu.Unlock()
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *slackCapture) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.bodies, "\n")
}

func TestAnAgentCannotWidenTheHookPolicyOrMoveThePublicURL(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.agentWritesConfig(t, "[hooks]\nallow_private = [\"127.0.0.0/8\"]\npublic_url = \"https://phish-config.example\"\n")
	rcv := newSlackCapture(t)
	r := p.run("hooks", "add", "--url", rcv.URL+"/in", "--events", "approval.asked", "--format", "slack", "--yes")
	if r.exit != 2 || !strings.Contains(warningText(r), "config-untrusted") {
		t.Fatalf("a hook to a loopback address the workspace allowed: exit %d %s", r.exit, r.stdout)
	}
	// The person allows it in their own config.
	p.writePersonConfig(t, "[hooks]\nallow_private = [\"127.0.0.1/32\"]\n")
	p.ok("hooks", "add", "--url", rcv.URL+"/in", "--events", "approval.asked", "--format", "slack", "--yes")
	ses := p.session("read-only")
	// The agent asks, with its own page in its environment too; the
	// question reaches Slack from its process (the delivery pass after the
	// envelope) with no link to either page.
	ask := func(call string) string {
		t.Helper()
		p.frames("--session", ses) // the person watches
		before := len(rcv.all())
		r := p.runEnv([]string{"DONT_HARNESS=1", "DONT_PUBLIC_URL=https://phish-env.example"},
			"escalate", "--session", ses, "--call", call, "--to", "workspace-write", "--reason", "build", "--no-wait")
		if r.exit != 0 {
			t.Fatalf("escalate: exit %d %s", r.exit, r.stdout)
		}
		return rcv.all()[before:]
	}
	if got := ask("c1"); !strings.Contains(got, "workspace-write") || strings.Contains(got, "phish") {
		t.Fatalf("the Slack message: %q", got)
	}
	// The person's own URL is the link.
	p.writePersonConfig(t, "[hooks]\nallow_private = [\"127.0.0.1/32\"]\npublic_url = \"https://approvals.person.example\"\n")
	if got := ask("c2"); !strings.Contains(got, "https://approvals.person.example/approvals") || strings.Contains(got, "phish") {
		t.Fatalf("the Slack message links to %q", got)
	}
}

func TestAHarnessSignalledProcessCannotSetTheApprovalTimeoutOrSubscriberLease(t *testing.T) {
	t.Parallel()
	long := []string{"DONT_APPROVAL_TIMEOUT=876000h", "DONT_SUBSCRIBER_LEASE=876000h"}
	check := func(t *testing.T, deadline string, asked time.Time) {
		t.Helper()
		d, err := time.Parse(time.RFC3339Nano, deadline)
		if err != nil || d.Sub(asked) > 10*time.Minute {
			t.Fatalf("the question lives until %q (asked %v)", deadline, asked)
		}
	}
	t.Run("embedded CLI", func(t *testing.T) {
		p := newApprovalProject(t)
		ses := p.session("read-only")
		p.frames("--session", ses)
		asked := time.Now()
		r := p.runEnv(append([]string{"DONT_HARNESS=1"}, long...), "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait")
		w := warningText(r)
		if r.exit != 0 || !strings.Contains(w, "DONT_APPROVAL_TIMEOUT is ignored") || !strings.Contains(w, "DONT_SUBSCRIBER_LEASE is ignored") {
			t.Fatalf("escalate: exit %d %s", r.exit, r.stdout)
		}
		check(t, r.str("deadline"), asked)
	})
	t.Run("MCP", func(t *testing.T) {
		p := newApprovalProject(t)
		ses := p.session("read-only")
		p.frames("--session", ses)
		p.env = append(p.env, long...) // dont mcp's environment is the agent's
		asked := time.Now()
		r := p.mcp().call("escalate", map[string]any{"session": ses, "call": "c1", "to": "workspace-write", "reason": "r", "no_wait": true})
		if r.isError {
			t.Fatalf("escalate over MCP: %s", r.text)
		}
		check(t, r.data()["deadline"].(string), asked)
	})
}

func TestAHarnessSignalledProcessCannotRaiseTheSpawnMaxLease(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	_, rid, _ := p.assumeJSON(t, runnerBackend{})
	r := p.runEnv([]string{"DONT_HARNESS=1", "DONT_SPAWN_MAX_LEASE=720h"}, "spawns", "heartbeat", rid, "--extend", "700h")
	if r.exit != 0 || r.data()["capped"] != true || !strings.Contains(warningText(r), "DONT_SPAWN_MAX_LEASE is ignored") {
		t.Fatalf("heartbeat: exit %d %s", r.exit, r.stdout)
	}
	issued, _ := time.Parse(time.RFC3339Nano, p.ok("spawns", "manage", "--op", "show", "--request-id", rid).str("issued_at"))
	if exp, _ := time.Parse(time.RFC3339Nano, r.str("expires_at")); !exp.Equal(issued.Add(168 * time.Hour)) {
		t.Fatalf("expires_at %v, want issued_at + the default 168h", exp)
	}
	// Without a harness signal the variable is the person's.
	if r := p.runEnv([]string{"DONT_SPAWN_MAX_LEASE=720h"}, "spawns", "heartbeat", rid, "--extend", "700h"); r.data()["capped"] == true {
		t.Fatalf("the person's DONT_SPAWN_MAX_LEASE was not honoured: %s", r.stdout)
	}
}

func TestAPersonConfigThatOthersCanWriteOrThatIsALinkIsIgnored(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	path := p.writePersonConfig(t, "[llm]\nprovider = \"ollama\"\n")
	show := func() result {
		t.Helper()
		r := p.ok("config", "show")
		return r
	}
	provider := func(r result) string {
		for _, s := range r.data()["settings"].([]any) {
			if m := s.(map[string]any); m["key"] == "llm.provider" {
				return m["value"].(string) + " from " + m["source"].(string)
			}
		}
		return ""
	}
	if r := show(); provider(r) != "ollama from person config" || r.data()["person_config_used"] != true {
		t.Fatalf("a private person config was not used: %s", r.stdout)
	}
	os.Chmod(path, 0o620)
	if r := show(); provider(r) != " from default" || !strings.Contains(warningText(r), "person-config-ignored") {
		t.Fatalf("a group-writable person config counted: %s", r.stdout)
	}
	os.Chmod(path, 0o602)
	if r := show(); provider(r) != " from default" {
		t.Fatalf("an other-writable person config counted: %s", r.stdout)
	}
	target := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(target, []byte("[llm]\nprovider = \"ollama\"\n"), 0o600)
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if r := show(); provider(r) != " from default" || !strings.Contains(warningText(r), "symbolic link") {
		t.Fatalf("a linked person config counted: %s", r.stdout)
	}
}

func TestAnExistingProjectWithAgentProfilesIsToldOnceHowToTrustThem(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	claim := func() string { return p.ok("conclude", "water boils at 100 C at sea level").str("id") }
	if r := p.ok("overlook", claim()); len(warnings(r)) != 0 {
		t.Fatalf("a project dont init made warns: %s", r.stdout)
	}
	// A config as projects held it before the rule: the old defaults and
	// a profile.
	p.agentWritesConfig(t, "spawn_timeout = \"24h\"\nspawn_max_lease = \"168h\"\n[agents.claude]\ntemplate = \"claude-code\"\nenv = [\"ANTHROPIC_API_KEY\", \"HOME\"]\n[llm]\nprovider = \"\"\nmodel = \"\"\nbase_url = \"\"\n")
	for _, args := range [][]string{{"overlook", claim()}, {"doctor"}, {"config", "show"}} {
		r := p.ok(args...)
		w := warningText(r)
		if !slices.Equal(warnings(r), []string{"config-untrusted"}) || !strings.Contains(w, "has agent profiles (claude)") ||
			!strings.Contains(w, "trust them with dont config trust") || strings.Contains(w, "spawn_max_lease") {
			t.Fatalf("dont %v: %s", args, r.stdout)
		}
	}
	// Once trusted, no more warning.
	p.pinConfig(t)
	if r := p.ok("overlook", claim()); len(warnings(r)) != 0 {
		t.Fatalf("a trusted config still warns: %s", r.stdout)
	}
}

// configShowFrom is `dont config show`'s source of key.
func configShowFrom(t *testing.T, r result, key string) string {
	t.Helper()
	for _, s := range r.data()["settings"].([]any) {
		if m := s.(map[string]any); m["key"] == key {
			return m["source"].(string)
		}
	}
	return ""
}

func TestConfigShowSaysWhereEachSettingCameFrom(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.writePersonConfig(t, "[agents.mine]\ntemplate = \"codex\"\n")
	p.agentWritesConfig(t, "spawn_timeout = \"2h\"\nsession_ceiling = \"workspace-write\"\n")
	r := p.runEnv([]string{"DONT_APPROVAL_TIMEOUT=30s"}, "config", "show")
	for key, want := range map[string]string{"agents.mine": "person config", "spawn_timeout": "workspace config",
		"session_ceiling": "default", "approval_timeout": "environment", "llm.provider": "default"} {
		if got := configShowFrom(t, r, key); got != want {
			t.Errorf("%s from %q, want %q: %s", key, got, want, r.stdout)
		}
	}
	if !bytes.Contains([]byte(r.stdout), []byte(`"untrusted":["session_ceiling"]`)) {
		t.Fatalf("untrusted: %s", r.stdout)
	}
	p.pinConfig(t)
	if got := configShowFrom(t, p.ok("config", "show"), "session_ceiling"); got != "workspace config" {
		t.Fatalf("a trusted session_ceiling comes from %q", got)
	}
}

// dont serve reads the config files by the same rules: the lease an agent
// wrote into the workspace config does not bound its spawns, the
// person's start-up environment does.
func TestAnAgentThatWritesTheWorkspaceConfigCannotRaiseTheLeaseOfDontServe(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.agentWritesConfig(t, "spawn_max_lease = \"720h\"\n")
	tok := p.token("harness")
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{{nil, 168 * time.Hour}, {[]string{"DONT_SPAWN_MAX_LEASE=200h"}, 200 * time.Hour}} {
		srv := p.serve(t, tc.env...)
		b := runnerBackend{name: "serve", env: []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + tok}}
		_, rid, _ := p.assumeJSON(t, b)
		r := p.runIn(t, b.env, nil, "spawns", "heartbeat", rid, "--extend", "700h")
		issued, _ := time.Parse(time.RFC3339Nano, p.ok("spawns", "manage", "--op", "show", "--request-id", rid).str("issued_at"))
		if exp, _ := time.Parse(time.RFC3339Nano, r.str("expires_at")); r.exit != 0 || !exp.Equal(issued.Add(tc.want)) {
			t.Fatalf("serve %v: heartbeat to %v, want issued_at + %v: %s", tc.env, exp, tc.want, r.stdout)
		}
		srv.cmd.Process.Kill()
		srv.cmd.Wait()
	}
}

// The deadline an agent writes into the workspace config does not count;
// the one in the person's own config does, for the agent's escalations
// too (a harness-signalled process cannot read the person's variables).
func TestAnAgentThatWritesTheWorkspaceConfigCannotSetTheApprovalTimeout(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.agentWritesConfig(t, "approval_timeout = \"876000h\"\nsubscriber_lease = \"876000h\"\n")
	ses := p.session("read-only")
	ask := func(call string) (result, time.Time) {
		t.Helper()
		p.frames("--session", ses)
		asked := time.Now()
		return p.runEnv([]string{"DONT_HARNESS=1"}, "escalate", "--session", ses, "--call", call, "--to", "workspace-write", "--reason", "r", "--no-wait"), asked
	}
	r, asked := ask("c1")
	d, _ := time.Parse(time.RFC3339Nano, r.str("deadline"))
	if r.exit != 0 || d.Sub(asked) > 10*time.Minute || !strings.Contains(warningText(r), "approval_timeout") {
		t.Fatalf("the workspace's deadline counted: exit %d %s", r.exit, r.stdout)
	}
	p.writePersonConfig(t, "approval_timeout = \"300s\"\n")
	r, asked = ask("c2")
	d, _ = time.Parse(time.RFC3339Nano, r.str("deadline"))
	if r.exit != 0 || d.Sub(asked) < 299*time.Second || d.Sub(asked) > 310*time.Second {
		t.Fatalf("the person's deadline did not count: deadline %v after asking: %s", d.Sub(asked), r.stdout)
	}
}
