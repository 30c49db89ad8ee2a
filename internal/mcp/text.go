package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/tools"
)

// The text a result carries for its caller to act on — an error's
// remediation, the hints, a spawn request's prompt with its callback
// instructions — is written once, in CLI syntax (internal/present, the
// tool registry, internal/spawn). An MCP caller cannot run a shell
// command, so the adapter renders each command of that text as the MCP
// tool call it stands for: `dont dismiss claim:… --evidence <uri>
// --request-id spawn:…` becomes `dismiss {"evidence":["<uri>"],
// "id":"claim:…","request_id":"spawn:…"}`, read from the registry (the
// tool's name, its positional parameters, their types). The domain and
// the service stay unaware of transports: only this adapter chooses the
// rendering. A command that names no tool an MCP client has (`dont
// approvals watch`, a person's tools, `curl`) is left as written; `dont
// help` becomes tools/list.

// mcpCommand renders one CLI command line as an MCP tool call; ok is false
// when it names no tool an MCP client may call.
func mcpCommand(line string) (string, bool) {
	words := shellWords(line)
	if len(words) < 1 || words[0] != "dont" {
		return line, false
	}
	words = words[1:]
	if len(words) >= 1 && (words[0] == "help" || words[0] == "--help") || len(words) >= 1 && words[len(words)-1] == "--help" {
		return "tools/list", true
	}
	var t *tools.Tool
	n := 0
	for i := len(words); i >= 1; i-- {
		if cand, ok := tools.Lookup(strings.Join(words[:i], ".")); ok {
			t, n = cand, i
			break
		}
	}
	if t == nil || !t.ForPrincipal(Principal("")) {
		return line, false
	}
	byName := map[string]tools.Param{}
	var positional []tools.Param
	for _, p := range t.Params {
		byName[p.Name] = p
		if p.Short != "" {
			byName[p.Short] = p
		}
		if p.Positional {
			positional = append(positional, p)
		}
	}
	args := map[string]any{}
	set := func(p tools.Param, v string) {
		if p.Type == tools.Strings {
			prev, _ := args[p.Name].([]string)
			args[p.Name] = append(prev, v)
			return
		}
		args[p.Name] = v
	}
	rest := words[n:]
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w == "…" || w == "..." {
			continue
		}
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, value, hasValue := strings.Cut(name, "=")
			p, known := byName[strings.ReplaceAll(name, "-", "_")]
			if !known || p.Internal {
				continue // a CLI-only flag (--harness, --json): nothing to pass over MCP
			}
			if p.Type == tools.Boolean && !hasValue {
				args[p.Name] = true
				continue
			}
			if !hasValue && i+1 < len(rest) {
				i++
				value = rest[i]
			}
			set(p, value)
			continue
		}
		if len(positional) > 0 {
			set(positional[0], w)
			if positional[0].Type != tools.Strings {
				positional = positional[1:]
			}
		}
	}
	b, err := rawJSON(args)
	if err != nil {
		return line, false
	}
	return ToolName(t.Name) + " " + string(b), true
}

// shellWords splits a command line as the CLI's examples write it:
// words separated by spaces, "double" or 'single' quotes grouping.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// mcpHint renders a hint "dont …  # why" as its MCP tool call.
func mcpHint(h string) string {
	cmd, why, hasWhy := strings.Cut(h, "  # ")
	m, ok := mcpCommand(strings.TrimSpace(cmd))
	if !ok {
		return h
	}
	if hasWhy {
		return m + "  # " + why
	}
	return m
}

// mcpText rewrites an envelope's caller-facing text for an MCP caller:
// the remediation of an error, the hints, and a spawn request's prompt.
// Only those strings change, in place: every other byte of the data is
// what the other transports return.
func mcpText(env *envelope.Envelope) {
	for i, h := range env.Hints {
		env.Hints[i] = mcpHint(h)
	}
	if len(env.Data) == 0 {
		return
	}
	var d struct {
		Remediation []errs.Step `json:"remediation"`
		Context     struct {
			Prompt string `json:"prompt"`
		} `json:"context"`
	}
	if json.Unmarshal(env.Data, &d) != nil {
		return
	}
	// The string as the data encodes it: without HTML escaping (success
	// data, envelope.MarshalData) or with it (an error, envelope.Fail).
	replace := func(old, new string) {
		o, err1 := rawJSON(old)
		n, err2 := rawJSON(new)
		if err1 == nil && err2 == nil {
			env.Data = bytes.ReplaceAll(env.Data, o, n)
		}
		if o, err := json.Marshal(old); err == nil {
			n, _ := json.Marshal(new)
			env.Data = bytes.ReplaceAll(env.Data, o, n)
		}
	}
	if !env.OK {
		for _, s := range d.Remediation {
			if m, ok := mcpCommand(s.Command); ok {
				replace(s.Command, m)
			}
		}
	}
	if env.OK && d.Context.Prompt != "" {
		if p := PromptText(d.Context.Prompt); p != d.Context.Prompt {
			replace(d.Context.Prompt, p)
		}
	}
}

// rawJSON encodes v without HTML escaping, as envelopes are encoded:
// placeholders read <like this>.
func rawJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// PromptText renders the callback instructions of a spawn prompt as MCP
// tool calls, as a spawn request's prompt reads over MCP. Only the text after the data block's closing fence is
// touched: the quoted data is an agent's and stays byte for byte (its
// fence tag cannot occur in it: spawn.Fence).
func PromptText(p string) string {
	at := strings.LastIndex(p, "<<<END DATA ")
	if at < 0 {
		return p
	}
	head, tail := p[:at], p[at:]
	lines := strings.Split(tail, "\n")
	for i, l := range lines {
		start := strings.Index(l, "dont ")
		if start < 0 || (start > 0 && l[start-1] != ' ') {
			continue
		}
		cmd, after := l[start:], ""
		if j := strings.Index(cmd, "   ("); j >= 0 {
			cmd, after = cmd[:j], cmd[j:]
		}
		m, ok := mcpCommand(strings.TrimSuffix(strings.TrimSpace(cmd), " …"))
		if !ok {
			continue
		}
		lines[i] = l[:start] + "the " + m[:strings.IndexByte(m, ' ')] + " tool with " + m[strings.IndexByte(m, ' ')+1:] + after
	}
	return head + strings.Join(lines, "\n")
}
