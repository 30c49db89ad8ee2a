package main

// `dont mcp` driven by a foreign client: the official MCP TypeScript SDK,
// through testdata/mcpclient/client.mjs (its own Node project, installed
// with `npm ci --prefix cli/dont/testdata/mcpclient`; never from here).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/mcp"
)

const mcpClientDir = "testdata/mcpclient"

// tsSummary is the script's one JSON line on stdout.
type tsSummary struct {
	OK       bool     `json:"ok"`
	Failures []string `json:"failures"`
	Checks   int      `json:"checks"`
	SDK      string   `json:"sdk"`
	Server   struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools           []string `json:"tools"`
	ApproverOrAdmin []string `json:"approver_or_admin_tools"`
	SchemasWithSkip []string `json:"schemas_with_skip"`
	Session         struct {
		Claim          string   `json:"claim"`
		RequestID      string   `json:"request_id"`
		Mode           string   `json:"mode"`
		AllowedTools   []string `json:"allowed_tools"`
		ForbiddenTools []string `json:"forbidden_tools"`
		DismissOK      bool     `json:"dismiss_ok"`
		Status         string   `json:"status"`
		Outcome        string   `json:"outcome"`
	} `json:"session"`
	Calls map[string]struct {
		Rejected bool   `json:"rejected"`
		How      string `json:"how"`
		Message  string `json:"message"`
	} `json:"calls"`
	IgnoreSkip struct {
		IsError     bool   `json:"isError"`
		Code        string `json:"code"`
		StatusAfter string `json:"status_after"`
	} `json:"ignore_skip_confirmation"`
	EscalateAfterFrames struct {
		IsError bool   `json:"isError"`
		Code    string `json:"code"`
	} `json:"escalate_after_frames"`
	Resources           []string `json:"resources"`
	ResourceUpdates     int      `json:"resource_updates"`
	WithoutOutputSchema []string `json:"tools_without_output_schema"`
	Validated           int      `json:"validated"`
	AnnotationKinds     int      `json:"annotation_kinds"`
	Elicitation         struct {
		Asked              int    `json:"asked"`
		MessageNamesCall   bool   `json:"message_names_call"`
		DeclinedCode       string `json:"declined_code"`
		DeclinedIsError    bool   `json:"declined_is_error"`
		StatusAfterDecline string `json:"status_after_decline"`
		AcceptedKind       string `json:"accepted_kind"`
		AcceptedStatus     string `json:"accepted_status"`
	} `json:"elicitation"`
}

// tsSDKMissing fails under CI (which installs the client) and skips
// elsewhere, with the command that installs it.
func tsSDKMissing(t *testing.T, why string) {
	t.Helper()
	msg := why + "; install the TypeScript MCP client with: npm ci --prefix cli/dont/testdata/mcpclient"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (.ci/run does this before the tests)")
	}
	t.Skip(msg + " (CI installs it and fails instead of skipping)")
}

