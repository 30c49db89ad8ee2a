// Package present is how an error is shown: one table maps every code any
// layer returns (internal/errs) to its process exit code, its HTTP status
// and the remediation the caller can run next. Every transport — the CLI,
// the HTTP API, MCP, the Lambda handlers — reads it through Exit, Status
// and Explain; TestEveryCodeIsInTheTable proves the table holds every code
// the source declares, once.
//
// The table names codes by value rather than by their packages' constants,
// so that it imports only errs and every package can reach it (the service
// and the transports declare codes of their own and import envelope, which
// presents through this package).
package present

import (
	"sort"
	"strings"

	"github.com/dont-cli/dont/internal/errs"
)

// Exit codes, documented in the README.
const (
	ExitOK        = 0
	ExitRefusal   = 1
	ExitUsage     = 2
	ExitState     = 3
	ExitInternal  = 4
	ExitInterrupt = 130
	ExitTerminate = 143
)

// Class is how one code is shown.
type Class struct {
	Exit   int // process exit code
	Status int // HTTP status
	// Remediation is the default; <id> is filled from the error's entity.
	Remediation []errs.Step
	// Unmet refines the default for an error whose first unmet clause is
	// the key (the ledger's invalid transitions say which rule refused).
	Unmet map[string][]errs.Step
}

func steps(command, description string) []errs.Step {
	return []errs.Step{{Command: command, Description: description}}
}

// HTTP statuses, spelled as numbers so that no package that presents an
// error depends on net/http.
const (
	statusBadRequest           = 400
	statusUnauthorized         = 401
	statusForbidden            = 403
	statusNotFound             = 404
	statusMethodNotAllowed     = 405
	statusConflict             = 409
	statusGone                 = 410
	statusEntityTooLarge       = 413
	statusUnsupportedMedia     = 415
	statusUnprocessable        = 422
	statusPreconditionRequired = 428
	statusTooManyRequests      = 429
	statusClientClosed         = 499
	statusInternal             = 500
	statusBadGateway           = 502
	statusUnavailable          = 503
	statusGatewayTimeout       = 504
)

var openapi = steps("curl $DONT_ENDPOINT/v1/openapi.json", "read the API description")

