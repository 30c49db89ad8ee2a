package runner

import (
	"fmt"
	"sort"
	"time"

	"github.com/dont-cli/dont/internal/spawn"
)

// Profile says how to start one kind of agent for a spawn request: its
// command line, how it receives the prompt and the allowed tools, and
// which of the caller's environment variables it may see. Every string
// but Env is a template over Data in Go's template syntax (Command's
// elements one by one; template.go says what a profile may use).
type Profile struct {
	Name string
	// Command is the agent's argv. An element that is exactly ToolsArg is
	// replaced by one element per allowed tool (rendered by Tool).
	Command []string
	// Prompt is PromptStdin or PromptArg: whether the rendered prompt is
	// written to the agent's stdin or given as {{.Prompt}} in Command
	// (its stdin is then empty).
	Prompt string
	// PromptTemplate renders the prompt the agent receives (default
	// "{{.Prompt}}", the spawn's own prompt).
	PromptTemplate string
	// Tool renders one allowed tool's name for this agent: "{{.}}" is the
	// dont tool name (show, dismiss, trust, answer).
	Tool string
	// Env names the caller's environment variables the agent may see;
	// nothing else of the caller's environment reaches it.
	Env []string
}

// How a profile passes the prompt.
const (
	PromptStdin = "stdin"
	PromptArg   = "arg"
)

// ToolsArg, as a whole element of Command, expands to the rendered tools.
const ToolsArg = "{{tools}}"

// Builtin are the built-in profiles; their names are
// settings.BuiltinProfiles, which no config file may redefine (a test
// holds the two equal). The Claude Code and Codex ones use
// only their documented flags (docs/harnesses.md); generic has no
// command of its own, the configuration gives it.
var Builtin = map[string]Profile{
	// claude -p reads the prompt from stdin and runs without prompts;
	// --allowedTools lets it run only the dont commands of the spawn
	// (Bash permission rules), with DONT_TOKEN from its environment.
	"claude-code": {
		Name:    "claude-code",
		Command: []string{"claude", "-p", "--output-format", "json", "--allowedTools", ToolsArg},
		Prompt:  PromptStdin,
		Tool:    "Bash(dont {{.}}:*)",
		Env:     []string{"PATH", "HOME", "ANTHROPIC_API_KEY"},
	},
	// codex exec - reads the prompt from stdin; Codex has no tool allow
	// list, so the prompt names the dont commands it may run, and its
	// workspace-write sandbox gets network access to reach DONT_ENDPOINT.
	"codex": {
		Name: "codex",
		Command: []string{"codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral",
			"-c", "sandbox_workspace_write.network_access=true", "-"},
		Prompt:         PromptStdin,
		PromptTemplate: "{{.Prompt}}\nRun only these dont commands (DONT_ENDPOINT, DONT_TOKEN and DONT_REQUEST_ID are set): {{join .Tools \", \"}}.\n",
		Tool:           "dont {{.}}",
		Env:            []string{"PATH", "HOME", "OPENAI_API_KEY", "CODEX_HOME"},
	},
	// generic: the prompt on stdin, the allowed tools in DONT_ALLOWED_TOOLS;
	// the command is the configuration's.
	"generic": {
		Name:   "generic",
		Prompt: PromptStdin,
		Tool:   "{{.}}",
		Env:    []string{"PATH"},
	},
}

