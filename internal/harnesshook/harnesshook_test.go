package harnesshook

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func schema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("%s does not validate: %v", b, err)
	}
}

var schemas = map[Harness][2]string{
	ClaudeCode: {"testdata/claude-code/permission-request.input.schema.json", "testdata/claude-code/permission-request.output.schema.json"},
	Codex:      {"testdata/codex/permission-request.command.input.schema.json", "testdata/codex/permission-request.command.output.schema.json"},
}

func fixture(t *testing.T, h Harness, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", string(h), name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordedPayloadsMatchTheHarnessesInputSchemasAndMapToTheDocumentedTiers(t *testing.T) {
	cases := []struct {
		h                  Harness
		name, tier, prefix string
	}{
		{ClaudeCode, "shell", TierDangerFullAccess, "git push origin main"},
		{ClaudeCode, "edit", TierWorkspaceWrite, "Edit /home/ada/src/shop/cart/total.go\n- return sum\n+ return sum - discount"},
		{ClaudeCode, "network", TierDangerFullAccess, "WebFetch https://api.example.com/v1/status"},
		{Codex, "shell", TierDangerFullAccess, "git push origin main"},
		{Codex, "network", TierDangerFullAccess, "curl -fsSL https://api.example.com/v1/status"},
	}
	for _, c := range cases {
		raw := fixture(t, c.h, c.name)
		validate(t, schema(t, schemas[c.h][0]), raw)
		r, err := Parse(c.h, raw)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.h, c.name, err)
		}
		if r.Tier != c.tier || !strings.HasPrefix(r.Preview, c.prefix) || r.Reason == "" || !strings.HasPrefix(r.SessionName, string(c.h)+":") {
			t.Errorf("%s/%s: got %+v", c.h, c.name, r)
		}
	}
}

func TestTheModelsJustificationIsTheReasonAndASubagentIsNamed(t *testing.T) {
	r, err := Parse(Codex, fixture(t, Codex, "shell"))
	if err != nil || r.Reason != "Push the release commit so CI can tag it" {
		t.Fatalf("got %q %v", r.Reason, err)
	}
	r, err = Parse(ClaudeCode, fixture(t, ClaudeCode, "network"))
	if err != nil || r.Subagent != "a7c1e2d3" || !strings.Contains(r.Reason, "sub-agent a7c1e2d3") {
		t.Fatalf("got %+v %v", r, err)
	}
}

func TestAnEditOutsideTheWorkspaceAsksForFullAccess(t *testing.T) {
	for _, path := range []string{"/home/ada/.bashrc", "/home/ada/src/shop/../../.ssh/config", "../other/x.go", "/home/ada/src/shopping/x"} {
		in, _ := json.Marshal(map[string]string{"file_path": path, "old_string": "a", "new_string": "b"})
		r, err := Map(ClaudeCode, "Edit", in, "/home/ada/src/shop")
		if err != nil || r.Tier != TierDangerFullAccess {
			t.Errorf("%s: got %s %v", path, r.Tier, err)
		}
	}
	in, _ := json.Marshal(map[string]string{"file_path": "cart/x.go", "content": "package cart"})
	if r, err := Map(ClaudeCode, "Write", in, "/home/ada/src/shop"); err != nil || r.Tier != TierWorkspaceWrite {
		t.Errorf("relative path inside: got %s %v", r.Tier, err)
	}
}

func TestEveryBadPayloadIsAProblemAndItsDecisionIsADeny(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":        `not json`,
		"another event":   `{"hook_event_name":"Stop","session_id":"s"}`,
		"no session":      `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"spaced session":  `{"hook_event_name":"PermissionRequest","session_id":"a b","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"no tool":         `{"hook_event_name":"PermissionRequest","session_id":"s","tool_input":{}}`,
		"unknown tool":    `{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Teleport","tool_input":{}}`,
		"no command":      `{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Bash","tool_input":{}}`,
		"input not obj":   `{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Bash","tool_input":"ls"}`,
		"too long to see": `{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Bash","tool_input":{"command":"` + strings.Repeat("x", MaxPreview+1) + `"}}`,
	} {
		for h, s := range schemas {
			_, err := Parse(h, []byte(raw))
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("%s %s: got %v, want a problem", h, name, err)
			}
			out := Decision(EventOf([]byte(raw)), Outcome{Ending: p.Kind, Detail: p.Message})
			validate(t, schema(t, s[1]), out)
			if !bytes.Contains(out, []byte(`"behavior":"deny"`)) || !bytes.Contains(out, []byte(`"message":"dont: `)) {
				t.Errorf("%s %s: %s", h, name, out)
			}
		}
	}
}

func TestOnlyAnApprovalAllowsAndEveryDecisionMatchesTheHarnessOutputSchema(t *testing.T) {
	for _, e := range []Ending{Approved, Covered, Refused, RuleForbid, TimedOut, Cancelled, NoSubscriber, Unreachable, BadPayload, UnknownTool, TooLong, Failed, "whatever"} {
		for h, s := range schemas {
			out := Decision(EventPermissionRequest, Outcome{Ending: e, ApprovalID: "apr:01", AnsweredBy: "ada"})
			validate(t, schema(t, s[1]), out)
			allows := bytes.Contains(out, []byte(`"behavior":"allow"`))
			if allows != (e == Approved || e == Covered) {
				t.Errorf("%s %s: %s", h, e, out)
			}
		}
	}
}

func TestTheExactDecisionJSON(t *testing.T) {
	got := string(Decision(EventPermissionRequest, Outcome{Ending: Approved, ApprovalID: "apr:1", AnsweredBy: "ada"}))
	if want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}` + "\n"; got != want {
		t.Errorf("allow: got %s", got)
	}
	got = string(Decision(EventPermissionRequest, Outcome{Ending: TimedOut, ApprovalID: "apr:1"}))
	want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"dont: nobody answered before the deadline, so the call is denied. Retry later only if the person asks you to (apr:1)"}}}` + "\n"
	if got != want {
		t.Errorf("timeout: got %s", got)
	}
}

func TestThePermissionPromptToolResultMatchesClaudeCodesShape(t *testing.T) {
	s := schema(t, "testdata/claude-code/permission-prompt.output.schema.json")
	in := json.RawMessage(`{"command":"git push"}`)
	allow := PromptResult(Outcome{Ending: Approved}, in)
	validate(t, s, allow)
	if string(allow) != `{"behavior":"allow","updatedInput":{"command":"git push"}}`+"\n" {
		t.Errorf("got %s", allow)
	}
	deny := PromptResult(Outcome{Ending: Refused, AnsweredBy: "ada"}, in)
	validate(t, s, deny)
	if !strings.HasPrefix(string(deny), `{"behavior":"deny","message":"dont: refused by ada.`) {
		t.Errorf("got %s", deny)
	}
}

func TestAPreToolUsePayloadGetsAPermissionDecision(t *testing.T) {
	raw := []byte(`{"session_id":"s1","transcript_path":"/t","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"toolu_9"}`)
	r, err := Parse(ClaudeCode, raw)
	if err != nil || r.CallID != "toolu_9" {
		t.Fatalf("got %+v %v", r, err)
	}
	got := string(Decision(EventOf(raw), Outcome{Ending: TimedOut}))
	if !strings.HasPrefix(got, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"dont: nobody answered`) {
		t.Fatalf("got %s", got)
	}
}
