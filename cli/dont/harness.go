package main

// `dont harness install claude-code|codex`: writes the project's harness
// configuration that runs `dont hook` on every permission request (and
// `dont mcp` as an MCP server), merged into what is there, idempotently.
// It writes harness configuration only — never dont's settings or the
// person's rules (docs/security.md): an agent that runs it gains nothing
// it could not write itself.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/harnesshook"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// hookTimeoutMargin is how much longer than dont's deadline the harness
// lets the hook run: the hook answers (timed-out, a deny) before the
// harness would kill it.
const hookTimeoutMargin = 60 * time.Second

func (a *app) harnessCommand() *cobra.Command {
	group := &cobra.Command{Use: "harness", Short: "Set up a harness (Claude Code, Codex) to ask dont for its permission prompts.",
		Args: a.argCount(0), RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
	group.AddCommand(&cobra.Command{
		Use:   "install <claude-code|codex>",
		Short: "Write the project's hook and MCP configuration for a harness; a second run changes nothing.",
		Long: `Writes the harness's project configuration so that every permission prompt
runs dont hook (and dont is an MCP server), merged into the files there
without losing their other keys:

  claude-code  .claude/settings.json  hooks.PermissionRequest → dont hook claude-code
               .mcp.json              mcpServers.dont → dont mcp --permission-prompt
  codex        .codex/hooks.json      hooks.PermissionRequest → dont hook codex
               .codex/config.toml     [mcp_servers.dont] → dont mcp (appended)

The hook's timeout is dont's approval deadline plus a minute. It prints
what it wrote, or that nothing changed. It writes no dont setting and no
rule (docs/security.md).`,
		Example: "  dont harness install claude-code\n  dont harness install codex",
		Args:    a.argCount(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.harnessInstall(harnesshook.Harness(args[0]))
		},
	})
	return group
}

// harnessInstalled is what dont harness install did.
type harnessInstalled struct {
	Harness harnesshook.Harness `json:"harness"`
	Changed bool                `json:"changed"`
	Files   []harnessChange     `json:"files"`
}

// harnessChange is one file the installer wrote or left as it was.
type harnessChange struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	What    string `json:"what"`
}

func (a *app) harnessInstall(h harnesshook.Harness) error {
	if !h.Valid() {
		return errs.E(errs.Usage, "unknown harness "+fmt.Sprintf("%q", string(h))+"; dont harness install takes claude-code or codex",
			errs.Step{Command: "dont harness install claude-code", Description: "set up Claude Code"},
			errs.Step{Command: "dont harness install codex", Description: "or Codex"})
	}
	root, err := a.harnessRoot()
	if err != nil {
		return err
	}
	timeout := approvals.DefaultTimeout
	if cfg, err := a.approvalsConfig(nil, true); err == nil && cfg.Timeout > 0 {
		timeout = cfg.Timeout
	}
	secs := int((timeout + hookTimeoutMargin) / time.Second)
	command := "dont hook " + string(h)
	var changes []harnessChange
	switch h {
	case harnesshook.ClaudeCode:
		ch, err := mergeJSONHook(filepath.Join(root, ".claude", "settings.json"), command, secs)
		if err != nil {
			return err
		}
		changes = append(changes, ch)
		ch, err = mergeJSONMCP(filepath.Join(root, ".mcp.json"))
		if err != nil {
			return err
		}
		changes = append(changes, ch)
	case harnesshook.Codex:
		ch, err := mergeJSONHook(filepath.Join(root, ".codex", "hooks.json"), command, secs)
		if err != nil {
			return err
		}
		changes = append(changes, ch)
		ch, err = appendTOMLMCP(filepath.Join(root, ".codex", "config.toml"))
		if err != nil {
			return err
		}
		changes = append(changes, ch)
	}
	changed := false
	for _, c := range changes {
		changed = changed || c.Changed
	}
	if a.machine() {
		a.emit(tools.Output{Kind: envelope.KindHarnessInstall, Data: harnessInstalled{Harness: h, Changed: changed, Files: changes}})
		return nil
	}
	for _, c := range changes {
		verb := "unchanged"
		if c.Changed {
			verb = "wrote"
		}
		fmt.Fprintf(a.stdout, "%s %s: %s\n", verb, c.Path, c.What)
	}
	if !changed {
		fmt.Fprintf(a.stdout, "nothing to change: %s already asks dont\n", h)
	}
	return nil
}

// harnessRoot is the folder the harness's project files go in: the dont
// project's root, else the working directory.
func (a *app) harnessRoot() (string, error) {
	if p, err := a.locateProject(); err == nil {
		return p.Root, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", errs.E(errs.StoreError, "cannot read the working directory").Wrap(err)
	}
	return wd, nil
}

