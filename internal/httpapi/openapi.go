package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
)

var (
	openapiOnce sync.Once
	openapiDoc  []byte
)

func (s *server) openapi(w http.ResponseWriter, r *http.Request) {
	openapiOnce.Do(func() { openapiDoc, _ = json.MarshalIndent(OpenAPI(), "", "  ") })
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}

// OpenAPI builds the OpenAPI 3.1 document from the tool registry, so the
// description cannot drift from the routes.
func OpenAPI() map[string]any {
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	errorResponses := func(codes ...string) map[string]any {
		out := map[string]any{}
		for _, c := range codes {
			out[c] = map[string]any{"description": "error envelope; data.remediation lists what to run next", "content": jsonBody(ref("ErrorEnvelope"))}
		}
		return out
	}
	paths := map[string]any{
		"/v1/health": map[string]any{"get": map[string]any{
			"operationId": "health", "summary": "Liveness.",
			"responses": map[string]any{"200": map[string]any{"description": "ok", "content": jsonBody(ref("Envelope"))}},
		}},
		"/v1/tools": map[string]any{"get": map[string]any{
			"operationId": "listTools", "summary": "The tool schema (the same definitions drive the CLI and MCP).",
			"parameters": []any{capsParameter()},
			"responses":  map[string]any{"200": map[string]any{"description": "envelope_kind tools", "content": jsonBody(ref("Envelope"))}},
		}},
		"/approvals": map[string]any{"get": map[string]any{
			"operationId": "approvalsPage", "summary": "The approver's web page (HTML): pending requests with countdowns, approve and refuse.",
			"responses": map[string]any{"200": map[string]any{"description": "text/html", "content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}}},
		}},
		"/v1/openapi.json": map[string]any{"get": map[string]any{
			"operationId": "openapi", "summary": "This document.",
			"responses": map[string]any{"200": map[string]any{"description": "OpenAPI 3.1", "content": jsonBody(map[string]any{"type": "object"})}},
		}},
	}
	for _, t := range tools.All() {
		responses := errorResponses("400", "401", "403", "404", "409", "410", "413", "415", "422", "429", "500", "503")
		responses["200"] = map[string]any{"description": "success envelope", "content": jsonBody(ref("Envelope"))}
		switch {
		case t.Annotations.InteractiveOnly:
			// Never held: without a person's confirmation at a client it is refused.
			for c, r := range errorResponses("428") {
				r.(map[string]any)["description"] = "interactive-only: no person confirmed it at a client (cli_confirmed from a caller declaring cli-confirm-v1); nothing ran and nothing is held"
				responses[c] = r
			}
		case t.Annotations.Gated():
			responses["202"] = map[string]any{"description": heldDescription, "content": jsonBody(ref("Envelope"))}
		}
		paths["/v1/tools/"+t.Name] = map[string]any{"post": map[string]any{
			"operationId": "call_" + t.Name,
			"summary":     t.Summary,
			"security":    []any{map[string]any{"bearer": []any{}}},
			"parameters": []any{
				map[string]any{"name": "Idempotency-Key", "in": "header", "required": false, "schema": map[string]any{"type": "string", "maxLength": 255},
					"description": idempotencyKeyDescription(t)},
				map[string]any{"name": "X-Request-Id", "in": "header", "required": false, "schema": map[string]any{"type": "string"}},
				capsParameter(),
			},
			"requestBody": map[string]any{"required": false, "content": jsonBody(map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": callProperties(t),
			})},
			"responses":    responses,
			"x-dont-roles": t.AllowedRoles(),
		}}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "dont API", "version": envelope.Version,
			"description": "Every response is an envelope. Errors carry data.code, data.message and a non-empty data.remediation[]."},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a bearer token from dont tokens create, or a spawn's callback token"}},
			"schemas": envelopeSchemas(),
		},
	}
}

func envelopeSchemas() map[string]any {
	str := map[string]any{"type": "string"}
	step := map[string]any{"type": "object", "required": []any{"command", "description"}, "additionalProperties": false,
		"properties": map[string]any{"command": str, "description": str}}
	warning := map[string]any{"type": "object", "required": []any{"code", "message"}, "additionalProperties": false,
		"properties": map[string]any{"code": str, "message": str, "request_id": str, "outcome": str}}
	meta := map[string]any{"type": "object", "required": []any{"duration_ms", "request_id"}, "additionalProperties": false,
		"properties": map[string]any{"duration_ms": map[string]any{"type": "integer", "minimum": 0}, "request_id": str, "mode": str}}
	common := func(ok bool, kind, data any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false,
			"required": []any{"envelope_version", "cli_version", "ok", "envelope_kind", "data", "hints", "warnings", "meta"},
			"properties": map[string]any{
				"envelope_version": map[string]any{"const": envelope.Version},
				"cli_version":      str,
				"ok":               map[string]any{"const": ok},
				"envelope_kind":    kind,
				"data":             data,
				"hints":            map[string]any{"type": "array", "items": str},
				"warnings":         map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Warning"}},
				"meta":             map[string]any{"$ref": "#/components/schemas/Meta"},
			}}
	}
	errorData := map[string]any{"type": "object", "additionalProperties": false,
		"required": []any{"code", "message", "unmet_clauses", "remediation"},
		"properties": map[string]any{
			"code": map[string]any{"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$"}, "message": str, "entity_id": str,
			"unmet_clauses": map[string]any{"type": "array", "items": str},
			"remediation":   map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"$ref": "#/components/schemas/Step"}},
		}}
	return map[string]any{
		"Step": step, "Warning": warning, "Meta": meta, "ErrorData": errorData,
		"Envelope":      common(true, map[string]any{"type": "string", "not": map[string]any{"const": "error"}}, map[string]any{}),
		"ErrorEnvelope": common(false, map[string]any{"const": "error"}, map[string]any{"$ref": "#/components/schemas/ErrorData"}),
	}
}
