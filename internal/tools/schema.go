package tools

// InputSchema is the JSON Schema (draft 2020-12) of the tool's arguments,
// generated from its Params: what MCP's tool list (and the HTTP API's tool
// schema) publish. Internal params, set by front ends and never by callers,
// are left out; so is anything the schema cannot say (positional order,
// CLI short flags, environment fallbacks).
func (t *Tool) InputSchema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.Params {
		if p.Internal {
			continue
		}
		s := map[string]any{"type": p.Type, "description": p.Description}
		if p.Type == Strings {
			s["items"] = map[string]any{"type": String}
		}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.Default != nil {
			s["default"] = p.Default
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}
