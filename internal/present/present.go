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
	"strconv"
	"strings"
	"sync"

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
	// Remediation is the default. <id> is filled from the error's entity
	// and <key> from its Args["key"] (<q:key> quoted, as a shell word);
	// a placeholder the error has no value for stays as written, for the
	// caller to fill.
	Remediation []errs.Step
	// Unmet refines the default for an error whose first unmet clause is
	// the key, or begins with it when no key equals it (the longest such
	// key wins): the rule that refused says what to do next.
	Unmet map[string][]errs.Step
	// Kind refines the default, where Unmet does not, for an error about a
	// thing of the key's kind: Args["kind"] if set, else the kind of its
	// entity's id (ids.Kind: "claim", "apr", "ses", …).
	Kind map[string][]errs.Step
}

func steps2(c1, d1, c2, d2 string) []errs.Step {
	return []errs.Step{{Command: c1, Description: d1}, {Command: c2, Description: d2}}
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

var (
	openapi      = steps("curl $DONT_ENDPOINT/v1/openapi.json", "read the API description")
	escalateHelp = steps("dont escalate --help", "see the parameters")
)

// retry is the command that runs a direct-mode spawn of the kind again.
func retry(kind string) string {
	if kind == "guess" {
		return "dont guess <q:question> --n <n> --direct"
	}
	return "dont " + kind + " <id> --direct"
}

// direct refines a provider failure by the spawn's kind: run it again
// (described as first), then the steps between, then harness mode.
func direct(first string, between ...errs.Step) map[string][]errs.Step {
	out := map[string][]errs.Step{}
	for _, kind := range []string{"assume", "overlook", "guess"} {
		harness := "dont " + kind + " <id> --harness"
		if kind == "guess" {
			harness = "dont guess <q:question> --n <n> --harness"
		}
		s := append([]errs.Step{{Command: retry(kind), Description: first}}, between...)
		out[kind] = append(s, errs.Step{Command: harness, Description: "or let your harness's subagent do the reasoning"})
	}
	return out
}

// table is every code. Keep it grouped by the package that declares the code.
// It is built on first use: a command that succeeds never reads it.
var table = sync.OnceValue(func() map[errs.Code]Class {
	return map[errs.Code]Class{
		// internal/errs
		errs.Usage: {ExitUsage, statusBadRequest, steps("dont help", "show the commands and their flags"), nil, nil},
		errs.InvalidArgument: {ExitUsage, statusBadRequest, steps("dont help", "check the command's arguments"), map[string][]errs.Step{
			// internal/service (approvals.go)
			"tier is one of ":                     steps("dont sessions open --tier read-only", "tiers are read-only, workspace-write, danger-full-access"),
			"a session name is at most 200 bytes": steps("dont sessions open --tier <tier> --name <short name>", "shorten the name"),
			"call id must not be empty":           escalateHelp,
			"reason must not be empty":            escalateHelp,
			"preview <= 4096 bytes":               escalateHelp,
			"to is a tier name":                   escalateHelp,
			"a reason is at most 2048 bytes":      steps("dont approvals refuse <id> --reason \"…\"", "shorten the reason"),
			"after >= 0 and 0 <= wait <= ":        steps("dont approvals frames --session <session> --after 0 --wait 20s", "read from the start, long-polling 20 s"),
		}, nil},
		errs.InvalidID: {ExitUsage, statusBadRequest, steps("dont list", "list entity ids (they look like claim:01HX…)"), map[string][]errs.Step{
			// internal/service (approvals.go, confirmations.go, tokens.go)
			"session ids look like ses:<ULID>": steps("dont sessions open --tier read-only", "session ids look like ses:<ULID>"),
			"ids look like conf:<ULID>":        steps("dont confirmations list", "list confirmation ids (conf:…)"),
			"token ids look like tok:<ULID>":   steps("dont tokens list", "list token ids"),
		}, nil},
		errs.EmptyReason:     {ExitRefusal, statusUnprocessable, steps("dont trust <id> --reason \"<the specific flaw>\"", "give a specific, non-empty reason"), nil, nil},
		errs.HedgeReason:     {ExitRefusal, statusUnprocessable, steps("dont trust <id> --reason \"<the specific flaw>\"", "name the concrete problem instead of hedging"), nil, nil},
		errs.InvalidEvidence: {ExitRefusal, statusUnprocessable, steps("dont dismiss <id> --evidence https://…", "cite evidence as a URI (scheme:…) or CURIE (prefix:local)"), nil, nil},
		errs.InvalidTransition: {ExitRefusal, statusConflict, steps("dont show <id> --history", "see the entity's status and history"), map[string][]errs.Step{
			// the clauses of ledger.Next
			"status must be verified":                 steps("dont dismiss <id> --evidence <uri>", "verify it first, then lock"),
			"locked entities are final":               steps("dont conclude \"<corrected statement>\"", "record a new claim instead"),
			"ignored entities must be reopened first": steps("dont reopen <id> --reason \"<why>\"", "reopen it, then act"),
			// internal/service (spawns.go)
			"status must not be locked or ignored": steps("dont show <id> --history", "see why it is <status>"),
		}, nil},
		errs.NotFound: {ExitState, statusNotFound, steps("dont list", "list the entities that exist"), nil, map[string][]errs.Step{
			"tok": steps("dont tokens list", "list token ids"),
		}},
		errs.AlreadyExists: {ExitRefusal, statusConflict, steps("dont show <id>", "inspect the existing entity"), map[string][]errs.Step{
			// internal/service (service.go): a define that lost the race
			"a CURIE names at most one term": steps("dont list", "find the term that holds it"),
		}, map[string][]errs.Step{
			"term": steps("dont show <id>", "see the existing definition"),
		}},
		errs.DependencyNotFound: {ExitRefusal, statusUnprocessable, steps("dont list", "depend only on entities that exist"), nil, nil},
		errs.SpawnPending: {ExitRefusal, statusConflict, steps("dont spawns --pending", "wait for or resolve the pending spawn"), map[string][]errs.Step{
			// internal/service (transition.go): an agent's move of an entity under review
			"no move while its verification spawn is pending": steps2(
				"dont spawns manage --op show --request-id <request>", "wait for the verifier's verdict on <id> (or the spawn's timeout); its callback moves it",
				"dont spawns cancel <request>", "or, if you asked for it, cancel your spawn first (a person may also move <id>)"),
			"at most one pending verification spawn per entity": steps2(
				"dont spawns --pending", "see the pending spawn <request>",
				"dont dismiss <id> --evidence <uri> --request-id <request>", "or resolve it"),
		}, nil},
		errs.SpawnNotFound: {ExitState, statusNotFound, steps("dont spawns --all", "list known spawn request ids"), nil, nil},
		errs.SpawnExpired:  {ExitState, statusGone, steps("dont assume <id>", "request a new verification round"), nil, nil},
		errs.SpawnMismatch: {ExitRefusal, statusConflict, steps("dont spawns --all", "use the request id issued for this entity"), map[string][]errs.Step{
			// internal/service (spawns.go, transition.go)
			"a verification spawn resolves with dismiss or trust": steps("dont dismiss <entity> --evidence <uri> --request-id <request>", "resolve the verification"),
			"a guess spawn resolves with answer":                  steps("dont answer <request> --candidate \"<answer>\"", "answer the guess"),
			"request_id names a spawn of this entity":             steps("dont <action> <entity> … --request-id <request>", "call back on the spawn's own entity"),
		}, nil},
		errs.NotInitialised:     {ExitState, statusConflict, steps("dont init", "create .dont/ in the project folder (or set DONT_PROJECT_DIR)"), nil, nil},
		errs.AlreadyInitialised: {ExitRefusal, statusConflict, steps("dont list", "the project is ready; use it"), nil, nil},
		// A permanent condition of the project: 409, never 503, which clients
		// and gateways retry.
		errs.ConfigMissing: {ExitState, statusConflict, steps("dont help config", "set the missing settings in .dont/config.toml or the environment"), map[string][]errs.Step{
			// internal/service (spawns.go): direct mode without a provider
			"llm.provider": steps2(
				"export DONT_LLM_PROVIDER=openai DONT_LLM_MODEL=<model> DONT_LLM_API_KEY=<key>", "configure a provider ([llm] in .dont/config.toml works too)",
				"dont assume <id> --harness", "or emit a spawn_request and let your harness's subagent do the reasoning"),
		}, nil},
		errs.ConfigInvalid:  {ExitState, statusUnavailable, steps("dont help config", "fix .dont/config.toml or the environment variable"), nil, nil},
		"config-untrusted":  {ExitState, statusConflict, steps("dont config trust", "at your terminal: read what .dont/config.toml sets that only you decide, and trust it"), nil, nil},
		errs.DBLocked:       {ExitState, statusUnavailable, steps("dont list", "retry: another process holds the database"), nil, nil},
		errs.DiskNearlyFull: {ExitState, statusUnavailable, steps("df -h .dont", "free space on the store's disk; writes resume by themselves, reads and dont doctor work meanwhile"), nil, nil},
		errs.StoreError:     {ExitState, statusInternal, steps("dont doctor", "check the store; retry the command"), nil, nil},
		errs.Conflict:       {ExitState, statusConflict, steps("dont show <id>", "re-read the entity and retry"), nil, nil},
		errs.Interrupted: {ExitInterrupt, statusClientClosed, steps("dont show <id>", "nothing was written; re-run the command"), map[string][]errs.Step{
			// internal/service (approvals.go)
			"an interrupted wait does not use its grant": steps("dont escalate --session <session> --call <a new call id> …", "ask again for a new call"),
		}, map[string][]errs.Step{
			// internal/service (approvals.go, direct.go)
			"apr":      steps2("dont approvals wait <id>", "wait again", "dont approvals cancel <id>", "or withdraw it"),
			"ses":      steps("dont approvals frames --session <id> --after <after>", "read again from the same cursor"),
			"assume":   steps(retry("assume"), "run it again"),
			"overlook": steps(retry("overlook"), "run it again"),
			"guess":    steps(retry("guess"), "run it again"),
		}},
		errs.Internal: {ExitInternal, statusInternal, steps("dont doctor", "report the bug with the request id from meta"), nil, nil},

		// internal/confirm
		"confirmation-required":     {ExitUsage, statusBadRequest, steps("dont <command> … --yes", "confirm the action on the command line"), nil, nil},
		"person-required":           {ExitUsage, statusPreconditionRequired, steps("dont approvals watch --session <session>  # in a terminal of your own", "a person answers at a terminal; an agent (DONT_HARNESS, DONT_REQUEST_ID, dont mcp) never does"), nil, nil},
		"invalid-skip-confirmation": {ExitRefusal, statusBadRequest, steps("dont <command> … --yes", "drop skip_confirmation and pass --yes instead"), nil, nil},
		"schema-cache-stale":        {ExitRefusal, statusConflict, steps("dont --refresh tools", "re-fetch the tool schema, then run the command again"), nil, nil},
		"confirmation-not-found":    {ExitState, statusNotFound, steps("dont confirmations list --all", "list the pending confirmations (conf:…)"), nil, nil},
		"confirmation-closed":       {ExitRefusal, statusConflict, steps("dont confirmations show <id>", "see how it ended; send the call again if it is still wanted"), nil, nil},
		"confirmation-revoked":      {ExitRefusal, statusConflict, steps("dont confirmations show <id>", "the token that asked was revoked, so its held call was dropped; a live principal sends the call again if it is still wanted"), nil, nil},
		"interactive-only":          {ExitUsage, statusPreconditionRequired, steps("dont <command> … (at a terminal, answering its [y/N] prompt)", "an interactive-only action runs only when a person confirms it at a client; it is never held for later"), nil, nil},
		"confirmation-declined":     {ExitRefusal, statusConflict, steps("tools/call <tool> (again, if the person wants it)", "a person declined the confirmation; nothing ran and nothing is held"), nil, nil},
		"confirmations-unavailable": {ExitState, statusUnavailable, steps("dont serve", "use a store that keeps pending confirmations"), nil, nil},

		// internal/service (page.go)
		"cursor-invalid": {ExitUsage, statusBadRequest, steps("dont list --limit 100", "read the listing again from its first page, without --cursor: a cursor is good only for the listing that gave it"), nil, map[string][]errs.Step{
			"spawns":           steps("dont spawns --all --limit 100", "read the listing again from its first page, without --cursor: a cursor is good only for the listing that gave it"),
			"show":             steps("dont show <id> --history --limit 100", "read the history again from its first page, without --cursor: a cursor is good only for the listing that gave it"),
			"hooks.deliveries": steps("dont hooks deliveries <hook> --limit 100", "read the deliveries again from their first page, without --cursor: a cursor is good only for the listing that gave it"),
		}},

		// internal/service (approvals.go; the hop rules' codes are approvals' causes)
		"session-not-found":       {ExitState, statusNotFound, steps("dont sessions open --tier read-only", "open a session; escalations name it with --session ses:…"), nil, nil},
		"approval-not-found":      {ExitState, statusNotFound, steps("dont approvals list", "list the approval requests (apr:…)"), nil, nil},
		"unknown-tier":            {ExitRefusal, statusUnprocessable, steps("dont escalate --session <session> --call <call> --to danger-full-access --reason \"…\"", "name a tier: read-only, workspace-write or danger-full-access"), nil, nil},
		"hop-not-allowed":         {ExitRefusal, statusForbidden, steps("dont sessions show <session>", "a call may reach only its current tier's row: read-only → workspace-write, danger-full-access; workspace-write → danger-full-access"), nil, nil},
		"hop-ratchet":             {ExitRefusal, statusForbidden, steps("dont sessions open --tier <the tier the task needs>", "a call is widened at most once; run the task in a session opened at the tier it needs"), nil, nil},
		"call-of-another-session": {ExitRefusal, statusForbidden, steps("dont escalate --session <your session> --call <a call id of that session> …", "a grant never crosses sessions; ask for your own session's call"), nil, nil},
		"escalation-pending":      {ExitRefusal, statusConflict, steps("dont approvals wait <id>", "wait for the call's open question instead of asking again"), nil, nil},
		"no-subscriber":           {ExitRefusal, statusConflict, steps("dont approvals watch --session <session>", "nobody could have answered: start a client for the session (in another terminal), then ask again"), nil, nil},
		"approval-refused":        {ExitRefusal, statusForbidden, steps("dont approvals show <id>", "the escalation was refused: do not run the command, at this tier or any other"), nil, nil},
		"approval-timed-out":      {ExitRefusal, statusGone, steps("dont approvals watch --session <session>", "nobody answered before the deadline; make sure someone is watching, then ask again"), nil, nil},
		"approval-cancelled":      {ExitRefusal, statusConflict, steps("dont approvals show <id>", "the request was withdrawn; ask again if the command is still needed"), nil, nil},
		"approval-still-open":     {ExitRefusal, statusConflict, steps("dont approvals wait <id> --max-wait 30s", "no verdict yet: wait again; the command must not run until it is approved"), nil, nil},
		"approval-channel-error": {ExitRefusal, statusUnavailable, steps("dont approvals audit", "the store failed while asking, which is a refusal; check the store and ask again"), map[string][]errs.Step{
			"an answer counts once it is recorded": steps("dont approvals show <id>", "check the request, then answer again"),
		}, nil},
		"session-above-ceiling": {ExitRefusal, statusForbidden, steps2(
			"dont sessions open --tier <ceiling>", "open the session at the ceiling, then ask for one wider tier per call: dont escalate --session <session> --call <call> --to <tier> --reason \"…\"",
			"dont sessions open --tier <tier>  # run by a person", "or ask a person to open it (an admin token, or the project's owner at its terminal)"), nil, nil},
		// internal/service (approvaldeadline.go)
		"deadline-out-of-range": {ExitUsage, statusBadRequest, steps2(
			"dont escalate --session <session> --call <call> --to <tier> --reason \"…\" --deadline <max>", "ask for a deadline from <min> to <max> (the person's range), or for none to get the default <default>",
			"approval_timeout_max = \"15m\"  # in your own ~/.config/dont/config.toml, by a person", "only a person widens the range (docs/approvals.md, \"Deadlines that fit the channel\")"), nil, nil},
		"approvals-unavailable":  {ExitState, statusUnavailable, steps("dont init", "use a store that keeps sessions and approvals"), nil, nil},
		"frame-log-inconsistent": {ExitState, statusInternal, steps("dont approvals sweep", "announce endings a failed announce left out, then audit again; anything left is a bug"), nil, nil},
		"question-changed": {ExitRefusal, statusConflict, steps("dont approvals show <id>", "what was answered is not what the question shows now (another question, or another version of it); nothing was answered: show it again and answer what you see"), nil, map[string][]errs.Step{
			"conf": steps("dont confirmations show <id>", "what was confirmed is not the held call as it is now; nothing ran: show it again and answer what you see"),
		}},
		// internal/service (passkeys.go)
		"passkey-required": {ExitRefusal, statusForbidden, steps("dont serve  # then open the approvals page", "this question's tier is approved only with a passkey: approve it on the approvals page with your passkey (refusing needs none)"), map[string][]errs.Step{
			"a second passkey is added by a caller signed in with the first": steps("open the approvals page and choose \"Sign in with a passkey\"", "then register the new passkey; the token alone registers only the first"),
		}, nil},
		"passkey-invalid":      {ExitRefusal, statusForbidden, steps("dont approvals show <id>", "the passkey answer was for another question, version or approver, was used before, expired, or was not user-verified; nothing was answered: approve again from the page"), nil, nil},
		"passkeys-unavailable": {ExitState, statusUnavailable, steps("dont serve", "passkeys work on the approvals page of dont serve or the API function, signed in with an approver token"), nil, nil},
		// internal/service (direct.go)
		"provider-error": {ExitState, statusBadGateway, steps("dont assume <id> --direct", "retry; check DONT_LLM_* or [llm] in .dont/config.toml if it keeps failing"), nil,
			direct("retry", errs.Step{Command: "env | grep DONT_LLM_; cat .dont/config.toml", Description: "check the provider settings (provider, model, base_url, API key)"})},
		"provider-timeout": {ExitState, statusGatewayTimeout, steps("dont assume <id> --direct", "retry, or raise timeout in [llm] of .dont/config.toml"), nil,
			direct("retry", errs.Step{Command: "timeout = \"120s\"  # in [llm] of .dont/config.toml", Description: "give each provider request longer"})},
		"provider-unusable": {ExitState, statusBadGateway, steps("dont assume <id> --harness", "or let your harness's subagent do the reasoning (harness mode)"), nil,
			direct("retry: a fresh answer may be usable")},
		// internal/service (slack.go)
		"slack-unavailable":              {ExitState, statusUnavailable, steps("dont init", "use a store that keeps Slack links (both of dont's stores do)"), nil, nil},
		"slack-link-code-invalid":        {ExitRefusal, statusForbidden, steps("dont approvals slack-link", "make a new link code with your approver token and send it within 10 minutes"), nil, nil},
		"slack-user-unlinked":            {ExitRefusal, statusForbidden, steps("dont approvals slack-link", "link your Slack user first: make a link code with your approver token, then send /dont link <code> in Slack"), nil, nil},
		"slack-link-not-approver":        {ExitRefusal, statusForbidden, steps("dont approvals slack-link", "the token this Slack user was linked with is revoked or no approver's: link again with a current approver token"), nil, nil},
		"slack-question-not-shown-whole": {ExitRefusal, statusForbidden, steps("dont approvals show <id>", "the question is too long for Slack: answer it where it is shown whole (the approvals page, a terminal)"), nil, nil},
		// internal/slackapp (handler.go): requests that are not Slack's, or not now
		"slack-signature-invalid": {ExitState, statusUnauthorized, steps("dont help approvals", "only Slack, signing with the app's signing secret, calls this endpoint; check DONT_SLACK_SIGNING_SECRET against the app's Basic Information page"), nil, nil},
		"slack-request-stale":     {ExitState, statusUnauthorized, steps("date -u", "a Slack request is acted on within 5 minutes of its timestamp; check this server's clock"), nil, nil},
		"slack-request-replayed":  {ExitRefusal, statusConflict, steps("dont approvals show <id>", "this request was acted on already; a replay changes nothing"), nil, nil},
		"slack-request-invalid":   {ExitUsage, statusBadRequest, steps("dont help approvals", "point the Slack app's interactivity URL at /v1/slack/interactions and its /dont command at /v1/slack/commands"), nil, nil},
		// internal/service (tokens.go)
		"unauthenticated": {ExitState, statusUnauthorized, steps("export DONT_TOKEN=<token from dont tokens create>", "send a valid bearer token"), nil, nil},
		"forbidden": {ExitState, statusForbidden, steps("dont tokens create --role <role>", "use a token whose role (or spawn) allows this call"), map[string][]errs.Step{
			// a callback token's rules (tokens.go)
			"request_id = ": steps("dont <tool> … --request-id <request>", "name the spawn this verdict resolves"),
			"spawn pending": steps("dont show <entity>", "read the outcome with a harness token"),
		}, nil},
		// internal/service (requester.go)
		"not-requester": {ExitState, statusForbidden, steps2(
			"dont spawns manage --op show --request-id <request>", "<request> was asked for by <requester>: leave it to that agent (its callback token resolves it)",
			"dont spawns cancel <request>  # run by a person", "or ask a person to act on it (an approver or admin token, or the project's owner)"), nil, map[string][]errs.Step{
			"apr": steps2("dont approvals show <id>", "<id> was asked by <requester>: only that agent withdraws it",
				"dont approvals refuse <id> --reason \"…\"  # run by an approver", "or a person ends it"),
		}},
		"rate-limited":       {ExitState, statusTooManyRequests, steps("sleep <Retry-After seconds>", "retry after the interval the server gave"), nil, nil},
		"tokens-unavailable": {ExitState, statusUnavailable, steps("dont serve", "tokens need a store that keeps them"), nil, nil},
		// internal/service (operator.go)
		"settings-unavailable": {ExitState, statusUnavailable, steps(`spawn_timeout = "24h"  # in .dont/config.toml`, "an embedded project keeps its settings in its config file"), nil, nil},
		// internal/hooks, internal/service (hooks.go)
		"hook-url-refused":  {ExitUsage, statusUnprocessable, steps("dont hooks add --url https://<public host>/<path> --events approval.asked", "use an https URL to a public address (http only to loopback; private ranges need [hooks] allow_private, docs/hooks.md)"), nil, nil},
		"hook-not-found":    {ExitState, statusNotFound, steps("dont hooks list", "list the hooks that exist"), nil, nil},
		"hooks-unavailable": {ExitState, statusUnavailable, steps("dont serve", "webhooks need a store that keeps them (docs/hooks.md)"), nil, nil},
		// internal/service (horizon.go)
		"schedule-failed": {ExitState, statusUnavailable, steps("dont sweep", "the due sweep times the request out when it is due; check the timeout queue"), nil, nil},

		// internal/store/dynamo (limits.go)
		"too-large-to-store": {ExitUsage, statusEntityTooLarge, steps("dont show <id>", "nothing was written: one stored item holds at most 400 KB and one commit at most 100 items and 4 MB; send a shorter statement, fewer refs, atoms, evidence or dependencies"), nil, nil},

		// internal/client
		// cli/dont (passphrase.go): what only a person may do at the embedded CLI
		"passphrase-not-set":       {ExitUsage, statusPreconditionRequired, steps("dont passphrase set", "set the project's approver passphrase at your own terminal (kept outside the workspace)"), nil, nil},
		"person-not-proven":        {ExitRefusal, statusForbidden, steps("dont approvals watch --session <session>  # in a terminal of your own", "a person answers with the project's approver passphrase; nothing was sent"), nil, nil},
		"passphrase-record-unsafe": {ExitState, statusForbidden, steps("dont passphrase set", "the record must be a file of yours, not a link, writable by nobody else; remove it and set it again"), nil, nil},
		// cli/dont (login.go): stored logins
		"login-token-too-powerful": {ExitRefusal, statusForbidden, steps("dont tokens create --role harness --name <agent>", "store a harness token instead; keep approver and admin tokens in your own shell (docs/security.md, \"Stored logins\")"), nil, nil},
		"login-not-verified":       {ExitState, statusBadGateway, steps("curl $DONT_ENDPOINT/v1/health", "check the endpoint and the token; nothing was stored"), nil, nil},
		"login-insecure-endpoint":  {ExitUsage, statusUnprocessable, steps("dont login https://<host>", "use https; http only to a loopback address"), nil, nil},
		"profile-unknown":          {ExitUsage, statusNotFound, steps("dont login --profile <name> <endpoint>", "store a login under that name, or unset DONT_PROFILE"), nil, nil},
		"logins-not-private":       {ExitState, statusForbidden, steps("chmod 700 ~/.config/dont && chmod 600 ~/.config/dont/logins.json", "your logins file must be yours, not a link, writable by nobody else; or dont login again"), nil, nil},
		"endpoint-unreachable":     {ExitState, statusBadGateway, steps("curl $DONT_ENDPOINT/v1/health", "check DONT_ENDPOINT and that dont serve is running"), nil, nil},

		// internal/httpapi
		"route-not-found":             {ExitUsage, statusNotFound, openapi, nil, nil},
		"method-not-allowed":          {ExitUsage, statusMethodNotAllowed, openapi, nil, nil},
		"body-too-large":              {ExitUsage, statusEntityTooLarge, steps("dont <tool> --args-file <smaller file>", "send a body under 64 KiB"), nil, nil},
		"bad-json":                    {ExitUsage, statusBadRequest, steps(`curl -d '{"args":{…}}' $DONT_ENDPOINT/v1/tools/<name>`, `send one JSON object {"args": {…}}`), nil, nil},
		"unsupported-media-type":      {ExitUsage, statusUnsupportedMedia, steps("curl -H 'Content-Type: application/json' …", "send application/json"), nil, nil},
		"idempotency-in-progress":     {ExitState, statusConflict, steps("retry with the same Idempotency-Key after a second", "the first request with this key is still running"), nil, nil},
		"idempotency-key-reused":      {ExitUsage, statusUnprocessable, steps("use a fresh Idempotency-Key", "a key may only be reused for the identical request"), nil, nil},
		"idempotency-outcome-unknown": {ExitState, statusConflict, steps("dont <the tool's list or show>", "see whether the first request was applied (a question it asked, a guess it started, a test message it sent); if not, send it again with a fresh Idempotency-Key"), nil, nil},

		// internal/project
		"project-not-own": {ExitState, statusConflict, steps("chmod 700 .dont", "in the project folder, if .dont/ is yours; else point DONT_PROJECT_DIR at your project"), nil, nil},

		// cli/dont (app.go): a warning only
		"project-nested": {ExitState, statusConflict, steps("export DONT_PROJECT_DIR=<project folder>", "name the project you mean; a .dont/ in a subfolder takes over every command run below it"), nil, nil},

		// cli/dont (doctor.go)
		"invariant-violation": {ExitState, statusInternal, steps("dont doctor", "list the violations with the entity or request each concerns"), nil, nil},
		"store-not-private":   {ExitState, statusInternal, steps("chmod 700 .dont && chmod 600 .dont/dont.db*", "in the project folder: only the owner may read the store"), nil, nil},
		"store-damaged":       {ExitState, statusInternal, steps("dont restore <backup file>", "bring back the last sound backup (docs/design.md, \"Storage health\")"), nil, nil},

		// cli/dont (backup.go)
		"backup-exists":  {ExitUsage, statusConflict, steps("dont backup <a new file>", "a backup never writes over a file"), nil, nil},
		"backup-invalid": {ExitState, statusUnprocessable, steps("dont doctor", "check the store; restore only from a file `dont backup` wrote"), nil, nil},
	}
})

// Of is the class of a code; ok is false for a code the table lacks.
func Of(code errs.Code) (c Class, ok bool) {
	c, ok = table()[code]
	return c, ok
}

// Codes lists every code in the table, sorted.
func Codes() []errs.Code {
	out := make([]errs.Code, 0, len(table()))
	for c := range table() {
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
	c, ok := table()[errs.As(err).Code]
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
	c, ok := table()[errs.As(err).Code]
	if !ok {
		return statusInternal
	}
	return c.Status
}

// Remediation is what the caller of e can run next: e's own override if it
// carries one (only a transport gives one), else its code's default
// refined by its first unmet clause or its kind, with <id> filled from e's
// entity and <key> from its Args. It is never empty.
func Remediation(e *errs.Error) []errs.Step {
	src := e.Remediation
	if len(src) == 0 {
		c, ok := table()[e.Code]
		if !ok {
			c = table()[errs.Internal]
		}
		src = c.refine(e)
	}
	out := make([]errs.Step, len(src))
	for i, s := range src {
		s.Command, s.Description = fill(e, s.Command), fill(e, s.Description)
		out[i] = s
	}
	return out
}

// refine is c's remediation for e: by its first unmet clause (exactly,
// else the longest key it begins with), else by the kind of what it
// concerns, else the default.
func (c Class) refine(e *errs.Error) []errs.Step {
	if len(e.UnmetClauses) > 0 {
		clause := e.UnmetClauses[0]
		if s, ok := c.Unmet[clause]; ok {
			return s
		}
		best := ""
		for k := range c.Unmet {
			if len(k) > len(best) && strings.HasPrefix(clause, k) {
				best = k
			}
		}
		if best != "" {
			return c.Unmet[best]
		}
	}
	if s, ok := c.Kind[kindOf(e)]; ok {
		return s
	}
	return c.Remediation
}

// kindOf is what e concerns: Args["kind"], else its entity id's prefix.
func kindOf(e *errs.Error) string {
	if k := e.Args["kind"]; k != "" {
		return k
	}
	k, _, ok := strings.Cut(e.EntityID, ":")
	if !ok {
		return ""
	}
	return k
}

// fill replaces <id> with e's entity and <key> (or <q:key>, quoted) with
// e.Args["key"]; other placeholders stay for the caller.
func fill(e *errs.Error, s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	if e.EntityID != "" {
		s = strings.ReplaceAll(s, "<id>", e.EntityID)
	}
	for k, v := range e.Args {
		s = strings.ReplaceAll(s, "<q:"+k+">", strconv.Quote(v))
		s = strings.ReplaceAll(s, "<"+k+">", v)
	}
	return s
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
