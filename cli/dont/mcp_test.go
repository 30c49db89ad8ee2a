package main

// `dont mcp` driven by the official SDK's client over a subprocess.

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type mcpSession struct {
	t  *testing.T
	cs *sdk.ClientSession
}

func (p *testProject) mcp() *mcpSession {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	p.t.Cleanup(cancel)
	client := sdk.NewClient(&sdk.Implementation{Name: "dont-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: p.cmd("mcp")}, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return &mcpSession{t: p.t, cs: cs}
}

// mcpResult is one tool result: the envelope from its text content, and
// the raw bytes of that text.
type mcpResult struct {
	env     map[string]any
	text    []byte
	isError bool
}

func (r mcpResult) data() map[string]any { d, _ := r.env["data"].(map[string]any); return d }

func (s *mcpSession) call(name string, args map[string]any) mcpResult {
	s.t.Helper()
	res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		s.t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		s.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	r := mcpResult{text: []byte(text.Text), isError: res.IsError}
	if err := json.Unmarshal(r.text, &r.env); err != nil {
		s.t.Fatalf("%s: text content is not one JSON envelope: %q", name, text.Text)
	}
	// The structured content is the same envelope.
	var structured map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &structured); err != nil || !reflect.DeepEqual(structured, r.env) {
		s.t.Fatalf("%s: structured content differs from the text envelope:\n%s\n%s", name, b, text.Text)
	}
	if r.isError == (r.env["ok"] == true) {
		s.t.Fatalf("%s: isError %v for ok=%v", name, r.isError, r.env["ok"])
	}
	return r
}

func TestMCPServesEveryToolWithSchemasFromTheRegistry(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	list, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	byName := map[string]*sdk.Tool{}
	for _, tl := range list.Tools {
		got = append(got, tl.Name)
		byName[tl.Name] = tl
	}
	for _, tl := range tools.All() {
		if tl.ForPrincipal(auth.Harness("")) { // an MCP client is a harness
			want = append(want, mcp.ToolName(tl.Name))
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MCP tools %v, the registry's harness tools %v", got, want)
	}
	for _, tl := range mcp.Tools() {
		schema, _ := json.Marshal(byName[mcp.ToolName(tl.Name)].InputSchema)
		wantSchema, _ := json.Marshal(tl.ArgsSchema(false, false)) // no skip parameters to teach a model
		if !jsonSame(schema, wantSchema) {
			t.Errorf("%s: schema %s, want %s", tl.Name, schema, wantSchema)
		}
	}
	assume := byName["assume"].InputSchema.(map[string]any)
	if _, exposed := assume["properties"].(map[string]any)["mode"]; exposed {
		t.Fatal("the internal mode parameter is exposed over MCP")
	}
	if req := assume["required"].([]any); len(req) != 1 || req[0] != "id" {
		t.Fatalf("assume requires %v", req)
	}
	if ro := byName["show"].Annotations; ro == nil || !ro.ReadOnlyHint {
		t.Fatalf("show annotations %+v", ro)
	}
}

func jsonSame(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestMCPConcludeAssumeDismissSpawns(t *testing.T) {
	t.Parallel()
	p := newProject(t, "DONT_HARNESS=0") // MCP forces harness mode whatever the environment says
	s := p.mcp()
	c := s.call("conclude", map[string]any{"statement": "water boils at 100 C at sea level", "ref": []string{"https://example.org/boiling"}})
	if c.env["envelope_kind"] != "claim" || c.data()["status"] != "unverified" {
		t.Fatalf("conclude: %s", c.text)
	}
	id := c.data()["id"].(string)

	a := s.call("assume", map[string]any{"id": id})
	if a.env["envelope_kind"] != "spawn_request" || a.env["meta"].(map[string]any)["mode"] != "harness" {
		t.Fatalf("assume: %s", a.text)
	}
	rid := a.data()["request_id"].(string)
	if cb := a.data()["callback"].(map[string]any); cb["request_id"] != rid {
		t.Fatalf("callback %v", cb)
	}

	d := s.call("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/boiling"}, "request_id": rid})
	res := d.data()["resolution"].(map[string]any)
	if d.data()["status"] != "verified" || res["outcome"] != "callback-applied" || res["applied"] != true {
		t.Fatalf("dismiss: %s", d.text)
	}
	again := s.call("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/boiling"}, "request_id": rid})
	if w := again.env["warnings"].([]any); len(w) != 1 || w[0].(map[string]any)["code"] != "spawn-duplicate" {
		t.Fatalf("duplicate callback: %s", again.text)
	}

	sp := s.call("spawns", map[string]any{"all": true})
	list := sp.data()["spawns"].([]any)
	if sp.data()["count"] != 1.0 || list[0].(map[string]any)["outcome"] != "callback-applied" {
		t.Fatalf("spawns: %s", sp.text)
	}

	// The same store as the CLI.
	if st := p.ok("show", id).str("status"); st != "verified" {
		t.Fatalf("CLI sees %s", st)
	}
}