// table is every code. Keep it grouped by the package that declares the code.
var table = map[errs.Code]Class{
	// internal/errs
	errs.Usage:           {ExitUsage, statusBadRequest, steps("dont help", "show the commands and their flags"), nil},
	errs.InvalidArgument: {ExitUsage, statusBadRequest, steps("dont help", "check the command's arguments"), nil},
	errs.InvalidID:       {ExitUsage, statusBadRequest, steps("dont list --json", "list entity ids (they look like claim:01HX…)"), nil},
	errs.EmptyReason:     {ExitRefusal, statusUnprocessable, steps("dont trust <id> --reason \"<the specific flaw>\"", "give a specific, non-empty reason"), nil},
	errs.HedgeReason:     {ExitRefusal, statusUnprocessable, steps("dont trust <id> --reason \"<the specific flaw>\"", "name the concrete problem instead of hedging"), nil},
	errs.InvalidEvidence: {ExitRefusal, statusUnprocessable, steps("dont dismiss <id> --evidence https://…", "cite evidence as a URI (scheme:…) or CURIE (prefix:local)"), nil},
	errs.InvalidTransition: {ExitRefusal, statusConflict, steps("dont show <id> --history", "see the entity's status and history"), map[string][]errs.Step{
		// the clauses of ledger.Next
		"status must be verified":                 steps("dont dismiss <id> --evidence <uri>", "verify it first, then lock"),
		"locked entities are final":               steps("dont conclude \"<corrected statement>\"", "record a new claim instead"),
		"ignored entities must be reopened first": steps("dont reopen <id> --reason \"<why>\"", "reopen it, then act"),
	}},
	errs.NotFound:           {ExitState, statusNotFound, steps("dont list --json", "list the entities that exist"), nil},
	errs.AlreadyExists:      {ExitRefusal, statusConflict, steps("dont show <id>", "inspect the existing entity"), nil},
	errs.DependencyNotFound: {ExitRefusal, statusUnprocessable, steps("dont list --json", "depend only on entities that exist"), nil},
	errs.SpawnPending:       {ExitRefusal, statusConflict, steps("dont spawns --pending --json", "wait for or resolve the pending spawn"), nil},
	errs.SpawnNotFound:      {ExitState, statusNotFound, steps("dont spawns --all --json", "list known spawn request ids"), nil},
	errs.SpawnExpired:       {ExitState, statusGone, steps("dont assume <id>", "request a new verification round"), nil},
	errs.SpawnMismatch:      {ExitRefusal, statusConflict, steps("dont spawns --all --json", "use the request id issued for this entity"), nil},
	errs.NotInitialised:     {ExitState, statusUnavailable, steps("dont init", "create .dont/ in the project folder (or set DONT_PROJECT_DIR)"), nil},
	errs.AlreadyInitialised: {ExitRefusal, statusConflict, steps("dont list", "the project is ready; use it"), nil},
	errs.ConfigMissing:      {ExitState, statusUnavailable, steps("dont help config", "set the missing settings in .dont/config.toml or the environment"), nil},
	errs.ConfigInvalid:      {ExitState, statusUnavailable, steps("dont help config", "fix .dont/config.toml or the environment variable"), nil},
	errs.DBLocked:           {ExitState, statusUnavailable, steps("dont list", "retry: another process holds the database"), nil},
	errs.StoreError:         {ExitState, statusInternal, steps("dont doctor", "check the store; retry the command"), nil},
	errs.Conflict:           {ExitState, statusConflict, steps("dont show <id>", "re-read the entity and retry"), nil},
	errs.Interrupted:        {ExitInterrupt, statusClientClosed, steps("dont show <id>", "nothing was written; re-run the command"), nil},
	errs.Internal:           {ExitInternal, statusInternal, steps("dont doctor", "report the bug with the request id from meta"), nil},

	// internal/confirm
	"confirmation-required":     {ExitUsage, statusBadRequest, steps("dont <command> … --yes", "confirm the action on the command line"), nil},
	"person-required":           {ExitUsage, statusPreconditionRequired, steps("dont approvals watch --session <session>  # in a terminal of your own", "a person answers at a terminal; an agent (DONT_HARNESS, DONT_REQUEST_ID, dont mcp) never does"), nil},
	"invalid-skip-confirmation": {ExitRefusal, statusBadRequest, steps("dont <command> … --yes", "drop skip_confirmation and pass --yes instead"), nil},
	"schema-cache-stale":        {ExitRefusal, statusConflict, steps("dont --refresh tools", "re-fetch the tool schema, then run the command again"), nil},
	"confirmation-not-found":    {ExitState, statusNotFound, steps("dont confirmations list --all", "list the pending confirmations (conf:…)"), nil},
	"confirmation-closed":       {ExitRefusal, statusConflict, steps("dont confirmations show <id>", "see how it ended; send the call again if it is still wanted"), nil},
	"confirmation-revoked":      {ExitRefusal, statusConflict, steps("dont confirmations show <id>", "the token that asked was revoked, so its held call was dropped; a live principal sends the call again if it is still wanted"), nil},
	"interactive-only":          {ExitUsage, statusPreconditionRequired, steps("dont <command> … (at a terminal, answering its [y/N] prompt)", "an interactive-only action runs only when a person confirms it at a client; it is never held for later"), nil},
	"confirmations-unavailable": {ExitState, statusUnavailable, steps("dont serve", "use a store that keeps pending confirmations"), nil},

	// internal/service (approvals.go; the hop rules' codes are approvals' causes)
	"session-not-found":       {ExitState, statusNotFound, steps("dont sessions open --tier read-only", "open a session; escalations name it with --session ses:…"), nil},
	"approval-not-found":      {ExitState, statusNotFound, steps("dont approvals list --json", "list the approval requests (apr:…)"), nil},
	"unknown-tier":            {ExitRefusal, statusUnprocessable, steps("dont escalate --session <session> --call <call> --to danger-full-access --reason \"…\"", "name a tier: read-only, workspace-write or danger-full-access"), nil},
	"hop-not-allowed":         {ExitRefusal, statusForbidden, steps("dont sessions show <session>", "a call may reach only its current tier's row: read-only → workspace-write, danger-full-access; workspace-write → danger-full-access"), nil},
	"hop-ratchet":             {ExitRefusal, statusForbidden, steps("dont sessions open --tier <the tier the task needs>", "a call is widened at most once; run the task in a session opened at the tier it needs"), nil},
	"call-of-another-session": {ExitRefusal, statusForbidden, steps("dont escalate --session <your session> --call <a call id of that session> …", "a grant never crosses sessions; ask for your own session's call"), nil},
	"escalation-pending":      {ExitRefusal, statusConflict, steps("dont approvals wait <id>", "wait for the call's open question instead of asking again"), nil},
	"no-subscriber":           {ExitRefusal, statusConflict, steps("dont approvals watch --session <session>", "nobody could have answered: start a client for the session (in another terminal), then ask again"), nil},
	"approval-refused":        {ExitRefusal, statusForbidden, steps("dont approvals show <id>", "the escalation was refused: do not run the command, at this tier or any other"), nil},
	"approval-timed-out":      {ExitRefusal, statusGone, steps("dont approvals watch --session <session>", "nobody answered before the deadline; make sure someone is watching, then ask again"), nil},
	"approval-cancelled":      {ExitRefusal, statusConflict, steps("dont approvals show <id>", "the request was withdrawn; ask again if the command is still needed"), nil},
	"approval-channel-error":  {ExitRefusal, statusUnavailable, steps("dont approvals audit", "the store failed while asking, which is a refusal; check the store and ask again"), nil},
	"approvals-unavailable":   {ExitState, statusUnavailable, steps("dont init", "use a store that keeps sessions and approvals"), nil},
	"frame-log-inconsistent":  {ExitState, statusInternal, steps("dont approvals sweep", "announce endings a failed announce left out, then audit again; anything left is a bug"), nil},
	// internal/service (direct.go)
	"provider-error":    {ExitState, statusBadGateway, steps("dont assume <id> --direct", "retry; check DONT_LLM_* or [llm] in .dont/config.toml if it keeps failing"), nil},
	"provider-timeout":  {ExitState, statusGatewayTimeout, steps("dont assume <id> --direct", "retry, or raise timeout in [llm] of .dont/config.toml"), nil},
	"provider-unusable": {ExitState, statusBadGateway, steps("DONT_HARNESS=1 dont assume <id> --json", "or let your harness's subagent do the reasoning (harness mode)"), nil},
	// internal/service (tokens.go)
	"unauthenticated":    {ExitState, statusUnauthorized, steps("export DONT_TOKEN=<token from dont tokens create>", "send a valid bearer token"), nil},
	"forbidden":          {ExitState, statusForbidden, steps("dont tokens create --role <role>", "use a token whose role (or spawn) allows this call"), nil},
	"rate-limited":       {ExitState, statusTooManyRequests, steps("sleep <Retry-After seconds>", "retry after the interval the server gave"), nil},
	"tokens-unavailable": {ExitState, statusUnavailable, steps("dont serve", "tokens need a store that keeps them"), nil},
	// internal/service (operator.go)
	"settings-unavailable": {ExitState, statusUnavailable, steps(`spawn_timeout = "24h"  # in .dont/config.toml`, "an embedded project keeps its settings in its config file"), nil},
	// internal/service (horizon.go)
	"schedule-failed": {ExitState, statusUnavailable, steps("dont sweep", "the due sweep times the request out when it is due; check the timeout queue"), nil},

	// internal/client
	"endpoint-unreachable": {ExitState, statusBadGateway, steps("curl $DONT_ENDPOINT/v1/health", "check DONT_ENDPOINT and that dont serve is running"), nil},

	// internal/httpapi
	"route-not-found":         {ExitUsage, statusNotFound, openapi, nil},
	"method-not-allowed":      {ExitUsage, statusMethodNotAllowed, openapi, nil},
	"body-too-large":          {ExitUsage, statusEntityTooLarge, steps("dont <tool> --args-file <smaller file>", "send a body under 64 KiB"), nil},
	"bad-json":                {ExitUsage, statusBadRequest, steps(`curl -d '{"args":{…}}' $DONT_ENDPOINT/v1/tools/<name>`, `send one JSON object {"args": {…}}`), nil},
	"unsupported-media-type":  {ExitUsage, statusUnsupportedMedia, steps("curl -H 'Content-Type: application/json' …", "send application/json"), nil},
	"idempotency-in-progress": {ExitState, statusConflict, steps("retry with the same Idempotency-Key after a second", "the first request with this key is still running"), nil},
	"idempotency-key-reused":  {ExitUsage, statusUnprocessable, steps("use a fresh Idempotency-Key", "a key may only be reused for the identical request"), nil},

	// cli/dont (doctor.go)
	"invariant-violation": {ExitState, statusInternal, steps("dont doctor --json", "list the violations with the entity or request each concerns"), nil},
	"store-not-private":   {ExitState, statusInternal, steps("chmod 700 .dont && chmod 600 .dont/dont.db*", "in the project folder: only the owner may read the store"), nil},
}

