package main

// Where settings come from, and which sources count for the ones only a
// person decides (docs/security.md, "Settings only a person decides"):
// `dont config show` and `dont config trust`, the environment rule, and
// the warnings that say what was ignored. The rules are
// internal/settings' and internal/project's; this file wires them.

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
)

// settingsState is what one invocation read of the settings: each
// project's once, and the warnings about ignored sources, once each.
type settingsState struct {
	loaded  map[string]loadedSettings
	notices []envelope.Warning
	seen    map[string]bool
	// personStarted: this process is `dont serve`, whose environment and
	// flags are the person's (the person starts it, outside the agent).
	personStarted bool
}

type loadedSettings struct {
	s project.Settings
	l project.Layers
}

// notice records a warning for every envelope this invocation prints.
func (a *app) notice(code envelope.WarningCode, msg string) {
	if a.settings.seen == nil {
		a.settings.seen = map[string]bool{}
	}
	if a.settings.seen[string(code)+msg] {
		return
	}
	a.settings.seen[string(code)+msg] = true
	a.settings.notices = append(a.settings.notices, envelope.Warning{Code: code, Message: msg})
}

// personEnv reads an environment variable. A trust-relevant one
// (settings.PersonOnlyEnv) counts only in a process with no harness
// signal, or in `dont serve`: an agent sets its own environment.
func (a *app) personEnv(name string) string {
	v := a.getenv(name)
	if v == "" || !settings.IsPersonOnlyEnv(name) || a.settings.personStarted {
		return v
	}
	if sig := a.harnessSignal(); sig != "" {
		a.notice(settings.CodeEnvIgnored, name+" is ignored: "+sig+" says an agent runs this command, and only a person sets it"+
			" (next: set it in your own config, dont help config, or where you start dont serve)")
		return ""
	}
	return v
}

// projectSettings are p's effective file settings: the person's config,
// then the workspace's (its trust-relevant keys only if the person
// trusted its bytes). What was ignored becomes a warning.
func (a *app) projectSettings(p project.Project) (project.Config, error) {
	ls, err := a.loadSettings(p)
	return ls.s.Config, err
}

func (a *app) loadSettings(p project.Project) (loadedSettings, error) {
	if ls, ok := a.settings.loaded[p.Root]; ok {
		return ls, nil
	}
	dirs, err := a.personalDirs()
	s, l, err := project.LoadSettings(p, dirs, err == nil)
	if err != nil {
		return loadedSettings{}, err
	}
	ls := loadedSettings{s: s, l: l}
	if a.settings.loaded == nil {
		a.settings.loaded = map[string]loadedSettings{}
	}
	a.settings.loaded[p.Root] = ls
	if l.PersonProblem != nil {
		a.notice(settings.CodePersonConfigIgnored, "your config is ignored: "+l.PersonProblem.Error()+
			" (next: chmod 600 "+l.PersonPath+", or replace the link with the file itself)")
	}
	if len(s.Untrusted) > 0 {
		a.notice(envelope.CodeOf(settings.CodeConfigUntrusted), untrustedMessage(p.ConfigPath(), s.Untrusted))
	}
	return ls, nil
}

// untrustedMessage is the config-untrusted warning, and the migration
// message of a project made before the rule: "this project's config has
// agent profiles (…); trust them with dont config trust".
func untrustedMessage(path string, keys []string) string {
	var agents, others []string
	for _, k := range keys {
		if name, ok := strings.CutPrefix(k, settings.KeyAgents+"."); ok {
			agents = append(agents, visible.Line(name))
		} else {
			others = append(others, k)
		}
	}
	var what []string
	if len(agents) > 0 {
		what = append(what, "agent profiles ("+strings.Join(agents, ", ")+")")
	}
	what = append(what, others...)
	return "this project's config (" + visible.Line(path) + ") has " + strings.Join(what, ", ") +
		", which only you decide: ignored until you trust this version of the file; trust them with dont config trust"
}

// sessionCeiling is the widest tier a session of p may be granted, and
// where that came from ("" and SourceDefault when nothing sets it):
// DONT_SESSION_CEILING (a person's environment only), else
// session_ceiling in the person's config, else in the trusted workspace
// config.
func (a *app) sessionCeiling(p project.Project) (string, settings.Source, error) {
	if v := strings.TrimSpace(a.personEnv(settings.EnvSessionCeiling)); v != "" {
		return v, settings.SourceEnv, nil
	}
	ls, err := a.loadSettings(p)
	if err != nil {
		return "", settings.SourceDefault, err
	}
	if v := ls.s.Config.SessionCeiling; v != "" {
		return v, ls.s.From[settings.KeySessionCeiling], nil
	}
	return "", settings.SourceDefault, nil
}

