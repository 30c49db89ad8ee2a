package settings

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/dont-cli/dont/internal/errs"
)

// Trust-relevant settings decide what runs, where a secret goes, or how
// long a question lives. An agent that writes its workspace (and sets its
// own environment) must not set them, so they come only from sources the
// person controls (docs/security.md, "Settings only a person decides"):
//
//	the environment of a process with no harness signal (and `dont serve`'s)
//	> the person's own config (~/.config/dont/config.toml, private to them)
//	> the workspace's .dont/config.toml, if the person trusted its bytes
//	> the default.
//
// Every other setting (harmless: spawn_timeout, [llm] model, timeout,
// max_retries, region) follows the same order with every source counting.

// The environment variables of trust-relevant settings, beside
// EnvSpawnMaxLease, EnvApprovalTimeout(Min|Max) and EnvSubscriberLease above.
const (
	EnvPublicURL = "DONT_PUBLIC_URL"
	// The Slack app's signing secret and (on AWS) the project it answers
	// for: docs/approvals.md, "Slack".
	EnvSlackSigningSecret = "DONT_SLACK_SIGNING_SECRET"
	EnvSlackProject       = "DONT_SLACK_PROJECT"
	// EnvSlackBotToken is the Slack app's bot token (chat:write), with
	// which slack-app:<channel> hooks are delivered.
	EnvSlackBotToken     = "DONT_SLACK_BOT_TOKEN"
	EnvHooksAllowPrivate = "DONT_HOOKS_ALLOW_PRIVATE"
	EnvLLMProvider       = "DONT_LLM_PROVIDER"
	EnvLLMBaseURL        = "DONT_LLM_BASE_URL"
	// EnvSessionCeiling and KeySessionCeiling are the widest tier a session
	// may be granted (its enforcement reads it through the CLI's
	// sessionCeiling).
	EnvSessionCeiling = "DONT_SESSION_CEILING"
	KeySessionCeiling = "session_ceiling"
	// EnvTwoPersonFrom and KeyTwoPersonFrom are the person's two-person
	// rule: the tier from which a question needs two different approvers.
	EnvTwoPersonFrom = "DONT_TWO_PERSON_FROM"
	KeyTwoPersonFrom = "two_person_from"
	// EnvPasskeyRequiredFrom and KeyPasskeyRequiredFrom are the narrowest
	// tier whose approve needs a fresh passkey assertion bound to the
	// question (approvals.PasskeyRequired; docs/approvals.md, "Passkeys").
	// Only a person sets it: an agent that could lower it would answer
	// with a token it can read.
	EnvPasskeyRequiredFrom = "DONT_PASSKEY_REQUIRED_FROM"
	KeyPasskeyRequiredFrom = "passkey_required_from"
)

// PersonOnlyEnv are the environment variables of trust-relevant settings:
// a process with a harness signal never sets them.
var PersonOnlyEnv = []string{
	EnvApprovalTimeout, EnvApprovalTimeoutMin, EnvApprovalTimeoutMax, EnvApprovalRemindAt, EnvSubscriberLease, EnvPublicURL, EnvHooksAllowPrivate,
	EnvSpawnMaxLease, EnvLLMProvider, EnvLLMBaseURL, EnvSessionCeiling, EnvTwoPersonFrom, EnvSlackSigningSecret, EnvSlackBotToken,
	EnvPasskeyRequiredFrom, EnvFrameRetention, EnvDeliveryRetention,
}

// IsPersonOnlyEnv reports whether name sets a trust-relevant setting.
func IsPersonOnlyEnv(name string) bool { return slices.Contains(PersonOnlyEnv, name) }

// The trust-relevant keys of a config file, as `dont config show` and the
// config-untrusted warning name them. [agents.<name>] is every agent
// profile as a whole (its command and env list decide what runs, with
// which of the person's variables).
const (
	KeyAgents          = "agents"
	KeyApprovalTimeout = "approval_timeout"
	// KeyApprovalTimeoutMin and KeyApprovalTimeoutMax bound the deadline
	// a requester may ask for: an agent that widened them would keep a
	// question open for as long as it likes.
	KeyApprovalTimeoutMin = "approval_timeout_min"
	KeyApprovalTimeoutMax = "approval_timeout_max"
	KeySubscriberLease    = "subscriber_lease"
	KeyLLMProvider        = "llm.provider"
	KeyLLMBaseURL         = "llm.base_url"
	KeyAllowPrivate       = "hooks.allow_private"
	KeyPublicURL          = "hooks.public_url"
	// KeyRules is the person's approval rules ([[rules]]): each one
	// answers questions without a person.
	KeyRules = "rules"
	// KeyHarnessTier is the default tier of the sessions `dont hook` opens:
	// every call at or below it runs without a question.
	KeyHarnessTier = "harness_tier"
)

// BuiltinProfiles are the names of the built-in agent profiles of
// `dont spawns run` (internal/runner's Builtin; a test holds them equal).
// No config file may define a profile under one of them: a person running
// `--agent claude-code` gets Claude Code, whatever a workspace says.
var BuiltinProfiles = []string{"claude-code", "codex", "generic"}

// IsBuiltinProfile reports whether name is a built-in profile's.
func IsBuiltinProfile(name string) bool { return slices.Contains(BuiltinProfiles, name) }

// Source is where an effective setting came from.
type Source string

// The sources, in the order they take precedence (the first wins).
const (
	SourceEnv          Source = "environment"
	SourcePersonConfig Source = "person config"
	SourceWorkspace    Source = "workspace config"
	SourceDefault      Source = "default"
)

// Warning codes of the settings' sources (CodeConfigUntrusted is an
// error's code too, in internal/present's table).
const (
	// CodeConfigUntrusted: the workspace config sets trust-relevant keys
	// and the person has not trusted its current bytes; they were ignored.
	// As an error: a command needs one of them (spawns run --agent, direct
	// mode's provider).
	CodeConfigUntrusted errs.Code = "config-untrusted"
	// CodePersonConfigIgnored: the person's config is a link, or writable
	// by the group or others, or not theirs; it was ignored.
	CodePersonConfigIgnored = "person-config-ignored"
	// CodeEnvIgnored: a trust-relevant variable was set in a process with
	// a harness signal; it was ignored.
	CodeEnvIgnored = "setting-env-ignored"
)

// Pin is the trust pin of a config file's bytes: their SHA-256, in hex.
// Any change to the file changes it.
func Pin(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
