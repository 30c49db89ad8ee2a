package main

// `dont hook`: recorded harness payloads → a dont question → the answer
// (a person at the CLI, a rule, the deadline, the approvals page) → the
// exact decision JSON, validated against the harness's output schema.
// Every failure is a deny.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const hookFixtures = "../../internal/harnesshook/testdata"

var hookOutputSchema = map[string]string{
	"claude-code": "claude-code/permission-request.output.schema.json",
	"codex":       "codex/permission-request.command.output.schema.json",
}

func hookPayload(t *testing.T, harness, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hookFixtures, harness, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validDecision fails t unless out is one JSON document that the
// harness's own output schema accepts.
func validDecision(t *testing.T, harness string, out []byte) {
	t.Helper()
	path := filepath.Join(hookFixtures, hookOutputSchema[harness])
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("the hook wrote %q: not one JSON document", out)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("the hook's decision %s fails %s's schema: %v", out, harness, err)
	}
}

const hookAllow = `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}` + "\n"

// hookDeny is the decision's message of a deny, or fails t on an allow.
func hookDeny(t *testing.T, harness string, out []byte) string {
	t.Helper()
	validDecision(t, harness, out)
	var d struct {
		HookSpecificOutput struct {
			Decision struct{ Behavior, Message string }
		}
	}
	json.Unmarshal(out, &d)
	if d.HookSpecificOutput.Decision.Behavior != "deny" || !strings.HasPrefix(d.HookSpecificOutput.Decision.Message, "dont: ") {
		t.Fatalf("want a deny with dont's message, got %s", out)
	}
	return d.HookSpecificOutput.Decision.Message
}

// hook runs `dont hook <harness>` to its end with payload on stdin; it
// must exit 0 (the decision is the JSON).
func (p *testProject) hook(env []string, harness string, payload []byte) []byte {
	p.t.Helper()
	c, out := p.startHook(env, harness, payload)
	return p.hookEnd(c, out)
}

func (p *testProject) startHook(env []string, harness string, payload []byte) (*exec.Cmd, *bytes.Buffer) {
	p.t.Helper()
	c := p.cmd("hook", harness)
	c.Env = append(c.Env, env...)
	c.Stdin = bytes.NewReader(payload)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		p.t.Fatal(err)
	}
	return c, &out
}

func (p *testProject) hookEnd(c *exec.Cmd, out *bytes.Buffer) []byte {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.t.Fatalf("dont hook exited %v (stderr %s); it always exits 0", err, c.Stderr)
		}
	case <-time.After(60 * time.Second):
		c.Process.Kill()
		p.t.Fatal("dont hook did not end")
	}
	return out.Bytes()
}

// pendingQuestion waits until the project has one open question and
// returns it (the hook asked), as dont approvals list --pending shows it.
// It waits by reading the store in this process: a dont process per
// look cost a test dozens of them while a slow machine started the hook.
func (p *testProject) pendingQuestion() map[string]any {
	p.t.Helper()
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	for deadline := time.Now().Add(30 * time.Second); ; {
		as, err := st.ListApprovals(context.Background(), store.ApprovalFilter{State: approvals.Pending})
		if err != nil {
			p.t.Fatal(err)
		}
		if len(as) > 0 {
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatal("the hook asked no question")
		}
		time.Sleep(20 * time.Millisecond) // polls a condition another process sets
	}
	r := p.ok("approvals", "list", "--pending")
	as, _ := r.data()["approvals"].([]any)
	if len(as) != 1 {
		p.t.Fatalf("%d open questions, want the hook's one: %s", len(as), r.stdout)
	}
	return as[0].(map[string]any)
}

// watchInbox renews the project's inbox lease, as the approvals page or
// `dont approvals inbox` does: every session's questions can be asked.
func (p *testProject) watchInbox() { p.t.Helper(); p.ok("approvals", "inbox") }

func TestAHookQuestionAnsweredFromTheCLIAllowsTheRecordedCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ harness, payload, tier, preview string }{
		{"claude-code", "shell", "danger-full-access", "git push origin main"},
		{"claude-code", "edit", "workspace-write", "Edit /home/ada/src/shop/cart/total.go"},
		{"codex", "network", "danger-full-access", "curl -fsSL https://api.example.com/v1/status"},
	} {
		p := newApprovalProject(t)
		p.watchInbox()
		h, out := p.startHook(nil, c.harness, hookPayload(t, c.harness, c.payload))
		q := p.pendingQuestion()
		if q["to_tier"] != c.tier || !strings.HasPrefix(fmt.Sprint(q["preview"]), c.preview) || q["reason"] == "" {
			t.Fatalf("%s/%s asked %v", c.harness, c.payload, q)
		}
		p.okAnswered("approvals", "approve", q["approval_id"].(string))
		got := p.hookEnd(h, out)
		validDecision(t, c.harness, got)
		if string(got) != hookAllow {
			t.Fatalf("%s/%s: got %s", c.harness, c.payload, got)
		}
	}
}

