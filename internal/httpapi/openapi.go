package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/google/jsonschema-go/jsonschema"
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
// 405, WWW-Authenticate on 401, Idempotent-Replayed on a replay. The
// error answers are shared components (one per status; data.code is an
// enum of internal/present's table), and the webhook deliveries
// (internal/hooks) are its webhooks. docs/design.md#the-openapi-document
// says what it promises and how it is linted.
func OpenAPI() map[string]any {
	paths := map[string]any{
		"/v1/health": map[string]any{"get": publicOperation("health", tagService, "Liveness",
			"Answers 200 with data.ok true while the server runs. It needs no token.",
			successResponse("ok: envelope_kind health", ref("schemas", envelopeName(envelope.KindHealth))))},
		"/v1/tools": map[string]any{"get": withParameters(publicOperation("listTools", tagService, "List the tools",
			"The tool schema (the same definitions drive the CLI and MCP): every tool's name, summary, argument schema, annotations and the roles that may call it, "+
				"and the features this server offers the caller. The view depends on X-Dont-CLI-Caps. It needs no token.",
			successResponse("envelope_kind tools", ref("schemas", envelopeName(envelope.KindTools)))), ref("parameters", "CLICaps"))},
		"/approvals": map[string]any{"get": publicOperation("approvalsPage", tagApprovals, "The approvals page",
			"The approver's web page (HTML): pending requests with countdowns, approve and refuse. The page asks for an approver token itself.",
			map[string]any{"description": "the page (text/html)", "content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}})},
		"/v1/passkeys/signin/begin": map[string]any{"post": publicOperation("passkeySignInBegin", tagApprovals, "Begin a passkey sign-in",
			"The options for navigator.credentials.get (data.options.publicKey) and the challenge that names this sign-in, single-use for two minutes. "+
				"It needs no token: the passkey is the credential. Served by dont serve (one project); the API function answers passkeys-unavailable.",
			successResponse("envelope_kind passkey_options", ref("schemas", envelopeName(envelope.KindPasskeyOptions))))},
		"/v1/passkeys/signin/finish": map[string]any{"post": withBody(publicOperation("passkeySignInFinish", tagApprovals, "Finish a passkey sign-in",
			"Verifies a user-verified assertion of a registered passkey over the challenge of the begin, and answers data.session: a bearer credential "+
				"that stands for that approver's token for 12 hours, while the token is not revoked (docs/approvals.md, Passkeys).",
			successResponse("envelope_kind passkey_signin", ref("schemas", envelopeName(envelope.KindPasskeySignIn)))),
			map[string]any{"type": "object", "required": []any{"challenge", "credential"}, "additionalProperties": false,
				"properties": map[string]any{"challenge": map[string]any{"type": "string"}, "credential": map[string]any{"type": "object"}}})},
		"/v1/openapi.json": map[string]any{"get": publicOperation("openapi", tagService, "This document",
			"The OpenAPI 3.1 document of this server, generated from its tool registry.",
			map[string]any{"description": "OpenAPI 3.1", "headers": headers(), "content": jsonBody(map[string]any{
				"type": "object", "required": []any{"openapi", "info", "paths"},
				"properties": map[string]any{"openapi": map[string]any{"type": "string"}, "info": map[string]any{"type": "object"}, "paths": map[string]any{"type": "object"}}})})},
	}
	for _, t := range tools.All() {
		paths["/v1/tools/"+t.Name] = map[string]any{"post": toolOperation(t)}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "dont API", "version": envelope.Version,
			"description": "Every JSON answer but this document is an envelope: ok, envelope_kind, data, hints, warnings, meta. Errors carry data.code (one of the ErrorCode enum), " +
				"data.message and a non-empty data.remediation[]. Each tool is POST /v1/tools/<name>; a name no tool has answers 404 route-not-found. " +
				"The webhooks are the deliveries a webhook subscription receives (dont hooks add)."},
		"servers": []any{
			map[string]any{"url": "/", "description": "the server that serves this document (dont serve, or the API function's endpoint)"},
			map[string]any{"url": "{endpoint}", "description": "a dont serve or API endpoint (DONT_ENDPOINT)",
				"variables": map[string]any{"endpoint": map[string]any{"default": "http://127.0.0.1:8700"}}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"tags":     tagList(),
		"paths":    paths,
		"webhooks": webhooks(),
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a bearer token from dont tokens create, or a spawn's callback token; the scheme name is case-insensitive (RFC 7235)"}},
			"schemas":    componentSchemas(),
			"responses":  errorResponses(),
			"parameters": componentParameters(),
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

// Tags group the operations; a tool's tag is the part of its name before
// the dot, and the ledger verbs (conclude, assume, lock, …) are "ledger".
const (
	tagService   = "service"
	tagLedger    = "ledger"
	tagApprovals = "approvals"
	tagSpawns    = "spawns"
	tagWebhooks  = "webhooks"
)

var tagDescriptions = map[string]string{
	tagService:      "The server itself: liveness, the tool schema, this document.",
	tagLedger:       "Claims and terms: conclude, define, verify (assume, overlook, guess), dismiss, trust, ignore, lock, reopen, read.",
	tagSpawns:       "Spawn requests: their callbacks, answers, heartbeats and cancels.",
	tagApprovals:    "Sessions' tier escalations and the people who answer them (docs/approvals.md).",
	"sessions":      "Harness sessions and their tiers.",
	"confirmations": "Gated calls held for a person's confirmation.",
	"tokens":        "Bearer tokens: mint, list, revoke (admin).",
	"hooks":         "Webhook subscriptions and their deliveries (docs/hooks.md, admin).",
	tagWebhooks:     "What a webhook subscription receives: one signed POST per event (Standard Webhooks).",
}

// toolTag is the tag of a tool: its name's group, or the verbs' own.
func toolTag(name string) string {
	if group, _, ok := strings.Cut(name, "."); ok {
		return group
	}
	switch name {
	case "escalate":
		return tagApprovals
	case "spawns", "answer":
		return tagSpawns
	}
	return tagLedger
}

// tagList is every tag an operation has, described; a tool group added
// to the registry gets a plain description until it has its own.
func tagList() []any {
	used := map[string]bool{tagService: true, tagApprovals: true, tagWebhooks: true}
	for _, t := range tools.All() {
		used[toolTag(t.Name)] = true
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]any, 0, len(names))
	for _, n := range names {
		description, ok := tagDescriptions[n]
		if !ok {
			description = "The " + n + " tools."
		}
		out = append(out, map[string]any{"name": n, "description": description})
	}
	return out
}

func jsonBody(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func headers(extra ...string) map[string]any {
	h := map[string]any{"X-Request-Id": ref("headers", "X-Request-Id")}
	for _, name := range extra {
		h[name] = ref("headers", name)
	}
	return h
}

func successResponse(description string, schema any) map[string]any {
	return map[string]any{"description": description, "headers": headers(), "content": jsonBody(schema)}
}

// routeErrors are the answers of every route before it runs: an unknown
// path, a wrong method, a failure.
func routeErrors(out map[string]any) map[string]any {
	for _, status := range []int{404, 405, 500} {
		out[strconv.Itoa(status)] = ref("responses", errorResponseName(status))
	}
	return out
}

// publicOperation is a route that needs no token.
func publicOperation(id, tag, summary, description string, ok map[string]any) map[string]any {
	return map[string]any{"operationId": id, "tags": []any{tag}, "summary": summary, "description": description,
		"security": []any{}, "responses": routeErrors(map[string]any{"200": ok})}
}

func withBody(op map[string]any, schema map[string]any) map[string]any {
	op["requestBody"] = map[string]any{"required": true, "content": jsonBody(schema)}
	return op
}

func withParameters(op map[string]any, params ...any) map[string]any {
	op["parameters"] = params
	return op
}

func toolOperation(t *tools.Tool) map[string]any {
	responses := map[string]any{}
	for _, status := range errorStatuses() {
		name := errorResponseName(status)
		if status == 428 && t.Annotations.InteractiveOnly {
			name = interactiveOnlyResponse
		}
		responses[strconv.Itoa(status)] = ref("responses", name)
	}
	responses["200"] = map[string]any{"description": "success envelope: envelope_kind " + strings.Join(t.RunKinds(), ", "),
		"headers": headers("Idempotent-Replayed"), "content": jsonBody(kindEnvelope(t.RunKinds()))}
	if t.Holdable() {
		responses["202"] = ref("responses", heldResponse)
	}
	idempotency := "IdempotencyKey"
	if t.Annotations.ReadOnly {
		idempotency = "IdempotencyKeyIgnored"
	}
	summary := t.Title
	if summary == "" {
		summary = t.Name
	}
	return map[string]any{
		"operationId": "call_" + t.Name,
		"tags":        []any{toolTag(t.Name)},
		"summary":     summary,
		"description": toolDescription(t),
		"parameters":  []any{ref("parameters", idempotency), ref("parameters", "XRequestId"), ref("parameters", "CLICaps")},
		"requestBody": map[string]any{"required": false, "content": jsonBody(map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": callProperties(t),
		})},
		"responses":    responses,
		"x-dont-roles": t.AllowedRoles(),
	}
}

// toolDescription is the tool's summary and what a caller must know
// before calling it: who may, and whether it is held or only reads.
func toolDescription(t *tools.Tool) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(t.Summary, "."))
	b.WriteString(". Roles: " + strings.Join(t.AllowedRoles(), ", ") + ".")
	a := t.Annotations
	switch {
	case a.ReadOnly:
		b.WriteString(" Read-only.")
	case a.InteractiveOnly:
		b.WriteString(" Interactive-only: it runs only when a person confirmed it at a client (cli_confirmed); otherwise 428.")
	case a.Gated():
		b.WriteString(" Gated: unconfirmed, it is held (202) until an approver or admin confirms it.")
	}
	if a.Destructive {
		b.WriteString(" Destructive: its effect cannot be taken back by the caller.")
	}
	return b.String()
}

func kindEnvelope(kinds []string) map[string]any {
	if len(kinds) == 1 {
		return ref("schemas", envelopeName(kinds[0]))
	}
	var alts []any
	for _, k := range kinds {
		alts = append(alts, ref("schemas", envelopeName(k)))
	}
	return map[string]any{"oneOf": alts, "discriminator": map[string]any{"propertyName": "envelope_kind", "mapping": discriminatorMapping(kinds)}}
}

func ref(section, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + section + "/" + name}
}

func header(typ, description string) map[string]any {
	return map[string]any{"description": description, "schema": map[string]any{"type": typ}}
}

func componentParameters() map[string]any {
	idem := func(description string) map[string]any {
		return map[string]any{"name": "Idempotency-Key", "in": "header", "required": false,
			"schema": map[string]any{"type": "string", "maxLength": 255}, "description": description}
	}
	return map[string]any{
		"IdempotencyKey":        idem(idempotencyKeyDescription(false)),
		"IdempotencyKeyIgnored": idem(idempotencyKeyDescription(true)),
		"XRequestId": map[string]any{"name": "X-Request-Id", "in": "header", "required": false, "schema": map[string]any{"type": "string"},
			"description": "the caller's request id: when it matches " + requestIDPattern + " it is echoed in meta.request_id and the X-Request-Id header; otherwise the server makes one"},
		"CLICaps": capsParameter(),
	}
}

// The shared responses besides one per error status.
const (
	heldResponse            = "Held"
	interactiveOnlyResponse = "PreconditionRequiredInteractiveOnly"
)

// errorResponseName is a status's shared response: 400 → BadRequest.
func errorResponseName(status int) string {
	if status == 499 {
		return "ClientClosedRequest"
	}
	return strings.NewReplacer(" ", "", "-", "").Replace(http.StatusText(status))
}

func errorResponses() map[string]any {
	errorResponse := func(status int, description string) map[string]any {
		var extra []string
		switch status {
		case 401:
			extra = []string{"WWW-Authenticate"}
		case 405:
			extra = []string{"Allow"}
		case 429:
			extra = []string{"Retry-After"}
		}
		return map[string]any{"description": description, "headers": headers(extra...), "content": jsonBody(ref("schemas", "ErrorEnvelope"))}
	}
	out := map[string]any{
		heldResponse: map[string]any{"description": heldDescription, "headers": headers("Idempotent-Replayed"),
			"content": jsonBody(ref("schemas", envelopeName(envelope.KindConfirmation)))},
		interactiveOnlyResponse: errorResponse(428, "interactive-only: no person confirmed it at a client (cli_confirmed from a caller declaring cli-confirm-v1); "+
			"nothing ran and nothing is held. "+errorDescription(428)),
	}
	for _, status := range errorStatuses() {
		description := errorDescription(status)
		if status == 404 {
			description += "; route-not-found also answers a path or tool name the server does not have"
		}
		out[errorResponseName(status)] = errorResponse(status, description)
	}
	return out
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
	text := http.StatusText(status)
	if text == "" {
		text = "client closed the request"
	}
	return "error envelope (" + text + "); data.code is one of " + strings.Join(codes, ", ") + "; data.remediation lists what to run next"
}

// typeName is a kind's component name: spawn_request → SpawnRequest.
func typeName(kind string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(kind, func(r rune) bool { return r == '_' || r == '.' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
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

// componentSchemas are the envelope's parts, the error envelope with its
// code enum, per kind its data and its envelope (the tools' kinds and the
// two the server builds itself, health and tools), and the webhook
// payloads.
func componentSchemas() map[string]any {
	warning, meta := ref("schemas", "Warning"), ref("schemas", "Meta")
	errorData := tools.ErrorDataSchema(ref("schemas", "Step"))
	errorData["properties"].(map[string]any)["code"] = ref("schemas", "ErrorCode")
	code := tools.ErrorCodeSchema()
	code["description"] = "a stable kebab-case error code; its HTTP status, exit code and remediation are internal/present's table"
	out := map[string]any{
		"Step": tools.StepSchema(), "Warning": tools.WarningSchema(), "Meta": tools.MetaSchema(),
		"ErrorCode":     code,
		"ErrorData":     errorData,
		"ErrorEnvelope": tools.EnvelopeSchema(false, map[string]any{"const": envelope.KindError}, ref("schemas", "ErrorData"), warning, meta),
	}
	addKind := func(kind string, data map[string]any) {
		out[dataName(kind)] = data
		out[envelopeName(kind)] = tools.EnvelopeSchema(true, map[string]any{"const": kind}, ref("schemas", dataName(kind)), warning, meta)
	}
	for _, k := range tools.Kinds() {
		data, _ := tools.DataSchema(k)
		addKind(k, data)
	}
	addKind(envelope.KindHealth, map[string]any{"type": "object", "required": []any{"ok"}, "additionalProperties": false,
		"properties": map[string]any{"ok": map[string]any{"const": true}}})
	addKind(envelope.KindTools, toolsData())
	for name, s := range webhookSchemas() {
		out[name] = s
	}
	return out
}

// toolsData is GET /v1/tools' data. The schema of a Go slice allows null,
// but tools.SchemaFor always lists the tools and each tool's roles (an
// empty list at worst), so a typed client reads data.tools[0].name
// without a null check; TestResponsesMatchTheOpenAPIDocument validates
// the real answer against it.
func toolsData() map[string]any {
	s := goSchema(reflect.TypeFor[tools.Schema]())
	list := s["properties"].(map[string]any)["tools"].(map[string]any)
	list["type"] = "array"
	list["items"].(map[string]any)["properties"].(map[string]any)["roles"].(map[string]any)["type"] = "array"
	return s
}

// goSchema is the JSON Schema of a Go type as encoding/json writes it.
func goSchema(t reflect.Type) map[string]any {
	str := func(values ...string) *jsonschema.Schema {
		e := make([]any, len(values))
		for i, v := range values {
			e[i] = v
		}
		return &jsonschema.Schema{Type: "string", Enum: e}
	}
	tiers := make([]string, 0, len(approvals.Tiers))
	for _, tier := range approvals.Tiers {
		tiers = append(tiers, string(tier))
	}
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[time.Time]():         {Type: "string", Format: "date-time"},
		reflect.TypeFor[approvals.Tier]():    str(tiers...),
		reflect.TypeFor[approvals.State]():   str(string(approvals.Pending), string(approvals.Resolved)),
		reflect.TypeFor[approvals.Verdict](): str(string(approvals.Approved), string(approvals.Refused), string(approvals.TimedOut), string(approvals.Cancelled)),
		reflect.TypeFor[approvals.Cause]():   str(string(approvals.CauseAnswer), string(approvals.CauseUnreadable), string(approvals.CauseNoSubscriber), string(approvals.CauseChannelError), string(approvals.CauseDeadline), string(approvals.CauseRequester)),
		reflect.TypeFor[hooks.EventType]():   {Type: "string"},
		reflect.TypeFor[json.RawMessage]():   {},
	}}
	s, err := jsonschema.ForType(t, opts)
	if err != nil {
		panic("httpapi: the JSON Schema of " + t.String() + ": " + err.Error())
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}
