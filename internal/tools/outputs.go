package tools

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/google/jsonschema-go/jsonschema"
)

// The output side of the tool surface: which envelope kinds each tool's
// success returns, and the JSON Schema of each kind's data. MCP's
// outputSchema and the OpenAPI document's response schemas are both built
// from these two tables, so there is one source of truth for what a client
// receives. TestEveryToolDeclaresItsOutputKinds and
// TestEveryEnvelopeKindHasADataSchema fail on a tool or a kind added
// without its row.

// dataTypes is, per envelope kind, the Go type(s) its data marshals from.
// A kind with several types is any one of them. Like outputKinds it is
// built on first use: only schemas and the output tests read it, and a
// CLI command should not build it at start.
var dataTypes = sync.OnceValue(func() map[string][]reflect.Type {
	return map[string][]reflect.Type{
		string(ledger.KindClaim):    {reflect.TypeFor[service.EntityView]()},
		string(ledger.KindTerm):     {reflect.TypeFor[service.EntityView]()},
		envelope.KindList:           {reflect.TypeFor[service.EntityList]()},
		envelope.KindSpawnRequest:   {reflect.TypeFor[spawn.Request]()},
		envelope.KindSpawn:          {reflect.TypeFor[service.SpawnView](), reflect.TypeFor[service.Answered]()},
		envelope.KindSpawns:         {reflect.TypeFor[service.SpawnList]()},
		envelope.KindSpawnCancel:    {reflect.TypeFor[service.CancelResult]()},
		envelope.KindAnswer:         {reflect.TypeFor[service.Answered]()},
		envelope.KindSweep:          {reflect.TypeFor[service.SweepReport]()},
		envelope.KindSession:        {reflect.TypeFor[service.SessionView]()},
		envelope.KindApproval:       {reflect.TypeFor[service.ApprovalView]()},
		envelope.KindApprovals:      {reflect.TypeFor[service.ApprovalList]()},
		envelope.KindEscalation:     {reflect.TypeFor[service.ApprovalView]()},
		envelope.KindFrames:         {reflect.TypeFor[service.FramesPage]()},
		envelope.KindApprovalsSweep: {reflect.TypeFor[service.ApprovalSweep]()},
		envelope.KindApprovalsAudit: {reflect.TypeFor[approvals.AuditReport]()},
		envelope.KindToken:          {reflect.TypeFor[service.TokenView]()},
		envelope.KindPasskey:        {reflect.TypeFor[service.PasskeyView]()},
		envelope.KindPasskeyOptions: {reflect.TypeFor[service.PasskeyOptions]()},
		envelope.KindPasskeySignIn:  {reflect.TypeFor[service.PasskeySignIn]()},
		envelope.KindTokens:         {reflect.TypeFor[service.TokenList]()},
		envelope.KindTokensRevoked:  {reflect.TypeFor[service.Revoked]()},
		envelope.KindConfirmation:   {reflect.TypeFor[service.HeldView](), reflect.TypeFor[service.ConfirmationView]()},
		envelope.KindConfirmations:  {reflect.TypeFor[service.ConfirmationList]()},
		envelope.KindSessions:       {reflect.TypeFor[service.SessionList]()},
		envelope.KindApprovalsInbox: {reflect.TypeFor[service.Inbox]()},
		envelope.KindSpawnHeartbeat: {reflect.TypeFor[service.HeartbeatResult]()},
		envelope.KindHook:           {reflect.TypeFor[service.HookView]()},
		envelope.KindHooks:          {reflect.TypeFor[service.HookList]()},
		envelope.KindHookTest:       {reflect.TypeFor[service.HookTestResult]()},
		envelope.KindHookDeliveries: {reflect.TypeFor[service.HookDeliveries]()},
		envelope.KindHookDeliver:    {reflect.TypeFor[service.DeliverResult]()},
		envelope.KindWhoAmI:         {reflect.TypeFor[service.Identity]()},
		envelope.KindSlackLinkCode:  {reflect.TypeFor[service.SlackLinkCodeView]()},
	}
})