// readJSONObject reads a JSON object file, or an empty one if there is
// none. A file that is not a JSON object is refused: nothing is written.
func readJSONObject(path string) (map[string]any, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, false, nil
	}
	if err != nil {
		return nil, false, errs.E(errs.StoreError, "cannot read "+path).Wrap(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false, errs.E(errs.ConfigInvalid, path+" is not a JSON object; nothing was written",
			errs.Step{Command: "cat " + path, Description: "fix the file, then run dont harness install again"})
	}
	return m, true, nil
}

func writeJSONObject(path string, m map[string]any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return errs.E(errs.Internal, "cannot encode "+path).Wrap(err)
	}
	return writeFileAtomic(path, b.Bytes())
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return errs.E(errs.StoreError, "cannot create "+filepath.Dir(path)).Wrap(err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".dont-tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return errs.E(errs.StoreError, "cannot write "+tmp).Wrap(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return errs.E(errs.StoreError, "cannot write "+path).Wrap(err)
	}
	return nil
}

// mergeJSONHook adds {matcher "*", hooks [{command, timeout}]} to
// hooks.PermissionRequest unless a hook there already runs command (its
// timeout is then brought up to secs if lower).
func mergeJSONHook(path, command string, secs int) (harnessChange, error) {
	ch := harnessChange{Path: path, What: "hooks.PermissionRequest runs " + command + fmt.Sprintf(" (timeout %ds)", secs)}
	m, _, err := readJSONObject(path)
	if err != nil {
		return ch, err
	}
	hooks, ok := m["hooks"].(map[string]any)
	if m["hooks"] != nil && !ok {
		return ch, errs.E(errs.ConfigInvalid, path+": hooks is not an object; nothing was written")
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	groups, ok := hooks[harnesshook.EventPermissionRequest].([]any)
	if hooks[harnesshook.EventPermissionRequest] != nil && !ok {
		return ch, errs.E(errs.ConfigInvalid, path+": hooks.PermissionRequest is not a list; nothing was written")
	}
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); strings.TrimSpace(c) == command {
				if t, _ := hm["timeout"].(float64); int(t) >= secs {
					return ch, nil
				}
				hm["timeout"] = secs
				hooks[harnesshook.EventPermissionRequest] = groups
				m["hooks"] = hooks
				ch.Changed = true
				return ch, writeJSONObject(path, m)
			}
		}
	}
	groups = append(groups, map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": secs}}})
	hooks[harnesshook.EventPermissionRequest] = groups
	m["hooks"] = hooks
	ch.Changed = true
	return ch, writeJSONObject(path, m)
}

// mergeJSONMCP adds mcpServers.dont (dont mcp) unless one is there.
func mergeJSONMCP(path string) (harnessChange, error) {
	ch := harnessChange{Path: path, What: "mcpServers.dont runs dont mcp --permission-prompt"}
	m, _, err := readJSONObject(path)
	if err != nil {
		return ch, err
	}
	servers, ok := m["mcpServers"].(map[string]any)
	if m["mcpServers"] != nil && !ok {
		return ch, errs.E(errs.ConfigInvalid, path+": mcpServers is not an object; nothing was written")
	}
	if servers == nil {
		servers = map[string]any{}
	}
	if _, there := servers["dont"]; there {
		return ch, nil
	}
	servers["dont"] = map[string]any{"command": "dont", "args": []any{"mcp", "--permission-prompt"}}
	m["mcpServers"] = servers
	ch.Changed = true
	return ch, writeJSONObject(path, m)
}

// appendTOMLMCP appends [mcp_servers.dont] to a Codex config.toml that has
// none; the file's own text (comments and order) stays as it was.
func appendTOMLMCP(path string) (harnessChange, error) {
	ch := harnessChange{Path: path, What: "[mcp_servers.dont] runs dont mcp"}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return ch, errs.E(errs.StoreError, "cannot read "+path).Wrap(err)
	}
	var m map[string]any
	if _, err := toml.Decode(string(b), &m); err != nil {
		return ch, errs.E(errs.ConfigInvalid, path+" is not TOML ("+err.Error()+"); nothing was written")
	}
	if servers, ok := m["mcp_servers"].(map[string]any); ok {
		if _, there := servers["dont"]; there {
			return ch, nil
		}
	}
	block := "[mcp_servers.dont]\ncommand = \"dont\"\nargs = [\"mcp\"]\n"
	if len(b) > 0 {
		if !bytes.HasSuffix(b, []byte("\n")) {
			b = append(b, '\n')
		}
		b = append(b, '\n')
	}
	ch.Changed = true
	return ch, writeFileAtomic(path, append(b, block...))
}
