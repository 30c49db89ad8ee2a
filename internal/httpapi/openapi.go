package httpapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
)

var (
	openapiOnce sync.Once
	openapiDoc  []byte
)

func (s *server) openapi(w http.ResponseWriter, r *http.Request) {
	openapiOnce.Do(func() { openapiDoc, _ = json.MarshalIndent(OpenAPI(), "", "  ") })
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", requestID(r))
	w.Write(openapiDoc)
}

// OpenAPI builds the OpenAPI 3.1 document from the tool registry, so the
// description cannot drift from the routes. Every success names its
// envelope kinds, and each kind's data schema is a component generated
// from the same per-kind table MCP's outputSchema uses (internal/tools,
// outputs.go). Every status the server sends is listed, with the headers
// it carries: X-Request-Id on every answer, Retry-After on 429, Allow on
// 405, WWW-Authenticate on 401, Idempotent-Replayed on a replay.
func OpenAPI() map[string]any {
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	headers := func(extra ...string) map[string]any {
		h := map[string]any{"X-Request-Id": ref("headers", "X-Request-Id")}
		for _, name := range extra {
			h[name] = ref("headers", name)
		}
		return h
	}
	errorResponse := func(status int, extra ...string) map[string]any {
		return map[string]any{"description": errorDescription(status), "headers": headers(extra...), "content": jsonBody(ref("schemas", "ErrorEnvelope"))}
	}
	routeErrors := func(out map[string]any) map[string]any {
		out["404"] = errorResponse(404)
		out["405"] = errorResponse(405, "Allow")
		out["500"] = errorResponse(500)
		return out
	}
	kindEnvelope := func(kinds []string) map[string]any {
		if len(kinds) == 1 {
			return ref("schemas", envelopeName(kinds[0]))
		}
		var alts []any
		for _, k := range kinds {
			alts = append(alts, ref("schemas", envelopeName(k)))
		}
		return map[string]any{"oneOf": alts, "discriminator": map[string]any{"propertyName": "envelope_kind", "mapping": discriminatorMapping(kinds)}}
	}
	paths := map[string]any{
		"/v1/health": map[string]any{"get": map[string]any{
			"operationId": "health", "summary": "Liveness.",
			"responses": routeErrors(map[string]any{"200": map[string]any{"description": "ok", "headers": headers(), "content": jsonBody(ref("schemas", envelopeName("health")))}}),
		}},
		"/v1/tools": map[string]any{"get": map[string]any{
			"operationId": "listTools", "summary": "The tool schema (the same definitions drive the CLI and MCP).",
			"parameters": []any{capsParameter()},
			"responses":  routeErrors(map[string]any{"200": map[string]any{"description": "envelope_kind tools", "headers": headers(), "content": jsonBody(ref("schemas", envelopeName("tools")))}}),
		}},
		"/approvals": map[string]any{"get": map[string]any{
			"operationId": "approvalsPage", "summary": "The approver's web page (HTML): pending requests with countdowns, approve and refuse.",
			"responses": routeErrors(map[string]any{"200": map[string]any{"description": "text/html", "content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}}}),
		}},
		"/v1/openapi.json": map[string]any{"get": map[string]any{
			"operationId": "openapi", "summary": "This document.",
			"responses": routeErrors(map[string]any{"200": map[string]any{"description": "OpenAPI 3.1", "headers": headers(), "content": jsonBody(map[string]any{"type": "object"})}}),
		}},
		// Concrete paths match before this template: it is every name the
		// server has no tool for.
		"/v1/tools/{name}": map[string]any{"post": map[string]any{
			"operationId": "unknownTool", "summary": "A tool this server does not have: 404 route-not-found, with the command that lists the tools.",
			"parameters": []any{map[string]any{"name": "name", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
			"responses":  routeErrors(map[string]any{}),
		}},
	}
	for _, t := range tools.All() {
		responses := map[string]any{}
		for _, status := range errorStatuses() {
			switch status {
			case 401:
				responses["401"] = errorResponse(status, "WWW-Authenticate")
			case 405:
				responses["405"] = errorResponse(status, "Allow")
			case 428:
				if t.Annotations.InteractiveOnly {
					r := errorResponse(status)
					r["description"] = "interactive-only: no person confirmed it at a client (cli_confirmed from a caller declaring cli-confirm-v1); nothing ran and nothing is held. " + errorDescription(status)
					responses["428"] = r
				} else {
					responses["428"] = errorResponse(status)
				}
			case 429:
				responses["429"] = errorResponse(status, "Retry-After")
			default:
				responses[strconv.Itoa(status)] = errorResponse(status)
			}
		}
		responses["200"] = map[string]any{"description": "success envelope: envelope_kind " + strings.Join(t.RunKinds(), ", "),
			"headers": headers("Idempotent-Replayed"), "content": jsonBody(kindEnvelope(t.RunKinds()))}
		if t.Holdable() {
			responses["202"] = map[string]any{"description": heldDescription, "headers": headers("Idempotent-Replayed"),
				"content": jsonBody(ref("schemas", envelopeName(envelope.KindConfirmation)))}
		}
		paths["/v1/tools/"+t.Name] = map[string]any{"post": map[string]any{
			"operationId": "call_" + t.Name,
			"summary":     t.Summary,
			"security":    []any{map[string]any{"bearer": []any{}}},
			"parameters": []any{
				map[string]any{"name": "Idempotency-Key", "in": "header", "required": false, "schema": map[string]any{"type": "string", "maxLength": 255},
					"description": idempotencyKeyDescription(t)},
				map[string]any{"name": "X-Request-Id", "in": "header", "required": false, "schema": map[string]any{"type": "string"},
					"description": "the caller's request id: when it matches " + requestIDRe().String() + " it is echoed in meta.request_id and the X-Request-Id header; otherwise the server makes one"},
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
		"servers": []any{
			map[string]any{"url": "/", "description": "the server that serves this document (dont serve, or the API function's endpoint)"},
			map[string]any{"url": "{endpoint}", "description": "a dont serve or API endpoint (DONT_ENDPOINT)",
				"variables": map[string]any{"endpoint": map[string]any{"default": "http://127.0.0.1:8700"}}},
		},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a bearer token from dont tokens create, or a spawn's callback token; the scheme name is case-insensitive (RFC 7235)"}},
			"schemas": componentSchemas(),
			"headers": map[string]any{
				"X-Request-Id":        header("string", "this answer's request id, also meta.request_id: the caller's own X-Request-Id when well-formed, else req:…"),
				"Retry-After":         header("integer", "seconds until this token may call again"),
				"Allow":               header("string", "the one method the path answers"),
				"WWW-Authenticate":    header("string", `Bearer realm="dont"`),
				"Idempotent-Replayed": header("string", `"true" when this is the remembered response of an earlier request with the same Idempotency-Key; the call was not applied again`),
			},
		},
	}
}

func ref(section, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + section + "/" + name}
}

func header(typ, description string) map[string]any {
	return map[string]any{"description": description, "schema": map[string]any{"type": typ}}
}

// errorStatuses are every HTTP status an error may answer, from the one
// table (internal/present).
func errorStatuses() []int {
	seen := map[int]bool{}
	for _, c := range present.Codes() {
		seen[present.Status(errs.E(c, ""))] = true
	}
	out := make([]int, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

// errorDescription names the codes that answer a status.
func errorDescription(status int) string {
	var codes []string
	for _, c := range present.Codes() {
		if present.Status(errs.E(c, "")) == status {
			codes = append(codes, string(c))
		}
	}
	return "error envelope (" + http.StatusText(status) + "); data.code is one of " + strings.Join(codes, ", ") + "; data.remediation lists what to run next"
}

// typeName is a kind's component name: spawn_request → SpawnRequest.
func typeName(kind string) string {
	var b strings.Builder
	for _, part := range strings.Split(kind, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func envelopeName(kind string) string { return typeName(kind) + "Envelope" }
func dataName(kind string) string     { return typeName(kind) + "Data" }

func discriminatorMapping(kinds []string) map[string]any {
	m := map[string]any{}
	for _, k := range kinds {
		m[k] = "#/components/schemas/" + envelopeName(k)
	}
	return m
}

// componentSchemas are the envelope's parts, the error envelope, and per
// kind its data and its envelope.
func componentSchemas() map[string]any {
	warning, meta := ref("schemas", "Warning"), ref("schemas", "Meta")
	out := map[string]any{
		"Step": tools.StepSchema(), "Warning": tools.WarningSchema(), "Meta": tools.MetaSchema(),
		"ErrorData":     tools.ErrorDataSchema(ref("schemas", "Step")),
		"ErrorEnvelope": tools.EnvelopeSchema(false, map[string]any{"const": envelope.KindError}, ref("schemas", "ErrorData"), warning, meta),
		// Any success, whatever its kind.
		"Envelope": tools.EnvelopeSchema(true, map[string]any{"type": "string", "not": map[string]any{"const": envelope.KindError}}, map[string]any{}, warning, meta),
	}
	for _, k := range tools.Kinds() {
		data, _ := tools.DataSchema(k)
		out[dataName(k)] = data
		out[envelopeName(k)] = tools.EnvelopeSchema(true, map[string]any{"const": k}, ref("schemas", dataName(k)), warning, meta)
	}
	for _, k := range tools.FrontEndKinds {
		data := map[string]any{"type": "object"}
		if k == envelope.KindHealth {
			data = map[string]any{"type": "object", "required": []any{"ok"}, "properties": map[string]any{"ok": map[string]any{"const": true}}}
		}
		out[dataName(k)] = data
		out[envelopeName(k)] = tools.EnvelopeSchema(true, map[string]any{"const": k}, ref("schemas", dataName(k)), warning, meta)
	}
	return out
}