// FrontEndKinds are the kinds no tool returns: a transport or the CLI
// builds them itself (GET /v1/tools, /v1/health, init, doctor, version,
// the CLI's NDJSON frame lines, the runner's report, the operator's
// project settings and secret rotation, dont config, dont harness
// install). Their data is an object.
var FrontEndKinds = []string{envelope.KindTools, envelope.KindHealth, envelope.KindInit, envelope.KindPassphrase, envelope.KindDoctor,
	envelope.KindProjectSettings, envelope.KindVersion, envelope.KindFrame, envelope.KindSecretRotation, envelope.KindSpawnRun, envelope.KindConfig,
	envelope.KindBackup, envelope.KindRestore, envelope.KindHarnessInstall, envelope.KindLogin}

// outputKinds is, per tool, the kinds of its successful results. A gated
// tool that may be held also returns KindConfirmation (added by
// OutputKinds), and confirmations.confirm returns whatever the call it
// confirms returns.
var outputKinds = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"conclude":                 {string(ledger.KindClaim)},
		"define":                   {string(ledger.KindTerm)},
		"trust":                    entityKinds,
		"dismiss":                  entityKinds,
		"lock":                     entityKinds,
		"ignore":                   entityKinds,
		"reopen":                   entityKinds,
		"show":                     {string(ledger.KindClaim), string(ledger.KindTerm), envelope.KindSpawnRequest},
		"list":                     {envelope.KindList},
		"assume":                   {envelope.KindSpawnRequest, string(ledger.KindClaim), string(ledger.KindTerm)},
		"overlook":                 {envelope.KindSpawnRequest, string(ledger.KindClaim), string(ledger.KindTerm)},
		"guess":                    {envelope.KindSpawnRequest, envelope.KindAnswer, envelope.KindSpawn},
		"answer":                   {envelope.KindAnswer, envelope.KindSpawn},
		"spawns":                   {envelope.KindSpawns},
		"sweep":                    {envelope.KindSweep},
		"spawns.cancel":            {envelope.KindSpawnCancel},
		"spawns.heartbeat":         {envelope.KindSpawnHeartbeat},
		"spawns.manage":            {envelope.KindSpawns, envelope.KindSpawn, envelope.KindSpawnCancel},
		"tokens.manage":            {envelope.KindTokens, envelope.KindToken},
		"tokens.revoke-all":        {envelope.KindTokensRevoked},
		"tokens.create":            {envelope.KindToken},
		"passkeys.register-begin":  {envelope.KindPasskeyOptions},
		"passkeys.register-finish": {envelope.KindPasskey},
		"passkeys.approve-begin":   {envelope.KindPasskeyOptions},
		"tokens.list":              {envelope.KindTokens},
		"tokens.revoke":            {envelope.KindToken},
		"confirmations.list":       {envelope.KindConfirmations},
		"confirmations.show":       {envelope.KindConfirmation},
		"confirmations.refuse":     {envelope.KindConfirmation},
		"confirmations.confirm":    {envelope.KindConfirmation}, // and every held tool's kinds (OutputKinds)
		"sessions.open":            {envelope.KindSession},
		"sessions.show":            {envelope.KindSession},
		"sessions.list":            {envelope.KindSessions},
		"escalate":                 {envelope.KindEscalation, envelope.KindApproval},
		"approvals.list":           {envelope.KindApprovals},
		"approvals.inbox":          {envelope.KindApprovalsInbox},
		"approvals.show":           {envelope.KindApproval},
		"approvals.approve":        {envelope.KindApproval},
		"approvals.refuse":         {envelope.KindApproval},
		"approvals.cancel":         {envelope.KindApproval},
		"approvals.wait":           {envelope.KindEscalation, envelope.KindApproval},
		"approvals.frames":         {envelope.KindFrames},
		"approvals.sweep":          {envelope.KindApprovalsSweep},
		"approvals.audit":          {envelope.KindApprovalsAudit},
		"hooks.add":                {envelope.KindHook},
		"hooks.list":               {envelope.KindHooks},
		"hooks.remove":             {envelope.KindHook},
		"hooks.test":               {envelope.KindHookTest},
		"hooks.deliveries":         {envelope.KindHookDeliveries},
		"hooks.deliver":            {envelope.KindHookDeliver},
		"whoami":                   {envelope.KindWhoAmI},
		"approvals.slack-link":     {envelope.KindSlackLinkCode},
	}
})

