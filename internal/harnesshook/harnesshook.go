// Package harnesshook maps a harness's permission request — Claude Code's
// or Codex's PermissionRequest hook payload, or Claude Code's
// --permission-prompt-tool call — to a dont escalation question, and a
// verdict back to the decision JSON the harness reads
// (docs/harnesses.md, "Permission hooks"). Every failure is a deny: the
// decision this package writes for anything but an approval is
// behavior "deny" with a message that tells the model what happened. It
// imports only the standard library and does no I/O.
package harnesshook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Harness names a harness whose permission requests dont answers.
type Harness string

// The harnesses.
const (
	ClaudeCode Harness = "claude-code"
	Codex      Harness = "codex"
)

// Harnesses are every harness, for help and errors.
var Harnesses = []Harness{ClaudeCode, Codex}

// Valid reports whether h is one of the harnesses.
func (h Harness) Valid() bool { return h == ClaudeCode || h == Codex }

// The tiers a request maps to (internal/approvals' names; this package
// stays free of it so that the mapping reads alone).
const (
	TierReadOnly         = "read-only"
	TierWorkspaceWrite   = "workspace-write"
	TierDangerFullAccess = "danger-full-access"
)

// MaxPreview is the longest preview dont shows a person (the escalation's
// own bound). A request that cannot be shown whole is denied, never cut:
// a person approves what they saw.
const MaxPreview = 4096

// MaxSessionID bounds a harness session id.
const MaxSessionID = 128

// Request is a permission request as dont asks it.
type Request struct {
	Harness Harness
	// SessionID is the harness's session id; SessionName the dont
	// session's name for it (one dont session per harness session).
	SessionID   string
	SessionName string
	// CallID is the harness's tool-use id when it sends one ("" otherwise:
	// the caller makes one, unique to this request).
	CallID string
	Tool   string
	// Tier is the target tier (the mapping in docs/harnesses.md).
	Tier string
	// Preview is what the person sees: the whole command, the edit, the
	// address. Rules match it.
	Preview string
	// Reason is the model's stated justification, or a sentence saying
	// what the tool does when the harness sends none.
	Reason string
	// Subagent is set when a sub-agent asks (Claude Code's agent_id).
	Subagent string
	// Input is the tool's input as sent (the permission-prompt tool
	// returns it as updatedInput).
	Input json.RawMessage
}

// Problem is why a payload cannot become a question: the hook denies.
type Problem struct {
	Kind    Ending
	Message string
}

func (p *Problem) Error() string { return p.Message }

func bad(format string, args ...any) error {
	return &Problem{Kind: BadPayload, Message: fmt.Sprintf(format, args...)}
}

