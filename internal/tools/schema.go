package tools

// InputSchema is the JSON Schema (2020-12) of the tool's arguments. Internal
// params (set by front ends) are included only when asked for.
func (t *Tool) InputSchema(withInternal bool) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.Params {
		if p.Internal && !withInternal {
			continue
		}
		s := map[string]any{"type": p.Type, "description": p.Description}
		if p.Type == Strings {
			s["items"] = map[string]any{"type": "string"}
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
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}