// Of is the class of a code; ok is false for a code the table lacks.
func Of(code errs.Code) (c Class, ok bool) {
	c, ok = table[code]
	return c, ok
}

// Codes lists every code in the table, sorted.
func Codes() []errs.Code {
	out := make([]errs.Code, 0, len(table))
	for c := range table {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Exit is the process exit code for err: 0 for nil, 4 for a code the
// table lacks.
func Exit(err error) int {
	if err == nil {
		return ExitOK
	}
	c, ok := table[errs.As(err).Code]
	if !ok {
		return ExitInternal
	}
	return c.Exit
}

// Status is the HTTP status of the response that carries err: 200 for nil,
// 500 for a code the table lacks.
func Status(err error) int {
	if err == nil {
		return 200
	}
	c, ok := table[errs.As(err).Code]
	if !ok {
		return statusInternal
	}
	return c.Status
}

// Remediation is what the caller of e can run next: e's own override if it
// carries one, else its code's default (refined by its first unmet
// clause), with <id> filled from e's entity. It is never empty.
func Remediation(e *errs.Error) []errs.Step {
	src := e.Remediation
	if len(src) == 0 {
		c, ok := table[e.Code]
		if !ok {
			c = table[errs.Internal]
		}
		src = c.Remediation
		if len(e.UnmetClauses) > 0 {
			if s, ok := c.Unmet[e.UnmetClauses[0]]; ok {
				src = s
			}
		}
	}
	out := make([]errs.Step, len(src))
	for i, s := range src {
		if e.EntityID != "" {
			s.Command = strings.ReplaceAll(s.Command, "<id>", e.EntityID)
		}
		out[i] = s
	}
	return out
}

// Explain is err as callers see it: a copy of its *errs.Error (an unknown
// error becomes an internal one) with the remediation filled in.
func Explain(err error) *errs.Error {
	if err == nil {
		return nil
	}
	e := *errs.As(err)
	e.Remediation = Remediation(&e)
	if e.UnmetClauses == nil {
		e.UnmetClauses = []string{}
	}
	return &e
}