// ceiling is the session ceiling: --session-ceiling (dont serve's), else
// the person's setting (sessionCeiling: their environment, their config,
// a trusted workspace config); "" for the default. A value that is not a
// tier is refused.
func (a *app) ceiling(p project.Project, flag string) (approvals.Tier, error) {
	v, from := flag, "--session-ceiling"
	if v == "" {
		var src settings.Source
		var err error
		if v, src, err = a.sessionCeiling(p); err != nil {
			return "", err
		}
		from = settings.KeySessionCeiling + " (" + string(src) + ")"
	}
	if v == "" {
		return "", nil
	}
	if !approvals.Tier(v).Valid() {
		return "", errs.E(errs.ConfigInvalid, from+" "+strconv.Quote(v)+" is not a tier").
			Unmet("session ceiling is one of " + approvals.TierNames(approvals.Tiers))
	}
	return approvals.Tier(v), nil
}

// configProject is the project `dont config` reads.
func (a *app) configProject() (project.Project, error) { return a.locateProject() }

// configHelp is `dont help config` (and `dont config --help`), which
// config-missing and config-invalid errors point to.
const configHelp = `dont reads .dont/config.toml in the project folder, and your own
~/.config/dont/config.toml (same keys; it must be yours, not a link, and
writable by you alone, else it is ignored). Environment variables override both.

  spawn_timeout = "24h"        DONT_SPAWN_TIMEOUT   how long a spawn waits for its callback
* spawn_max_lease = "168h"     DONT_SPAWN_MAX_LEASE how far heartbeats may move a spawn's expiry from its issue
* session_ceiling = ""         DONT_SESSION_CEILING the widest tier a session may be granted
* approval_timeout = "120s"    DONT_APPROVAL_TIMEOUT an escalation question's deadline
* approval_timeout_min = "30s" DONT_APPROVAL_TIMEOUT_MIN the shortest deadline a requester may ask for
* approval_timeout_max = ""    DONT_APPROVAL_TIMEOUT_MAX the longest (default: approval_timeout)
* approval_remind_at = 0.5     DONT_APPROVAL_REMIND_AT remind approval.reminder hooks after this share of a deadline
* two_person_from = ""         DONT_TWO_PERSON_FROM the tier from which two different approvers must approve
* subscriber_lease = "10s"     DONT_SUBSCRIBER_LEASE how recently a reader must have read to count

* [agents.<name>]                                   dont spawns run's agent profiles (docs/harnesses.md)
  template = "claude-code"                          a built-in to start from: claude-code, codex, generic
  command = ["my-agent"]                            the command line (text/template)
  env = ["PATH", "HOME"]                            the caller's variables the agent may see
  (a profile may not be named claude-code, codex or generic)

  [llm]                                             direct mode's provider (assume/overlook/guess --direct)
* provider = "openai"          DONT_LLM_PROVIDER    openai, openai-compatible, vllm, ollama, llamacpp, anthropic, bedrock
  model = "gpt-4o"             DONT_LLM_MODEL
* base_url = ""                DONT_LLM_BASE_URL    the provider's endpoint, if not the default
  region = ""                  DONT_LLM_REGION      bedrock (else AWS_REGION, AWS_DEFAULT_REGION)
  timeout = "60s"                                   per provider request
  max_retries = 3                                   after a 429 or 5xx; -1 for none
  (never in the file)          DONT_LLM_API_KEY     or OPENAI_API_KEY, ANTHROPIC_API_KEY, AWS_BEARER_TOKEN_BEDROCK

* [hooks]                                           webhooks (docs/hooks.md)
* allow_private = []           DONT_HOOKS_ALLOW_PRIVATE private ranges a hook may reach
* public_url = ""              DONT_PUBLIC_URL      the approvals page, for Slack's links
* (never in the file)          DONT_SLACK_SIGNING_SECRET the Slack app's, for dont serve (docs/approvals.md, "Slack")

* only you decide these (docs/security.md, "Settings only a person decides"):
  - in .dont/config.toml they count only after you trust the file at your
    terminal (dont config trust), and again after every change to it;
  - their environment variables count only with no harness signal
    (DONT_HARNESS, DONT_REQUEST_ID, dont mcp) and for dont serve;
  - order: your environment > your config > the trusted project config > default.
  Ignored values are warnings (config-untrusted, setting-env-ignored,
  person-config-ignored); dont config show prints every value and its source.

Also: DONT_PROJECT_DIR (the project folder), DONT_HARNESS (truthy: harness mode),
DONT_REQUEST_ID (the --request-id of a callback), DONT_AUTHOR, NO_COLOR.`