// payload is the union of the fields both harnesses send.
type payload struct {
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	Event     string          `json:"hook_event_name"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	TurnID    string          `json:"turn_id"`
	AgentID   string          `json:"agent_id"`
}

// The hook events dont answers.
const (
	EventPermissionRequest = "PermissionRequest"
	EventPreToolUse        = "PreToolUse"
)

// Parse reads a hook payload of harness h. A payload that is not JSON, is
// of another event, lacks the session or the tool, or names a tool dont
// does not map, is a Problem.
func Parse(h Harness, raw []byte) (Request, error) {
	if !h.Valid() {
		return Request{}, bad("unknown harness %q", string(h))
	}
	var p payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&p); err != nil {
		return Request{}, bad("the hook payload is not a JSON object (%v)", err)
	}
	if p.Event != EventPermissionRequest && p.Event != EventPreToolUse {
		return Request{}, bad("the hook event is %q; dont answers PermissionRequest (and PreToolUse)", p.Event)
	}
	if err := checkID("session_id", p.SessionID); err != nil {
		return Request{}, err
	}
	if p.ToolUseID != "" {
		if err := checkID("tool_use_id", p.ToolUseID); err != nil {
			return Request{}, err
		}
	}
	r, err := Map(h, p.ToolName, p.ToolInput, p.Cwd)
	if err != nil {
		return Request{}, err
	}
	r.SessionID, r.SessionName, r.CallID = p.SessionID, SessionName(h, p.SessionID), p.ToolUseID
	if p.AgentID != "" {
		r.Subagent = oneLine(p.AgentID, 64)
		r.Reason = "(sub-agent " + r.Subagent + ") " + r.Reason
	}
	return r, nil
}

// SessionName is the name of the dont session of harness session id.
func SessionName(h Harness, id string) string { return string(h) + ":" + id }

func checkID(field, v string) error {
	if strings.TrimSpace(v) == "" || len(v) > MaxSessionID || !utf8.ValidString(v) || strings.IndexFunc(v, func(c rune) bool { return c < 0x21 || c == 0x7f }) >= 0 {
		return bad("%s must be 1 to %d printable bytes without spaces", field, MaxSessionID)
	}
	return nil
}

// Map maps one tool call to a question: its target tier, preview and
// reason. workspace is the folder edits may touch at workspace-write
// (the harness's working directory). An unknown tool is a Problem.
func Map(h Harness, tool string, input json.RawMessage, workspace string) (Request, error) {
	r := Request{Harness: h, Tool: tool, Input: input}
	if tool == "" {
		return r, bad("the payload names no tool_name")
	}
	var in map[string]any
	if len(bytes.TrimSpace(input)) == 0 || json.Unmarshal(input, &in) != nil || in == nil {
		return r, bad("tool_input of %s is not a JSON object", tool)
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	need := func(k string) (string, error) {
		if s := str(k); s != "" {
			return s, nil
		}
		return "", bad("tool_input of %s has no %s", tool, k)
	}
	var err error
	switch {
	case tool == "Bash" || (h == Codex && tool == "NetworkAccess"):
		if r.Preview, err = need("command"); err != nil {
			return r, err
		}
		r.Tier = TierDangerFullAccess
		r.Reason = str("description")
		if r.Reason == "" {
			r.Reason = string(h) + " wants to run this command"
		}
		if tool == "NetworkAccess" {
			r.Reason = "network access: " + r.Reason
		}
	case tool == "Read" || tool == "Glob" || tool == "Grep" || tool == "LS" || tool == "NotebookRead":
		r.Tier = TierReadOnly
		r.Preview = tool + " " + firstOf(in, "file_path", "path", "pattern", "notebook_path")
		r.Reason = string(h) + " wants to read"
	case tool == "Edit" || tool == "MultiEdit" || tool == "Write" || tool == "NotebookEdit":
		path := firstOf(in, "file_path", "notebook_path")
		if path == "" {
			return r, bad("tool_input of %s has no file_path", tool)
		}
		r.Tier = TierDangerFullAccess
		if Inside(workspace, path) {
			r.Tier = TierWorkspaceWrite
		}
		r.Preview = editPreview(tool, path, in)
		r.Reason = string(h) + " wants to change " + path
		if r.Tier == TierDangerFullAccess {
			r.Reason += ", outside its workspace " + workspace
		}
	case tool == "WebFetch":
		url, err := need("url")
		if err != nil {
			return r, err
		}
		r.Tier, r.Preview = TierDangerFullAccess, "WebFetch "+url
		r.Reason = "network access: " + orDefault(str("prompt"), "fetch a web page")
	case tool == "WebSearch":
		q, err := need("query")
		if err != nil {
			return r, err
		}
		r.Tier, r.Preview, r.Reason = TierDangerFullAccess, "WebSearch "+q, "network access: search the web"
	case strings.HasPrefix(tool, "mcp__"):
		r.Tier = TierDangerFullAccess
		r.Preview = tool + " " + canonical(in)
		r.Reason = string(h) + " wants to call the MCP tool " + tool
	default:
		return r, &Problem{Kind: UnknownTool, Message: "dont has no mapping for the tool " + oneLine(tool, 64) + " (docs/harnesses.md lists the tools it maps)"}
	}
	if len(r.Preview) > MaxPreview {
		return r, &Problem{Kind: TooLong, Message: fmt.Sprintf("the request is %d bytes, too long to show a person whole (at most %d)", len(r.Preview), MaxPreview)}
	}
	if len(r.Reason) > 2048 {
		r.Reason = r.Reason[:2000] + "… (cut)"
	}
	return r, nil
}

// Inside reports whether path lies inside the folder root: both absolute,
// path cleaned, and no ".." step left after root. A relative path counts
// from root.
func Inside(root, path string) bool {
	if root == "" || !filepath.IsAbs(root) {
		return false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func editPreview(tool, path string, in map[string]any) string {
	var b strings.Builder
	b.WriteString(tool + " " + path + "\n")
	switch tool {
	case "Write":
		s, _ := in["content"].(string)
		b.WriteString(s)
	case "Edit":
		writeDiff(&b, in)
	case "MultiEdit":
		edits, _ := in["edits"].([]any)
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				writeDiff(&b, m)
			}
		}
	default:
		b.WriteString(canonical(in))
	}
	return b.String()
}

func writeDiff(b *strings.Builder, in map[string]any) {
	old, _ := in["old_string"].(string)
	nw, _ := in["new_string"].(string)
	for _, l := range strings.Split(old, "\n") {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range strings.Split(nw, "\n") {
		b.WriteString("+ " + l + "\n")
	}
}

func firstOf(in map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// canonical writes an input with sorted keys, for a stable preview.
func canonical(in map[string]any) string {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		v, _ := json.Marshal(in[k])
		b.WriteString(k + "=" + string(v))
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return '?'
		}
		return c
	}, s)
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// Ending is how a request ended, as the hook tells the model.
type Ending string

// The endings. Only Approved allows; every other one denies.
const (
	Approved     Ending = "approved"
	Covered      Ending = "covered" // the session's default tier covers it: allowed, nothing asked
	Refused      Ending = "refused"
	RuleForbid   Ending = "rule-forbid"
	TimedOut     Ending = "timed-out"
	Cancelled    Ending = "cancelled"
	NoSubscriber Ending = "no-subscriber"
	Unreachable  Ending = "unreachable"
	BadPayload   Ending = "bad-payload"
	UnknownTool  Ending = "unknown-tool"
	TooLong      Ending = "too-long"
	Failed       Ending = "failed" // anything else: a refusal of the hop table, a panic, an unexpected answer
)

// Allows reports whether e lets the call run.
func (e Ending) Allows() bool { return e == Approved || e == Covered }

// Outcome is the verdict the hook reports, with who decided and any
// detail (a person's reason, an error's message).
type Outcome struct {
	Ending     Ending
	ApprovalID string
	AnsweredBy string
	Detail     string
}

// Message is what the model reads: what happened, and what not to do.
func (o Outcome) Message() string {
	var m string
	switch o.Ending {
	case Approved:
		m = "dont: approved" + byWhom(o.AnsweredBy)
	case Covered:
		m = "dont: allowed; the session's tier covers this call"
	case Refused:
		m = "dont: refused" + byWhom(o.AnsweredBy) + ". Do not retry this call; ask the person or find another way"
	case RuleForbid:
		m = "dont: forbidden by the person's rule " + strings.TrimPrefix(o.AnsweredBy, "rule:") + ". Do not retry this call"
	case TimedOut:
		m = "dont: nobody answered before the deadline, so the call is denied. Retry later only if the person asks you to"
	case Cancelled:
		m = "dont: the question was cancelled" + byWhom(o.AnsweredBy) + "; the call is denied"
	case NoSubscriber:
		m = "dont: nobody is watching for approvals (no approvals page, inbox or webhook has read them recently), so nobody could answer; the call is denied"
	case Unreachable:
		m = "dont: could not reach dont to ask a person, so the call is denied (fail closed)"
	case BadPayload:
		m = "dont: could not read the permission request, so the call is denied"
	case UnknownTool:
		m = "dont: no mapping for this tool, so the call is denied"
	case TooLong:
		m = "dont: the request is too long to show a person whole, so the call is denied; split it into smaller steps"
	default:
		m = "dont: the request failed, so the call is denied"
	}
	if o.ApprovalID != "" {
		m += " (" + o.ApprovalID + ")"
	}
	if o.Detail != "" {
		m += ": " + oneLine(o.Detail, 400)
	}
	return m
}

func byWhom(who string) string {
	if who == "" {
		return ""
	}
	return " by " + oneLine(who, 80)
}

// decision is the harnesses' PermissionRequest decision; both read the
// same shape (Claude Code's PermissionResult, Codex's
// PermissionRequestDecisionWire).
type decision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

type hookOutput struct {
	HookSpecificOutput struct {
		HookEventName string   `json:"hookEventName"`
		Decision      decision `json:"decision"`
	} `json:"hookSpecificOutput"`
}

// preToolUseOutput is the PreToolUse hook's answer (permissionDecision).
type preToolUseOutput struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// Decision is the JSON the hook writes on stdout for event (PermissionRequest
// unless PreToolUse): allow on Approved or Covered, deny with the
// outcome's message otherwise. A deny always carries a message.
func Decision(event string, o Outcome) []byte {
	if event == EventPreToolUse {
		var out preToolUseOutput
		out.HookSpecificOutput.HookEventName = EventPreToolUse
		out.HookSpecificOutput.PermissionDecision = "deny"
		if o.Ending.Allows() {
			out.HookSpecificOutput.PermissionDecision = "allow"
		}
		out.HookSpecificOutput.PermissionDecisionReason = o.Message()
		return marshal(out)
	}
	var out hookOutput
	out.HookSpecificOutput.HookEventName = EventPermissionRequest
	out.HookSpecificOutput.Decision = decision{Behavior: "deny", Message: o.Message()}
	if o.Ending.Allows() {
		out.HookSpecificOutput.Decision = decision{Behavior: "allow"}
	}
	return marshal(out)
}

// EventOf reads the hook event of a payload, for the decision's shape;
// PermissionRequest when it cannot be read.
func EventOf(raw []byte) string {
	var p struct {
		Event string `json:"hook_event_name"`
	}
	if json.Unmarshal(raw, &p) == nil && p.Event == EventPreToolUse {
		return EventPreToolUse
	}
	return EventPermissionRequest
}

// PromptInput is the input of Claude Code's --permission-prompt-tool.
type PromptInput struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// PromptResult is the permission-prompt tool's result text: allow with
// the input unchanged as updatedInput, or deny with the message.
func PromptResult(o Outcome, input json.RawMessage) []byte {
	if o.Ending.Allows() {
		if len(bytes.TrimSpace(input)) == 0 || !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		return marshal(struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
		}{"allow", input})
	}
	return marshal(decision{Behavior: "deny", Message: o.Message()})
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The types above always encode; a deny that is still JSON.
		return []byte(`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"dont: internal error"}}}` + "\n")
	}
	return b.Bytes()
}