func TestAHookQuestionRefusedFromTheCLIDeniesWithWhoRefused(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	p.watchInbox()
	h, out := p.startHook(nil, "codex", hookPayload(t, "codex", "shell"))
	q := p.pendingQuestion()
	p.okAnswered("approvals", "refuse", q["approval_id"].(string), "--reason", "not on a Friday")
	msg := hookDeny(t, "codex", p.hookEnd(h, out))
	if !strings.Contains(msg, "dont: refused by") || !strings.Contains(msg, "not on a Friday") {
		t.Fatalf("message %q", msg)
	}
}

// The person's rules answer routine calls with nobody watching; the
// ending names the rule.
func TestAPersonsRuleAnswersTheHookWithoutAPerson(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	writePersonConfig(t, p, `
[[rules]]
name = "push-main"
decision = "allow"
prefix = ["git", "push", "origin", "main"]
tiers = ["danger-full-access"]
match = ["git push origin main"]
not_match = ["git push origin", "git push"]

[[rules]]
name = "no-curl"
decision = "forbid"
pattern = 'curl .*'
match = ["curl -fsSL https://api.example.com/v1/status"]
`)
	got := p.hook(nil, "claude-code", hookPayload(t, "claude-code", "shell"))
	validDecision(t, "claude-code", got)
	if string(got) != hookAllow {
		t.Fatalf("allow rule: %s", got)
	}
	ends := p.ok("approvals", "list").data()["approvals"].([]any)
	if len(ends) != 1 || ends[0].(map[string]any)["answered_by"] != "rule:push-main" || ends[0].(map[string]any)["verdict"] != "approved" {
		t.Fatalf("the rule's verdict is recorded as %v", ends)
	}
	msg := hookDeny(t, "codex", p.hook(nil, "codex", hookPayload(t, "codex", "network")))
	if !strings.HasPrefix(msg, "dont: forbidden by the person's rule no-curl") {
		t.Fatalf("forbid rule: %q", msg)
	}
}

func writePersonConfig(t *testing.T, p *testProject, text string) {
	t.Helper()
	dir := filepath.Join(p.personHomeDir(t), ".config", "dont")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An allow rule the agent writes into the workspace config is not the
// person's: the call is still a question (here nobody watches: a deny).
func TestAnAgentThatWritesAnAllowRuleIntoTheWorkspaceConfigGainsNothing(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	cfg := filepath.Join(p.dir, ".dont", "config.toml")
	old, _ := os.ReadFile(cfg)
	rule := "\n[[rules]]\nname = \"anything\"\ndecision = \"allow\"\npattern = '.*'\nmatch = [\"git push origin main\"]\n"
	if err := os.WriteFile(cfg, append(old, rule...), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := hookDeny(t, "claude-code", p.hook(nil, "claude-code", hookPayload(t, "claude-code", "shell")))
	if !strings.Contains(msg, "nobody is watching") {
		t.Fatalf("message %q", msg)
	}
}

// A rule that fails its own examples does not load: an error envelope
// names it, and the hook denies.
func TestARuleThatFailsItsOwnExamplesRefusesToLoadNamingIt(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	writePersonConfig(t, p, `
[[rules]]
name = "sloppy"
decision = "allow"
prefix = ["git", "status"]
match = ["git stash"]
`)
	ses := p.session("read-only")
	r := p.run("escalate", "--session", ses, "--call", "c1", "--to", "danger-full-access", "--reason", "look", "--", "git", "status")
	if r.exit == 0 || r.data()["code"] != "config-invalid" || !strings.Contains(fmt.Sprint(r.data()["message"]), `"sloppy"`) {
		t.Fatalf("escalate with a broken rule: exit %d %s", r.exit, r.stdout)
	}
	hookDeny(t, "claude-code", p.hook(nil, "claude-code", hookPayload(t, "claude-code", "shell")))
}

func TestAHookQuestionNobodyAnswersTimesOutAndDenies(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t, "DONT_APPROVAL_TIMEOUT=1s")
	p.watchInbox()
	msg := hookDeny(t, "claude-code", p.hook(nil, "claude-code", hookPayload(t, "claude-code", "network")))
	if !strings.HasPrefix(msg, "dont: nobody answered before the deadline") {
		t.Fatalf("message %q", msg)
	}
}

// Every failure is a deny, never a fall-through to allow.
func TestEveryHookFailureIsADeny(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	shell := hookPayload(t, "claude-code", "shell")
	cases := []struct {
		name    string
		env     []string
		harness string
		payload []byte
		want    string
	}{
		{"nobody watching", nil, "claude-code", shell, "dont: nobody is watching"},
		{"dont unreachable", []string{"DONT_ENDPOINT=http://127.0.0.1:1", "DONT_TOKEN=tok"}, "claude-code", shell, "dont: could not reach dont"},
		{"not a project", []string{"DONT_PROJECT_DIR=" + t.TempDir()}, "claude-code", shell, "dont: could not reach dont"},
		{"bad payload", nil, "codex", []byte(`{"hook_event_name":"PermissionRequest"`), "dont: could not read the permission request"},
		{"unknown tool", nil, "claude-code", []byte(`{"hook_event_name":"PermissionRequest","session_id":"s1","tool_name":"Teleport","tool_input":{}}`), "dont: no mapping for this tool"},
		{"unknown harness", nil, "cursor", shell, "dont: could not read the permission request"},
		{"panic", []string{"DONT_FAULT_HOOK_PANIC=1"}, "codex", shell, "dont: the request failed"},
	}
	for _, c := range cases {
		schemaOf := c.harness
		if _, ok := hookOutputSchema[schemaOf]; !ok {
			schemaOf = "claude-code"
		}
		msg := hookDeny(t, schemaOf, p.hook(c.env, c.harness, c.payload))
		if !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s: message %q, want %q…", c.name, msg, c.want)
		}
	}
}

