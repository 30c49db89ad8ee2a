package mcp

// permission_prompt: Claude Code's --permission-prompt-tool for headless
// runs (`claude -p … --permission-prompt-tool mcp__dont__permission_prompt`).
// Claude Code calls it with {tool_name, input, tool_use_id} when a tool
// needs permission and nobody is at a terminal; dont asks the call as an
// escalation question (the same mapping as `dont hook`,
// internal/harnesshook), waits for the verdict, and returns as text
// {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.
// Every failure is a deny (docs/harnesses.md).

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/harnesshook"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// PermissionPromptTool is the tool's MCP name: Claude Code calls it as
// mcp__dont__permission_prompt.
const PermissionPromptTool = "permission_prompt"

// promptSessions is each server's dont session for its prompts: one MCP
// connection is one harness session.
var promptSessions sync.Map // *Server → *promptSession

type promptSession struct {
	mu sync.Mutex
	id string
}

// AddPermissionPrompt lists the permission_prompt tool (dont mcp
// --permission-prompt).
func (s *Server) AddPermissionPrompt() {
	s.srv.AddTool(&sdk.Tool{
		Name:        PermissionPromptTool,
		Title:       "Ask a person for a tool call's permission",
		Description: "Claude Code's --permission-prompt-tool: asks a person (approvals page, inbox, Slack, the CLI) whether the tool call may run; returns {\"behavior\":\"allow\",\"updatedInput\":…} or {\"behavior\":\"deny\",\"message\":…} as text.",
		InputSchema: map[string]any{"type": "object", "required": []any{"tool_name", "input"}, "properties": map[string]any{
			"tool_name":   map[string]any{"type": "string"},
			"input":       map[string]any{"type": "object"},
			"tool_use_id": map[string]any{"type": "string"},
		}},
	}, s.permissionPrompt)
}

func (s *Server) permissionPrompt(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
	var in harnesshook.PromptInput
	outcome := harnesshook.Outcome{Ending: harnesshook.Failed, Detail: "the prompt ended before a verdict"}
	defer func() {
		if r := recover(); r != nil {
			outcome = harnesshook.Outcome{Ending: harnesshook.Failed, Detail: "internal error"}
		}
		text := strings.TrimSuffix(string(harnesshook.PromptResult(outcome, in.Input)), "\n")
		res, err = &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	}()
	if json.Unmarshal(req.Params.Arguments, &in) != nil {
		outcome = harnesshook.Outcome{Ending: harnesshook.BadPayload, Detail: "the arguments are not {tool_name, input, tool_use_id}"}
		return
	}
	wd, _ := os.Getwd()
	r, perr := harnesshook.Map(harnesshook.ClaudeCode, in.ToolName, in.Input, wd)
	if perr != nil {
		p, _ := perr.(*harnesshook.Problem)
		outcome = harnesshook.Outcome{Ending: harnesshook.Failed, Detail: perr.Error()}
		if p != nil {
			outcome.Ending = p.Kind
		}
		return
	}
	if r.Tier == harnesshook.TierReadOnly {
		outcome = harnesshook.Outcome{Ending: harnesshook.Covered}
		return
	}
	outcome = s.askPrompt(ctx, r, in.ToolUseID)
	return
}

// askPrompt opens (once) the server's session and asks r in it.
func (s *Server) askPrompt(ctx context.Context, r harnesshook.Request, call string) harnesshook.Outcome {
	v, _ := promptSessions.LoadOrStore(s, &promptSession{})
	ps := v.(*promptSession)
	ps.mu.Lock()
	if ps.id == "" {
		var ses approvals.Session
		err := s.promptCall(ctx, "sessions.open", map[string]any{"tier": harnesshook.TierReadOnly,
			"name": harnesshook.SessionName(harnesshook.ClaudeCode, "mcp-"+ids.New(ids.Request, time.Now()))}, &ses)
		if err != nil {
			ps.mu.Unlock()
			return s.refusal(ctx, err)
		}
		ps.id = ses.ID
	}
	ses := ps.id
	ps.mu.Unlock()
	if call == "" || len(call) > 200 {
		call = "claude-code-" + ids.New(ids.Request, time.Now())
	}
	var granted approvals.Approval
	err := s.promptCall(ctx, "escalate", map[string]any{"session": ses, "call": call, "to": r.Tier, "reason": r.Reason, "preview": r.Preview}, &granted)
	if err != nil {
		return s.refusal(ctx, err)
	}
	return harnesshook.Outcome{Ending: harnesshook.Approved, ApprovalID: granted.ID, AnsweredBy: granted.AnsweredBy}
}

func (s *Server) promptCall(ctx context.Context, name string, args map[string]any, out any) error {
	t, ok := tools.Lookup(name)
	if !ok {
		return errs.E(errs.Internal, "no tool "+name)
	}
	svc, release, err := s.open(ctx, t)
	if err != nil {
		return err
	}
	defer release()
	res, err := tools.CallGated(service.WithPrincipal(ctx, Principal(svc.Author)), svc, name, args, confirm.Arrival{})
	if err != nil {
		return err
	}
	b, err := json.Marshal(res.Data)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	return err
}

// refusal maps an escalation's error to how the prompt ended, with who
// refused it read from the approval's record.
func (s *Server) refusal(ctx context.Context, err error) harnesshook.Outcome {
	o := service.HookOutcome(err)
	var rec approvals.Approval
	if o.Ending == harnesshook.Refused && o.ApprovalID != "" && s.promptCall(ctx, "approvals.show", map[string]any{"id": o.ApprovalID}, &rec) == nil {
		o = service.HookAnswered(o, rec)
	}
	return o
}