// configCommand is `dont config show|trust`, and `dont help config`.
func (a *app) configCommand() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Where dont reads its settings; show them (dont config show), trust this project's config file (dont config trust).",
		Long: configHelp, Args: a.argCount(0), RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
	c.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective settings, where each came from, and what was ignored.",
		Args:  a.argCount(0),
		RunE:  func(c *cobra.Command, _ []string) error { return a.configShow() },
	}, &cobra.Command{
		Use:   "trust",
		Short: "Trust .dont/config.toml as it is now, at your terminal: the settings only you decide then count from it, until the file changes.",
		Args:  a.argCount(0),
		RunE:  func(c *cobra.Command, _ []string) error { return a.configTrust(c) },
	})
	return c
}

// configSetting is one line of `dont config show`.
type configSetting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	// Env names the variable that set it or would override it.
	Env string `json:"env,omitempty"`
	// PersonOnly: only a person's sources set it.
	PersonOnly bool `json:"person_only"`
}

type configShown struct {
	Workspace        string          `json:"workspace_config"`
	WorkspaceTrusted bool            `json:"workspace_trusted"`
	PersonConfig     string          `json:"person_config,omitempty"`
	PersonConfigUsed bool            `json:"person_config_used"`
	Settings         []configSetting `json:"settings"`
	Untrusted        []string        `json:"untrusted"`
}

func (a *app) configShow() error {
	p, err := a.configProject()
	if err != nil {
		return err
	}
	ls, err := a.loadSettings(p)
	if err != nil {
		return err
	}
	c, from := ls.s.Config, ls.s.From
	out := configShown{Workspace: p.ConfigPath(), WorkspaceTrusted: ls.l.Trusted, PersonConfig: ls.l.PersonPath,
		PersonConfigUsed: ls.l.PersonFound, Untrusted: append([]string{}, ls.s.Untrusted...)}
	add := func(key, value, env string, personOnly bool, def string) {
		src := from[key]
		if v := a.personEnv(env); env != "" && v != "" {
			value, src = v, settings.SourceEnv
		}
		if src == "" {
			value, src = def, settings.SourceDefault
		}
		out.Settings = append(out.Settings, configSetting{Key: key, Value: value, Source: string(src), Env: env, PersonOnly: personOnly})
	}
	add(settings.KeySpawnTimeout, c.SpawnTimeout, settings.EnvSpawnTimeout, false, "24h")
	add(settings.KeySpawnMaxLease, c.SpawnMaxLease, settings.EnvSpawnMaxLease, true, "168h")
	// The ceiling as its enforcement reads it (sessionCeiling).
	ceiling, ceilingFrom, _ := a.sessionCeiling(p)
	out.Settings = append(out.Settings, configSetting{Key: settings.KeySessionCeiling, Value: ceiling, Source: string(ceilingFrom), Env: settings.EnvSessionCeiling, PersonOnly: true})
	add(settings.KeyApprovalTimeout, c.ApprovalTimeout, settings.EnvApprovalTimeout, true, "120s")
	add(settings.KeyApprovalTimeoutMin, c.ApprovalTimeoutMin, settings.EnvApprovalTimeoutMin, true, "30s")
	add(settings.KeyApprovalTimeoutMax, c.ApprovalTimeoutMax, settings.EnvApprovalTimeoutMax, true, "approval_timeout")
	add(settings.KeyApprovalRemindAt, string(c.ApprovalRemindAt), settings.EnvApprovalRemindAt, true, "")
	add(settings.KeyTwoPersonFrom, c.TwoPersonFrom, settings.EnvTwoPersonFrom, true, "")
	add(settings.KeySubscriberLease, c.SubscriberLease, settings.EnvSubscriberLease, true, "10s")
	add(settings.KeyPasskeyRequiredFrom, c.PasskeyRequiredFrom, settings.EnvPasskeyRequiredFrom, true, "")
	add(settings.KeyFrameRetention, c.FrameRetention, settings.EnvFrameRetention, true, "0")
	add(settings.KeyDeliveryRetention, c.DeliveryRetention, settings.EnvDeliveryRetention, true, "0")
	add(settings.KeyLLMProvider, c.LLM.Provider, settings.EnvLLMProvider, true, "")
	add(settings.KeyLLMBaseURL, c.LLM.BaseURL, settings.EnvLLMBaseURL, true, "")
	add("llm.model", c.LLM.Model, "DONT_LLM_MODEL", false, "")
	add("llm.region", c.LLM.Region, "DONT_LLM_REGION", false, "")
	add("llm.timeout", c.LLM.Timeout, "", false, "60s")
	retries := ""
	if c.LLM.MaxRetries != 0 {
		retries = fmt.Sprint(c.LLM.MaxRetries)
	}
	add("llm.max_retries", retries, "", false, "3")
	add(settings.KeyAllowPrivate, strings.Join(c.Hooks.AllowPrivate, ","), settings.EnvHooksAllowPrivate, true, "")
	add(settings.KeyPublicURL, c.Hooks.PublicURL, settings.EnvPublicURL, true, "")
	add(settings.KeyHarnessTier, c.HarnessTier, "", true, "read-only")
	var ruleNames []string
	for _, r := range c.Rules {
		ruleNames = append(ruleNames, visible.Line(r.Name))
	}
	add(settings.KeyRules, strings.Join(ruleNames, ", "), "", true, "")
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ag := c.Agents[n]
		value := strings.Join(ag.Command, " ")
		if value == "" {
			value = "template " + ag.Template
		}
		if len(ag.Env) > 0 {
			value += " (env " + strings.Join(ag.Env, ", ") + ")"
		}
		add(settings.KeyAgents+"."+n, value, "", true, "")
	}
	a.emit(tools.Output{Kind: envelope.KindConfig, Data: out})
	return nil
}