// runTypeScriptClient runs the script against `dont mcp` in a fresh
// project and returns its summary; any failed expectation fails t with the
// script's own messages.
func runTypeScriptClient(t *testing.T, p *testProject) tsSummary {
	t.Helper()
	node, pinned := tsSDK(t)
	script, err := filepath.Abs(filepath.Join(mcpClientDir, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := p.cmd("mcp") // the test environment: DONT_* cleared, the schema cache in the project
	c := exec.CommandContext(ctx, node, script, binary, p.dir)
	c.Dir, c.Env, c.SysProcAttr = base.Dir, base.Env, base.SysProcAttr
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	runErr := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("the TypeScript client timed out\nstderr:\n%s\nstdout:\n%s", errb.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var s tsSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("the TypeScript client printed no JSON summary (%v)\nstderr:\n%s\nstdout:\n%s", runErr, errb.String(), out.String())
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		t.Fatal(runErr)
	}
	if runErr != nil || !s.OK || len(s.Failures) > 0 {
		t.Fatalf("the TypeScript MCP SDK's expectations failed (%v):\n%s\nsummary: %s", runErr, errb.String(), lines[len(lines)-1])
	}
	if s.SDK != pinned {
		t.Fatalf("the script ran SDK %s, package.json pins %s", s.SDK, pinned)
	}
	t.Logf("@modelcontextprotocol/sdk %s: %d expectations held", s.SDK, s.Checks)
	return s
}

// tsSDK is node and the pinned SDK version, once the SDK installed is the
// one package.json pins (else it fails under CI and skips elsewhere).
func tsSDK(t *testing.T) (node, pinned string) {
	t.Helper()
	if testing.Short() {
		// Node and the SDK per test; .ci/run's MCP step runs every
		// TestTheTypeScriptMCPSDK test by name without -short and fails on
		// a skip.
		t.Skip("the TypeScript MCP SDK (Node) runs without -short: .ci/run's MCP step")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		tsSDKMissing(t, "node is not on PATH")
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(mcpClientDir, "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		t.Fatalf("%s/package.json: %v", mcpClientDir, err)
	}
	pinned = pkg.Dependencies["@modelcontextprotocol/sdk"]
	var installed struct {
		Version string `json:"version"`
	}
	b, err = os.ReadFile(filepath.Join(mcpClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	if err != nil {
		tsSDKMissing(t, mcpClientDir+"/node_modules has no @modelcontextprotocol/sdk")
	}
	if json.Unmarshal(b, &installed) != nil || installed.Version != pinned {
		tsSDKMissing(t, "the installed @modelcontextprotocol/sdk is "+installed.Version+", package.json pins "+pinned)
	}
	return node, pinned
}

func TestTheTypeScriptMCPSDKSeesOnlyHarnessToolsAndCannotApprove(t *testing.T) {
	p := newProject(t)
	s := runTypeScriptClient(t, p)
	if s.Server.Name != "dont" {
		t.Fatalf("server name %q", s.Server.Name)
	}
	var want []string
	for _, tl := range mcp.Tools() {
		want = append(want, mcp.ToolName(tl.Name))
	}
	sort.Strings(want)
	got := slices.Clone(s.Tools)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the TypeScript SDK lists %v, the registry's harness tools are %v", got, want)
	}
	for _, name := range got {
		if name == "approvals_approve" || name == "approvals_refuse" || strings.HasPrefix(name, "confirmations_") || strings.HasPrefix(name, "tokens_") {
			t.Errorf("the TypeScript SDK lists %s", name)
		}
	}
	if len(s.ApproverOrAdmin) != 0 || len(s.SchemasWithSkip) != 0 {
		t.Fatalf("approver/admin tools %v, schemas with skip_confirmation %v", s.ApproverOrAdmin, s.SchemasWithSkip)
	}
	for _, name := range []string{"approvals_approve", "tokens_create"} {
		r, ran := s.Calls[name]
		if !ran || !r.Rejected || !strings.Contains(r.Message, `unknown tool "`+name+`"`) {
			t.Fatalf("%s over the TypeScript SDK: %+v, want an unknown tool error", name, r)
		}
	}
	if r := s.IgnoreSkip; !r.IsError || r.Code != "usage" || r.StatusAfter != "unverified" {
		t.Fatalf("ignore with skip_confirmation: %+v", r)
	}
	if r := s.EscalateAfterFrames; !r.IsError || r.Code != "no-subscriber" {
		t.Fatalf("escalate after approvals_frames: %+v", r)
	}
	// Nothing was minted, and the store agrees with what the client saw.
	if n := p.ok("tokens", "list").data()["count"]; n != 0.0 {
		t.Fatalf("%v tokens exist", n)
	}
	// The escalation is on record as refused unasked, never as a question.
	apr := p.ok("approvals", "list").data()["approvals"].([]any)
	if len(apr) != 1 {
		t.Fatalf("%d approvals after one escalation", len(apr))
	}
	if a := apr[0].(map[string]any); a["verdict"] != "refused" || a["cause"] != "no-subscriber" || a["asked"] != false {
		t.Fatalf("the escalation is on record as %v", a)
	}
}

func TestTheTypeScriptMCPSDKRunsAHarnessSession(t *testing.T) {
	p := newProject(t, "DONT_HARNESS=0") // MCP is a harness whatever the environment says
	sum := runTypeScriptClient(t, p)
	s := sum.Session
	// The host subscribed to the pending spawns and was told of the new one.
	if !slices.Contains(sum.Resources, mcp.URIPendingSpawns) || !slices.Contains(sum.Resources, mcp.URIOpenQuestions) || sum.ResourceUpdates < 1 {
		t.Fatalf("resources %v, %d updates", sum.Resources, sum.ResourceUpdates)
	}
	if s.Mode != "harness" || !strings.HasPrefix(s.RequestID, "spawn:") {
		t.Fatalf("assume over the TypeScript SDK: %+v", s)
	}
	if !slices.Contains(s.AllowedTools, "dismiss") || !slices.Contains(s.ForbiddenTools, "approvals.approve") || !slices.Contains(s.ForbiddenTools, "tokens.create") {
		t.Fatalf("spawn context: allowed %v, forbidden %v", s.AllowedTools, s.ForbiddenTools)
	}
	for _, a := range s.AllowedTools {
		if slices.Contains(s.ForbiddenTools, a) {
			t.Fatalf("%s is both allowed and forbidden", a)
		}
	}
	if !s.DismissOK || s.Status != "verified" || s.Outcome != "callback-applied" {
		t.Fatalf("dismiss with the request id: %+v", s)
	}
	// The same store as the CLI (the script then locked the claim,
	// confirmed by elicitation).
	if st := p.ok("show", s.Claim).str("status"); st != "locked" {
		t.Fatalf("the CLI sees %s", st)
	}
	sp := p.ok("spawns", "--all").data()["spawns"].([]any)
	if len(sp) != 1 || sp[0].(map[string]any)["request_id"] != s.RequestID || sp[0].(map[string]any)["outcome"] != "callback-applied" {
		t.Fatalf("the CLI sees the spawns as %v", sp)
	}
}

// The TypeScript SDK reads an outputSchema on every tool and validates
// every structuredContent against it (callTool throws otherwise; the
// script checks again with the SDK's Ajv validator), sees non-uniform
// annotations, and confirms a gated lock through elicitation: declined,
// nothing runs and nothing is held; accepted, it runs once.
func TestTheTypeScriptMCPSDKValidatesOutputAndConfirmsByElicitation(t *testing.T) {
	p := newProject(t)
	s := runTypeScriptClient(t, p)
	if len(s.WithoutOutputSchema) != 0 || s.Validated < 10 || s.AnnotationKinds < 4 {
		t.Fatalf("without outputSchema %v, %d results validated, %d annotation kinds", s.WithoutOutputSchema, s.Validated, s.AnnotationKinds)
	}
	e := s.Elicitation
	if e.Asked != 2 || !e.MessageNamesCall {
		t.Fatalf("elicitation: %+v", e)
	}
	if !e.DeclinedIsError || e.DeclinedCode != "confirmation-declined" || e.StatusAfterDecline != "verified" {
		t.Fatalf("a declined lock: %+v", e)
	}
	if e.AcceptedKind != "claim" || e.AcceptedStatus != "locked" {
		t.Fatalf("an accepted lock: %+v", e)
	}
	// Nothing was held for an approver: the person confirmed it in the host.
	if n := p.ok("confirmations", "list", "--all").data()["count"]; n != 0.0 {
		t.Fatalf("%v held calls", n)
	}
	if st := p.ok("show", s.Session.Claim).str("status"); st != "locked" {
		t.Fatalf("the CLI sees %s", st)
	}
}

// tsWait is wait.mjs's summary line.
type tsWait struct {
	OK               bool   `json:"ok"`
	Error            string `json:"error"`
	SDK              string `json:"sdk"`
	DefaultTimeoutMS int    `json:"default_timeout_ms"`
	ElapsedMS        int    `json:"elapsed_ms"`
	MaxGapMS         int    `json:"max_gap_ms"`
	IsError          bool   `json:"is_error"`
	Progress         []struct {
		AtMS    int     `json:"at_ms"`
		Message string  `json:"message"`
		Total   float64 `json:"total"`
	} `json:"progress"`
	Envelope     map[string]any `json:"envelope"`
	ServerStderr string         `json:"server_stderr"`
	Question     map[string]any `json:"question"`
}

// approvalDelay is how long the person takes to answer: past the
// TypeScript SDK's default request timeout (60 s), inside the question's
// deadline (120 s).
const approvalDelay = 90 * time.Second

// The measured failure: the TypeScript SDK gives up on a blocking escalate
// after its default 60 s, then cancels, and the question is withdrawn
// while the person is still reading it. With progress reports (and the
// host resetting its timeout on them) it waits through a 90 s approval and
// returns the grant. Real time: under -short it is skipped; .ci/run runs
// it by name at full budget and fails on a skip.
func TestTheTypeScriptMCPSDKWaitsThroughANinetySecondApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("waits " + approvalDelay.String() + " for a person's answer in real time; .ci/run runs it at full budget")
	}
	t.Parallel()
	node, pinned := tsSDK(t)
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses) // the person's client reads the session: it can be answered
	script, err := filepath.Abs(filepath.Join(mcpClientDir, "wait.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvalDelay+time.Minute)
	defer cancel()
	base := p.cmd("mcp")
	c := exec.CommandContext(ctx, node, script, binary, p.dir, ses)
	c.Dir, c.Env, c.SysProcAttr = base.Dir, base.Env, base.SysProcAttr
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The question arrives on the session's frames (long-polled), and the
	// person answers it after approvalDelay.
	asked := time.Now()
	fs := p.frames("--session", ses, "--after", "0", "--wait", "30s")
	if len(fs) != 1 || fs[0]["kind"] != "approval_requested" {
		c.Wait()
		t.Fatalf("frames: %v\nstderr:\n%s\nstdout:\n%s", fs, errb.String(), out.String())
	}
	apr := fs[0]["request_id"].(string)
	<-time.After(time.Until(asked.Add(approvalDelay)))
	p.okAnswered("approvals", "approve", apr)
	runErr := c.Wait()
	var s tsWait
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &s); err != nil {
		t.Fatalf("wait.mjs printed no JSON summary (%v)\nstderr:\n%s\nstdout:\n%s", runErr, errb.String(), out.String())
	}
	if runErr != nil || !s.OK {
		t.Fatalf("the TypeScript SDK did not wait through the approval (%v): %s\nserver stderr:\n%s", runErr, s.Error, s.ServerStderr)
	}
	if s.SDK != pinned || s.DefaultTimeoutMS != 60000 {
		t.Fatalf("SDK %s with default timeout %d ms; want %s with 60000", s.SDK, s.DefaultTimeoutMS, pinned)
	}
	if s.ElapsedMS < int(approvalDelay.Milliseconds())-5000 {
		t.Fatalf("escalate returned after %d ms, before the person answered", s.ElapsedMS)
	}
	if s.IsError || s.Envelope["envelope_kind"] != "escalation" || s.Envelope["data"].(map[string]any)["granted_tier"] != "workspace-write" {
		t.Fatalf("escalate returned %v", s.Envelope)
	}
	// Progress came at once, named the question and the time left, and
	// never left a gap the host's timeout would notice.
	if len(s.Progress) < int(approvalDelay/(15*time.Second)) || s.Progress[0].AtMS > 2000 || s.MaxGapMS > 15000 {
		t.Fatalf("%d progress reports, the first after %d ms, the longest gap %d ms", len(s.Progress), s.Progress[0].AtMS, s.MaxGapMS)
	}
	last := s.Progress[len(s.Progress)-1].Message
	if !strings.Contains(last, apr) || !strings.Contains(last, " left (until ") {
		t.Fatalf("the last progress report says %q", last)
	}
	t.Logf("@modelcontextprotocol/sdk %s waited %d ms with %d progress reports (longest gap %d ms)", s.SDK, s.ElapsedMS, len(s.Progress), s.MaxGapMS)
	if a := p.ok("approvals", "show", apr); a.str("verdict") != "approved" {
		t.Fatalf("the question ended %s", a.str("verdict"))
	}
}

// A host that does not reset its timeout gives up on a waiting escalate
// and cancels it (the measured failure, with a 2 s timeout for the SDK's
// 60 s): the question ends cancelled because the asking client went away,
// and says so to the person — not as a silent withdrawal.
func TestTheTypeScriptMCPSDKGivingUpEndsTheQuestionAsTheAskingClientGone(t *testing.T) {
	node, _ := tsSDK(t)
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	script, err := filepath.Abs(filepath.Join(mcpClientDir, "wait.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := p.cmd("mcp")
	c := exec.CommandContext(ctx, node, script, binary, p.dir, ses, "2000")
	c.Dir, c.Env, c.SysProcAttr = base.Dir, base.Env, base.SysProcAttr
	var errb bytes.Buffer
	c.Stderr = &errb
	out, _ := c.Output()
	var s tsWait
	if err := json.Unmarshal(bytes.TrimSpace(out), &s); err != nil {
		t.Fatalf("wait.mjs printed no JSON summary\nstderr:\n%s\nstdout:\n%s", errb.String(), out)
	}
	if s.OK || !strings.Contains(s.Error, "timed out") {
		t.Fatalf("the SDK did not give up: %+v", s)
	}
	q := s.Question
	if q == nil || q["verdict"] != "cancelled" || q["cause"] != "client-gone" {
		t.Fatalf("the question after the client gave up: %v", q)
	}
	apr := q["approval_id"].(string)
	shown := p.ok("approvals", "show", apr)
	if shown.str("cause") != "client-gone" || !strings.Contains(shown.str("detail"), "the asking client went away") {
		t.Fatalf("approvals show: %s", shown.stdout)
	}
	end := p.frames("--session", ses, "--after", "1")
	if len(end) != 1 || end[0]["verdict"] != "cancelled" || end[0]["cause"] != "client-gone" {
		t.Fatalf("the ending frame: %v", end)
	}
}