// BuiltinNames lists the built-in profiles, sorted.
func BuiltinNames() []string {
	var out []string
	for n := range Builtin {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Merge is p with every empty field taken from base.
func (p Profile) Merge(base Profile) Profile {
	if len(p.Command) == 0 {
		p.Command = base.Command
	}
	if p.Prompt == "" {
		p.Prompt = base.Prompt
	}
	if p.PromptTemplate == "" {
		p.PromptTemplate = base.PromptTemplate
	}
	if p.Tool == "" {
		p.Tool = base.Tool
	}
	if p.Env == nil {
		p.Env = base.Env
	}
	return p
}

// Data is what a profile's templates see.
type Data struct {
	RequestID   string
	RequestKind string
	EntityID    string
	// Prompt is the spawn's prompt (in PromptTemplate), or the rendered
	// prompt (in Command).
	Prompt string
	// AllowedTools are the dont tool names; Tools the same as this agent
	// names them (Profile.Tool).
	AllowedTools []string
	Tools        []string
	Endpoint     string
	ExpiresAt    time.Time
	MaxToolCalls int
	// ProjectDir is the project folder as the runner found it ("" when
	// it has none): for a prompt that tells the agent where to read the
	// project's files. The agent does not run there (docs/harnesses.md,
	// "Working directory").
	ProjectDir string
}

// Rendered is a profile applied to one spawn request.
type Rendered struct {
	Argv []string
	// Stdin is what the agent reads (the prompt, or nothing).
	Stdin string
	// Prompt is the rendered prompt.
	Prompt string
}

// Check reports a profile that cannot render: no command, an unknown
// prompt mode, a template that does not parse.
func (p Profile) Check() error {
	if len(p.Command) == 0 {
		return fmt.Errorf("agent profile %q has no command", p.Name)
	}
	if p.Prompt != PromptStdin && p.Prompt != PromptArg {
		return fmt.Errorf("agent profile %q: prompt must be %q or %q, got %q", p.Name, PromptStdin, PromptArg, p.Prompt)
	}
	for _, s := range append([]string{p.PromptTemplate, p.Tool}, p.Command...) {
		if s == ToolsArg {
			continue
		}
		if _, err := parseTemplate(s); err != nil {
			return fmt.Errorf("agent profile %q: %w", p.Name, err)
		}
	}
	return nil
}

// Render applies the profile to a spawn request, for an agent that
// reaches dont at endpoint.
func (p Profile) Render(req spawn.Request, endpoint string) (Rendered, error) {
	return p.RenderIn(req, endpoint, "")
}

// RenderIn is Render for a runner that found the project at projectDir.
func (p Profile) RenderIn(req spawn.Request, endpoint, projectDir string) (Rendered, error) {
	var r Rendered
	if err := p.Check(); err != nil {
		return r, err
	}
	d := Data{RequestID: req.RequestID, RequestKind: string(req.RequestKind), EntityID: req.EntityID,
		Prompt: req.Context.Prompt, AllowedTools: req.Context.AllowedTools, Endpoint: endpoint,
		ExpiresAt: req.ExpiresAt, MaxToolCalls: req.Context.MaxToolCalls, ProjectDir: projectDir}
	tool := p.Tool
	if tool == "" {
		tool = "{{.}}"
	}
	for _, t := range req.Context.AllowedTools {
		s, err := execute(tool, t)
		if err != nil {
			return r, fmt.Errorf("agent profile %q: tool: %w", p.Name, err)
		}
		d.Tools = append(d.Tools, s)
	}
	prompt := d.Prompt
	if p.PromptTemplate != "" {
		var err error
		if prompt, err = execute(p.PromptTemplate, d); err != nil {
			return r, fmt.Errorf("agent profile %q: prompt_template: %w", p.Name, err)
		}
	}
	r.Prompt, d.Prompt = prompt, prompt
	for _, c := range p.Command {
		if c == ToolsArg {
			r.Argv = append(r.Argv, d.Tools...)
			continue
		}
		s, err := execute(c, d)
		if err != nil {
			return r, fmt.Errorf("agent profile %q: command: %w", p.Name, err)
		}
		r.Argv = append(r.Argv, s)
	}
	if p.Prompt == PromptStdin {
		r.Stdin = prompt
	}
	return r, nil
}

func execute(text string, data any) (string, error) {
	t, err := parseTemplate(text)
	if err != nil {
		return "", err
	}
	return t.execute(data)
}