var entityKinds = []string{string(ledger.KindClaim), string(ledger.KindTerm)}

// DeclaresOutputKinds reports whether the tool has a row in the output
// table (a test checks every registered tool does).
func DeclaresOutputKinds(name string) bool { _, ok := outputKinds()[name]; return ok }

// Holdable reports whether a call of the tool may be held for a
// confirmation (gated, not interactive-only).
func (t *Tool) Holdable() bool {
	return t.Annotations.Gated() && !t.Annotations.InteractiveOnly
}

// RunKinds are the envelope kinds of a call that ran (HTTP 200), sorted:
// the tool's own, and for confirmations.confirm those of every tool it
// may run.
func (t *Tool) RunKinds() []string {
	kinds := slices.Clone(outputKinds()[t.Name])
	if t.Name == "confirmations.confirm" {
		for _, o := range All() {
			if o.Holdable() {
				kinds = append(kinds, outputKinds()[o.Name]...)
			}
		}
	}
	sort.Strings(kinds)
	return slices.Compact(kinds)
}

// OutputKinds are the envelope kinds of every success of the tool,
// sorted: RunKinds, and KindConfirmation when a call may be held (HTTP
// 202).
func (t *Tool) OutputKinds() []string {
	kinds := t.RunKinds()
	if t.Holdable() {
		kinds = append(kinds, envelope.KindConfirmation)
	}
	sort.Strings(kinds)
	return slices.Compact(kinds)
}

// Kinds are every kind with a data schema, sorted.
func Kinds() []string {
	out := make([]string, 0, len(dataTypes()))
	for k := range dataTypes() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	schemasOnce sync.Once
	schemas     map[string]map[string]any
	schemasErr  error
)

// DataSchema is the JSON Schema of one kind's data (a fresh copy, no
// $ref, keywords common to JSON Schema draft-07 and 2020-12 so that MCP
// clients and OpenAPI 3.1 read it alike); false for a kind without one.
func DataSchema(kind string) (map[string]any, bool) {
	schemasOnce.Do(buildSchemas)
	if schemasErr != nil {
		panic("tools: data schemas: " + schemasErr.Error())
	}
	s, ok := schemas[kind]
	if !ok {
		return nil, false
	}
	return deepCopy(s), true
}

// DataSchemaError reports a kind whose Go type has no JSON Schema (a test
// calls it so that the failure names the kind).
func DataSchemaError() error {
	schemasOnce.Do(buildSchemas)
	return schemasErr
}

func buildSchemas() {
	str := func(enum []string) *jsonschema.Schema {
		e := make([]any, len(enum))
		for i, v := range enum {
			e[i] = v
		}
		return &jsonschema.Schema{Type: "string", Enum: e}
	}
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[ledger.Status]():   str(statusNames()),
		reflect.TypeFor[approvals.Tier]():  str(tierNames(approvals.Tiers)),
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
		reflect.TypeFor[spawn.Kind]():      str([]string{string(spawn.Assume), string(spawn.Overlook), string(spawn.Guess)}),
		reflect.TypeFor[spawn.Mode]():      str([]string{string(spawn.ModeHarness), string(spawn.ModeDirect)}),
		reflect.TypeFor[spawn.State]():     str([]string{string(spawn.Pending), string(spawn.Resolved)}),
		reflect.TypeFor[approvals.State](): str([]string{string(approvals.Pending), string(approvals.Resolved)}),
		// A stored spawn request is the spawn_request data as issued.
		reflect.TypeFor[json.RawMessage](): {},
	}}
	schemas = map[string]map[string]any{}
	for kind, types := range dataTypes() {
		var alts []any
		for _, t := range types {
			s, err := jsonschema.ForType(t, opts)
			if err != nil {
				schemasErr = err
				return
			}
			b, err := json.Marshal(s)
			if err != nil {
				schemasErr = err
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				schemasErr = err
				return
			}
			alts = append(alts, m)
		}
		if len(alts) == 1 {
			schemas[kind] = alts[0].(map[string]any)
		} else {
			schemas[kind] = map[string]any{"anyOf": alts}
		}
	}
	if cb, ok := schemas[envelope.KindSpawnRequest]["properties"].(map[string]any)["callback"].(map[string]any); ok {
		if tok, ok := cb["properties"].(map[string]any)["token"].(map[string]any); ok {
			tok["description"] = "the spawn's callback token (dontcb_…): the subagent's bearer token, allowed only this spawn's callback actions on its entity; absent where the store keeps no tokens"
		}
	}
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// The envelope's own parts (internal/envelope), as JSON Schema. ref is how
// a part names another (OpenAPI passes a $ref to its components, MCP the
// part itself).
var (
	strSchema = map[string]any{"type": "string"}
)