func TestMCPErrorsAreEnvelopesWithIsError(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"dismiss", map[string]any{"id": "claim:01HX05A9K8VP0000000000000A", "evidence": []string{"doi:10.1000/182"}, "request_id": "spawn:01HX05A9K8VP0000000000000A"}, "spawn-not-found"},
		{"show", map[string]any{"id": "claim:nope"}, "invalid-id"},
		{"trust", map[string]any{"id": "claim:01HX05A9K8VP0000000000000A"}, "usage"},
		{"assume", map[string]any{"id": "claim:01HX05A9K8VP0000000000000A", "mode": "direct"}, "usage"},
		{"guess", map[string]any{"question": "q?", "n": 0}, "invalid-argument"},
	} {
		r := s.call(tc.tool, tc.args)
		if !r.isError || r.env["envelope_kind"] != "error" || r.data()["code"] != tc.code {
			t.Fatalf("%s %v: %s", tc.tool, tc.args, r.text)
		}
		if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
			t.Fatalf("%s: empty remediation", tc.tool)
		}
	}
	// Outside a project every call is an error envelope too, and the server keeps serving.
	outside := (&testProject{t: t, dir: t.TempDir()}).mcp()
	for range 2 {
		if r := outside.call("list", nil); !r.isError || r.data()["code"] != "not-initialised" {
			t.Fatalf("outside a project: %s", r.text)
		}
	}
}

// The transport-agnostic contract: the spawn request's data is the same
// bytes on CLI stdout, in the MCP tool result and in the HTTP API's
// response, for the same stored spawn, whichever transport issued it —
// but for the prompt's callback instructions, which over MCP name the MCP
// tools to call (mcp.PromptText) instead of shell commands. A re-read
// (show spawn:…) is the payload as issued without its callback token,
// which is shown once, at issue (docs/security.md).
func TestSpawnRequestPayloadIsByteIdenticalAcrossCLIMCPAndHTTP(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	s := p.mcp()
	viaHTTP := func(tool string, args map[string]any) []byte {
		t.Helper()
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args})
		req, _ := http.NewRequest(http.MethodPost, srv.endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+harness)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	overMCP := map[int]bool{1: true} // the second issue is over MCP
	for i, issue := range []func() (string, []byte){
		func() (string, []byte) { // issued on the CLI
			id := p.ok("conclude", "water boils at 100 C at sea level & <ok>").str("id")
			r := p.ok("assume", id, "--json")
			return r.str("request_id"), rawData(t, []byte(r.stdout))
		},
		func() (string, []byte) { // issued over MCP
			id := s.call("conclude", map[string]any{"statement": "a term's \"quoted\" <html> & unicode é"}).data()["id"].(string)
			r := s.call("overlook", map[string]any{"id": id})
			return r.data()["request_id"].(string), rawData(t, r.text)
		},
		func() (string, []byte) { // issued over HTTP
			var env struct {
				Data struct {
					RequestID string `json:"request_id"`
				} `json:"data"`
			}
			b := viaHTTP("guess", map[string]any{"question": "which <driver>?", "n": 2, "temperature": 0.7})
			json.Unmarshal(b, &env)
			return env.Data.RequestID, rawData(t, b)
		},
	} {
		rid, issued := issue()
		cli := rawData(t, []byte(p.ok("show", rid, "--json").stdout))
		viaMCP := rawData(t, s.call("show", map[string]any{"id": rid}).text)
		over := rawData(t, viaHTTP("show", map[string]any{"id": rid}))
		if !bytes.Contains(issued, []byte(`"token":"dontcb_`)) {
			t.Fatalf("the payload carries no callback token: %s", issued)
		}
		reread := callbackToken.ReplaceAll(issued, nil)
		if overMCP[i] {
			reread = cliPrompt(t, reread, cli)
		}
		if !bytes.Equal(cli, reread) || !bytes.Equal(viaMCP, mcpPrompt(t, reread)) || !bytes.Equal(over, reread) {
			t.Fatalf("spawn request %s differs across transports:\nissued %s\nCLI    %s\nMCP    %s\nHTTP   %s", rid, issued, cli, viaMCP, over)
		}
	}
}

// mcpPrompt is a spawn request's data with its prompt as MCP renders it.
func mcpPrompt(t *testing.T, data []byte) []byte {
	t.Helper()
	var d struct {
		Context struct {
			Prompt string `json:"prompt"`
		} `json:"context"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return bytes.Replace(data, jsonText(t, d.Context.Prompt), jsonText(t, mcp.PromptText(d.Context.Prompt)), 1)
}

// cliPrompt is data issued over MCP with the prompt of cli (the same
// spawn read on the CLI), once that prompt renders over MCP as data's.
func cliPrompt(t *testing.T, data, cli []byte) []byte {
	t.Helper()
	var d, c struct {
		Context struct {
			Prompt string `json:"prompt"`
		} `json:"context"`
	}
	if json.Unmarshal(data, &d) != nil || json.Unmarshal(cli, &c) != nil {
		t.Fatalf("not spawn requests: %s %s", data, cli)
	}
	if mcp.PromptText(c.Context.Prompt) != d.Context.Prompt {
		t.Fatalf("the prompt issued over MCP is not the CLI's prompt rendered for MCP:\n%s\n%s", d.Context.Prompt, c.Context.Prompt)
	}
	return bytes.Replace(data, jsonText(t, d.Context.Prompt), jsonText(t, c.Context.Prompt), 1)
}

func jsonText(t *testing.T, s string) []byte {
	t.Helper()
	b, err := envelope.MarshalData(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// callbackToken is a payload's callback token member.
var callbackToken = regexp.MustCompile(`,"token":"dontcb_[^"]*"`)

// rawData is the envelope's data member, byte for byte.
func rawData(t *testing.T, envelope []byte) []byte {
	t.Helper()
	var env struct {
		Kind string          `json:"envelope_kind"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(envelope, &env); err != nil || env.Kind != "spawn_request" {
		t.Fatalf("not a spawn_request envelope: %s", envelope)
	}
	return env.Data
}

func TestMCPExitsZeroWhenTheClientCloses(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.cmd("mcp")
	c.Stdin = bytes.NewReader(nil)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Run(); err != nil {
		t.Fatalf("dont mcp with stdin closed: %v; stdout %q", err, out.String())
	}
}