type configTrusted struct {
	Workspace string `json:"workspace_config"`
	SHA256    string `json:"sha256"`
	Trusted   bool   `json:"trusted"`
}

// configTrust shows the person, at the controlling terminal, what of the
// workspace config only they decide, and pins the bytes they saw.
func (a *app) configTrust(c *cobra.Command) error {
	p, err := a.configProject()
	if err != nil {
		return err
	}
	dirs, derr := a.personalDirs()
	l, err := project.LoadLayers(p, dirs, derr == nil)
	if err != nil {
		return err
	}
	if l.WorkspaceBytes == nil {
		return errs.E(errs.ConfigMissing, "there is no "+p.ConfigPath()+" to trust",
			errs.Step{Command: "dont config show", Description: "see the settings that apply"}).Unmet("a workspace config file")
	}
	if derr != nil {
		return errs.E(errs.ConfigMissing, "cannot find your home folder in the user database, where the trust pin is kept: "+derr.Error()).Wrap(derr)
	}
	tty, err := a.personTerminal("trusting " + p.ConfigPath())
	if err != nil {
		return err
	}
	defer tty.Close()
	pin := settings.Pin(l.WorkspaceBytes)
	var part bytes.Buffer
	if err := toml.NewEncoder(&part).Encode(l.Workspace.TrustRelevant()); err != nil {
		return errs.E(errs.Internal, "cannot show the config: "+err.Error()).Wrap(err)
	}
	fmt.Fprintf(tty, "%s (sha256 %s) sets what only you decide:\n\n%s\n", visible.Line(p.ConfigPath()), pin, visible.Text(part.String()))
	fmt.Fprint(tty, "Trust these settings for this project until the file changes? [y/N] ")
	answer, err := confirmclient.ReadLine(c.Context(), tty)
	fmt.Fprintln(tty)
	if err != nil && c.Context().Err() != nil {
		return errs.E(errs.Interrupted, "interrupted at the prompt; nothing was trusted")
	}
	if !confirm.Yes(answer) {
		return errs.E(confirm.Declined, "you did not trust "+p.ConfigPath()+"; its trust-relevant settings stay ignored",
			errs.Step{Command: "dont config trust", Description: "trust it after reading it"}).Unmet("a yes at the terminal")
	}
	if err := project.Trust(l); err != nil {
		return err
	}
	a.emit(tools.Output{Kind: envelope.KindConfig, Data: configTrusted{Workspace: p.ConfigPath(), SHA256: pin, Trusted: true}})
	return nil
}