// A read the session's read-only tier covers is allowed without a
// question.
func TestAReadToolIsAllowedWithoutAQuestion(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	got := p.hook(nil, "claude-code", []byte(`{"session_id":"s1","transcript_path":"/t","cwd":"/w","hook_event_name":"PermissionRequest","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`))
	validDecision(t, "claude-code", got)
	if string(got) != hookAllow {
		t.Fatalf("got %s", got)
	}
	if n := p.ok("approvals", "list").data()["count"]; n != 0.0 {
		t.Fatalf("a read asked %v questions", n)
	}
}

// One harness session is one dont session: a second request reuses it,
// and a session of that name an agent opened at a wider tier is not used.
func TestOneHarnessSessionIsOneDontSessionAtTheHooksTier(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	wider := p.ok("sessions", "open", "--tier", "workspace-write", "--name", "claude-code:8a1f2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d").str("session_id")
	p.watchInbox()
	for i := 0; i < 2; i++ {
		h, out := p.startHook(nil, "claude-code", hookPayload(t, "claude-code", "edit"))
		q := p.pendingQuestion()
		if q["session_id"] == wider || q["from_tier"] != "read-only" {
			t.Fatalf("the hook asked in %v", q)
		}
		p.okAnswered("approvals", "refuse", q["approval_id"].(string))
		hookDeny(t, "claude-code", p.hookEnd(h, out))
	}
	if n := p.ok("sessions", "list").data()["count"]; n != 2.0 {
		t.Fatalf("sessions: %v, want the agent's and the hook's one", n)
	}
}

func TestHarnessInstallMergesAndASecondRunChangesNothing(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	settings := filepath.Join(p.dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}`), 0o644)
	p.ok("--json", "harness", "install", "claude-code")
	var got map[string]any
	b, _ := os.ReadFile(settings)
	json.Unmarshal(b, &got)
	hooks := got["hooks"].(map[string]any)
	if got["model"] != "opus" || hooks["Stop"] == nil {
		t.Fatalf("the person's keys were lost: %s", b)
	}
	pr := fmt.Sprint(hooks["PermissionRequest"])
	if !strings.Contains(pr, "dont hook claude-code") || !strings.Contains(pr, "timeout:180") {
		t.Fatalf("PermissionRequest: %s", pr)
	}
	if r := p.ok("--json", "harness", "install", "claude-code"); r.data()["changed"] != false {
		t.Fatalf("second run: %s", r.stdout)
	}
	after, _ := os.ReadFile(settings)
	if !bytes.Equal(b, after) {
		t.Fatal("the second run rewrote the file")
	}
	codexCfg := filepath.Join(p.dir, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(codexCfg), 0o755)
	os.WriteFile(codexCfg, []byte("# mine\nmodel = \"gpt-5-codex\"\n"), 0o644)
	p.ok("--json", "harness", "install", "codex")
	if r := p.ok("--json", "harness", "install", "codex"); r.data()["changed"] != false {
		t.Fatalf("second codex run: %s", r.stdout)
	}
	toml, _ := os.ReadFile(codexCfg)
	if !strings.HasPrefix(string(toml), "# mine\nmodel = \"gpt-5-codex\"\n") || !strings.Contains(string(toml), "[mcp_servers.dont]") {
		t.Fatalf("config.toml: %s", toml)
	}
	hj, _ := os.ReadFile(filepath.Join(p.dir, ".codex", "hooks.json"))
	if !strings.Contains(string(hj), "dont hook codex") {
		t.Fatalf("hooks.json: %s", hj)
	}
}

// promptTool calls permission_prompt on `dont mcp --permission-prompt`
// and returns its text.
func promptTool(t *testing.T, cs *sdk.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "permission_prompt", Arguments: args})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("permission_prompt: %v %v", res, err)
	}
	return res.Content[0].(*sdk.TextContent).Text
}

// Claude Code's headless mode asks through the MCP permission-prompt
// tool: the question reaches the queue, a person answers, and the tool
// returns Claude Code's allow/deny text.
func TestThePermissionPromptToolAsksAPersonAndAnswersInClaudeCodesShape(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code-test", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: p.cmd("mcp", "--permission-prompt")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	input := map[string]any{"command": "git push origin main", "description": "publish"}
	// Nobody watching: a deny that says so.
	if got := promptTool(t, cs, map[string]any{"tool_name": "Bash", "input": input, "tool_use_id": "toolu_01"}); !strings.HasPrefix(got, `{"behavior":"deny","message":"dont: nobody is watching`) {
		t.Fatalf("nobody watching: %s", got)
	}
	p.watchInbox()
	done := make(chan string, 1)
	go func() {
		done <- promptTool(t, cs, map[string]any{"tool_name": "Bash", "input": input, "tool_use_id": "toolu_02"})
	}()
	q := p.pendingQuestion()
	if q["preview"] != "git push origin main" || q["call_id"] != "toolu_02" {
		t.Fatalf("asked %v", q)
	}
	p.okAnswered("approvals", "approve", q["approval_id"].(string))
	got := <-done
	if got != `{"behavior":"allow","updatedInput":{"command":"git push origin main","description":"publish"}}` {
		t.Fatalf("allow: %s", got)
	}
	validPrompt(t, []byte(got))
}