// StepSchema is one remediation step.
func StepSchema() map[string]any {
	return map[string]any{"type": "object", "required": []any{"command", "description"}, "additionalProperties": false,
		"properties": map[string]any{"command": strSchema, "description": strSchema}}
}

// WarningSchema is one warning.
func WarningSchema() map[string]any {
	return map[string]any{"type": "object", "required": []any{"code", "message"}, "additionalProperties": false,
		"properties": map[string]any{"code": strSchema, "message": strSchema, "request_id": strSchema, "outcome": strSchema}}
}

// MetaSchema is the envelope's meta.
func MetaSchema() map[string]any {
	return map[string]any{"type": "object", "required": []any{"duration_ms", "request_id"}, "additionalProperties": false,
		"properties": map[string]any{"duration_ms": map[string]any{"type": "integer", "minimum": 0}, "request_id": strSchema, "mode": strSchema}}
}

// ErrorCodeSchema is data.code: one of the codes of internal/present's
// table, which holds every code the source declares.
func ErrorCodeSchema() map[string]any {
	codes := make([]any, 0, len(present.Codes()))
	for _, c := range present.Codes() {
		codes = append(codes, string(c))
	}
	return map[string]any{"type": "string", "enum": codes}
}

// ErrorDataSchema is a failure's data: its code is one of the table's and
// its remediation is never empty.
func ErrorDataSchema(step any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false,
		"required": []any{"code", "message", "unmet_clauses", "remediation"},
		"properties": map[string]any{
			"code": ErrorCodeSchema(), "message": strSchema, "entity_id": strSchema,
			"unmet_clauses": map[string]any{"type": "array", "items": strSchema},
			"remediation":   map[string]any{"type": "array", "minItems": 1, "items": step},
		}}
}

// EnvelopeSchema is an envelope whose ok, envelope_kind and data follow
// the given schemas.
func EnvelopeSchema(ok bool, kind, data, warning, meta any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false,
		"required": []any{"envelope_version", "cli_version", "ok", "envelope_kind", "data", "hints", "warnings", "meta"},
		"properties": map[string]any{
			"envelope_version": map[string]any{"const": envelope.Version},
			"cli_version":      strSchema,
			"ok":               map[string]any{"const": ok},
			"envelope_kind":    kind,
			"data":             data,
			"hints":            map[string]any{"type": "array", "items": strSchema},
			"warnings":         map[string]any{"type": "array", "items": warning},
			"meta":             meta,
		}}
}

// KindEnvelopeSchema is the success envelope of one kind, inline.
func KindEnvelopeSchema(kind string) map[string]any {
	data, ok := DataSchema(kind)
	if !ok {
		data = map[string]any{"type": "object"}
	}
	return EnvelopeSchema(true, map[string]any{"const": kind}, data, WarningSchema(), MetaSchema())
}

// ErrorEnvelopeSchema is the failure envelope, inline.
func ErrorEnvelopeSchema() map[string]any {
	return EnvelopeSchema(false, map[string]any{"const": envelope.KindError}, ErrorDataSchema(StepSchema()), WarningSchema(), MetaSchema())
}

// OutputSchema is the JSON Schema of every result of the tool, inline
// (MCP's outputSchema): one envelope per kind it returns, or the error
// envelope.
func (t *Tool) OutputSchema() map[string]any {
	var alts []any
	for _, k := range t.OutputKinds() {
		alts = append(alts, KindEnvelopeSchema(k))
	}
	alts = append(alts, ErrorEnvelopeSchema())
	return map[string]any{"type": "object", "oneOf": alts}
}