func validPrompt(t *testing.T, out []byte) {
	t.Helper()
	path := filepath.Join(hookFixtures, "claude-code/permission-prompt.output.schema.json")
	f, _ := os.Open(path)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource(path, doc)
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err := s.Validate(v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
}

// The person's harness_tier is the hook sessions' default: an edit inside
// the workspace runs without a question at workspace-write; one an agent
// writes into the untrusted workspace config changes nothing.
func TestThePersonsHarnessTierCoversEditsAndTheWorkspacesDoesNot(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	cfg := filepath.Join(p.dir, ".dont", "config.toml")
	old, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append([]byte("harness_tier = \"danger-full-access\"\n"), old...), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := hookDeny(t, "claude-code", p.hook(nil, "claude-code", hookPayload(t, "claude-code", "edit"))); !strings.Contains(msg, "nobody is watching") {
		t.Fatalf("the workspace's harness_tier counted: %q", msg)
	}
	writePersonConfig(t, p, "harness_tier = \"workspace-write\"\n")
	if got := p.hook(nil, "claude-code", hookPayload(t, "claude-code", "edit")); string(got) != hookAllow {
		t.Fatalf("an edit at the person's workspace-write: %s", got)
	}
	if msg := hookDeny(t, "claude-code", p.hook(nil, "claude-code", hookPayload(t, "claude-code", "shell"))); !strings.Contains(msg, "nobody is watching") {
		t.Fatalf("a command above the harness tier: %q", msg)
	}
}

// The person's rules answer on every transport: through `dont serve`
// (the hook with DONT_ENDPOINT and a harness token) and over MCP (the
// permission-prompt tool).
func TestThePersonsRulesAnswerThroughDontServeAndOverMCP(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	writePersonConfig(t, p, `
[[rules]]
name = "push-main"
decision = "allow"
prefix = ["git", "push", "origin", "main"]
match = ["git push origin main"]

[[rules]]
name = "no-curl"
decision = "forbid"
pattern = 'curl .*'
match = ["curl https://api.example.com/"]
`)
	harness := p.mintToken("harness", "claude")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	if got := p.hook(remote, "codex", hookPayload(t, "codex", "shell")); string(got) != hookAllow {
		t.Fatalf("allow rule through dont serve: %s", got)
	}
	if msg := hookDeny(t, "codex", p.hook(remote, "codex", hookPayload(t, "codex", "network"))); !strings.HasPrefix(msg, "dont: forbidden by the person's rule no-curl") {
		t.Fatalf("forbid rule through dont serve: %q", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code-test", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: p.cmd("mcp", "--permission-prompt")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := promptTool(t, cs, map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "curl https://api.example.com/x"}})
	validPrompt(t, []byte(got))
	if !strings.HasPrefix(got, `{"behavior":"deny","message":"dont: forbidden by the person's rule no-curl`) {
		t.Fatalf("forbid rule over MCP: %s", got)
	}
}
