// Package project finds a dont project on disk (.dont/ with dont.db and
// config.toml), creates one, and reads its configuration.
package project

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// Dir is the folder dont keeps its state in, inside the project folder.
const Dir = ".dont"

// Config is .dont/config.toml, and the person's own config of the same
// shape (~/.config/dont/config.toml). Its trust-relevant keys
// (spawn_max_lease, session_ceiling, approval_timeout, subscriber_lease,
// [llm] provider and base_url, [hooks], [agents]) count from the workspace file only once the person trusted
// its bytes (config.go, docs/security.md).
type Config struct {
	SpawnTimeout  string `toml:"spawn_timeout,omitempty"`
	SpawnMaxLease string `toml:"spawn_max_lease,omitempty"`
	// SessionCeiling is the widest tier a session may be granted.
	SessionCeiling string `toml:"session_ceiling,omitempty"`
	// HarnessTier is the default tier of the session `dont hook` opens per
	// harness session: what it allows without a question.
	HarnessTier string `toml:"harness_tier,omitempty"`
	// ApprovalTimeout is an escalation question's deadline, and
	// SubscriberLease how recently a reader must have read a session's
	// frames for it to be answerable (DONT_APPROVAL_TIMEOUT,
	// DONT_SUBSCRIBER_LEASE).
	ApprovalTimeout string `toml:"approval_timeout,omitempty"`
	// ApprovalTimeoutMin and ApprovalTimeoutMax bound the deadline a
	// requester may ask for (approvals.DeadlineRange).
	ApprovalTimeoutMin string `toml:"approval_timeout_min,omitempty"`
	ApprovalTimeoutMax string `toml:"approval_timeout_max,omitempty"`
	// ApprovalRemindAt is the share of a question's deadline after which
	// the second line is reminded (settings.KeyApprovalRemindAt), as
	// written: 0.5 or "0.5".
	ApprovalRemindAt Share `toml:"approval_remind_at,omitempty"`
	// TwoPersonFrom is the tier from which a question needs two different
	// approvers (settings.KeyTwoPersonFrom).
	TwoPersonFrom   string `toml:"two_person_from,omitempty"`
	SubscriberLease string `toml:"subscriber_lease,omitempty"`
	// PasskeyRequiredFrom is the narrowest tier whose approve needs a
	// passkey assertion bound to the question (docs/approvals.md, "Passkeys").
	PasskeyRequiredFrom string `toml:"passkey_required_from,omitempty"`
	// FrameRetention and DeliveryRetention are how long ended approval
	// sessions and finished webhook deliveries are kept
	// (settings.FrameRetention, settings.DeliveryRetention).
	FrameRetention    string `toml:"frame_retention,omitempty"`
	DeliveryRetention string `toml:"delivery_retention,omitempty"`
	LLM               LLM    `toml:"llm,omitempty"`
	Hooks             Hooks  `toml:"hooks,omitempty"`
	// Agents are `dont spawns run`'s agent profiles ([agents.<name>]).
	Agents map[string]Agent `toml:"agents,omitempty"`
	// Rules are the person's approval rules ([[rules]]): answered before a
	// person is asked (internal/rules, docs/harnesses.md).
	Rules []rules.Rule `toml:"rules,omitempty"`
}

// Hooks configures webhook delivery (docs/hooks.md).
type Hooks struct {
	// AllowPrivate lists the private or special address ranges a hook may
	// reach (CIDR prefixes or addresses); none by default.
	AllowPrivate []string `toml:"allow_private,omitempty"`
	// PublicURL is where people reach this project's approvals page; a
	// Slack message links to it.
	PublicURL string `toml:"public_url,omitempty"`
}

// Agent is one agent profile of `dont spawns run` ([agents.<name>]), as
// written; internal/runner's Profile is what it becomes.
type Agent struct {
	// Template names the built-in profile this one starts from
	// (claude-code, codex, generic); its fields fill what this one leaves out.
	Template string `toml:"template,omitempty"`
	// Command is the command line, each element a text/template.
	Command []string `toml:"command,omitempty"`
	// Prompt is how the prompt is passed: "stdin" or "arg".
	Prompt string `toml:"prompt,omitempty"`
	// PromptTemplate renders the prompt the agent receives.
	PromptTemplate string `toml:"prompt_template,omitempty"`
	// Tool renders one allowed tool's name for this agent ("{{.}}" is the
	// dont tool name).
	Tool string `toml:"tool,omitempty"`
	// Env names the caller's environment variables the agent may see.
	Env []string `toml:"env,omitempty"`
}

// LLM configures direct mode. API keys are never read from this file:
// they come from the environment (DONT_LLM_API_KEY or the provider's own
// variable).
type LLM struct {
	Provider   string `toml:"provider,omitempty"`
	Model      string `toml:"model,omitempty"`
	BaseURL    string `toml:"base_url,omitempty"`
	Region     string `toml:"region,omitempty"`     // Bedrock
	Timeout    string `toml:"timeout,omitempty"`    // per provider request, a Go duration; default 60s
	MaxRetries int    `toml:"max_retries,omitzero"` // after a 429 or 5xx; 0: the default (3), -1: none
}

const defaultConfig = `# dont project configuration
# How long a spawn request waits for its callback before the sweep times it out:
# a positive Go duration up to 720h. DONT_SPAWN_TIMEOUT (such as 90s) overrides it.
spawn_timeout = "24h"

# Settings that decide what runs, where a secret goes or how long a question
# lives (spawn_max_lease, session_ceiling, [agents.*], [llm] provider and
# base_url, [hooks]) count from this file only after you trust it at your
# terminal (dont config trust), and again after every change to it; or set
# them in your own ~/.config/dont/config.toml. dont config show says what
# applies and where each value came from (dont help config).
#
# How far heartbeats (dont spawns heartbeat, dont spawns run) may move a
# spawn's expiry, counted from its issue: up to 720h (default 168h).
# spawn_max_lease = "168h"

# Agent profiles of dont spawns run (docs/harnesses.md), for example:
# [agents.claude]
# template = "claude-code"
# env = ["ANTHROPIC_API_KEY", "HOME"]

# Direct mode (dont assume --direct) calls an LLM provider itself.
# provider: openai, openai-compatible, vllm, ollama, llamacpp, anthropic or bedrock.
# DONT_LLM_PROVIDER, DONT_LLM_MODEL, DONT_LLM_BASE_URL and DONT_LLM_REGION override these.
# The API key is never kept here: set DONT_LLM_API_KEY (or OPENAI_API_KEY,
# ANTHROPIC_API_KEY, AWS_BEARER_TOKEN_BEDROCK / the AWS credential chain).
[llm]
provider = ""
model = ""
base_url = ""
# region = "us-east-1"   # bedrock
# timeout = "60s"        # per provider request
# max_retries = 3        # after a 429 or 5xx; -1 for none
`

// Project is an initialised project folder.
type Project struct {
	Root string // the folder holding .dont/
	// Shadowed are the projects above Root that Find passed over: a
	// .dont/ in a subfolder takes over every command run below it, so the
	// CLI says which one it used (a warning, project-nested).
	Shadowed []string
}

// DirMode is the mode of .dont/: only the owner enters it. The database
// files in it have sqlite.FileMode (0600); `dont doctor` warns when
// either is wider.
const DirMode os.FileMode = 0o700

// StateDir is .dont/ itself.
func (p Project) StateDir() string { return filepath.Join(p.Root, Dir) }

// DBPath is the SQLite file.
func (p Project) DBPath() string { return filepath.Join(p.Root, Dir, "dont.db") }

// ConfigPath is the configuration file.
func (p Project) ConfigPath() string { return filepath.Join(p.Root, Dir, "config.toml") }

// Find locates the project: DONT_PROJECT_DIR if set, else the nearest
// folder from dir upwards that holds .dont/dont.db. The .dont/ it finds
// must be the invoking user's own, private folder (checkOwn); projects
// further up are listed in Shadowed.
func Find(dir, envDir string) (Project, error) {
	if envDir != "" {
		p := Project{Root: envDir}
		if _, err := os.Stat(p.DBPath()); err != nil {
			return p, notInitialised(envDir)
		}
		return p, p.checkOwn()
	}
	var found Project
	for d := dir; ; {
		p := Project{Root: d}
		if _, err := os.Stat(p.DBPath()); err == nil {
			if found.Root == "" {
				found = p
			} else {
				found.Shadowed = append(found.Shadowed, d)
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if found.Root == "" {
		return Project{}, notInitialised(dir)
	}
	return found, found.checkOwn()
}

// checkOwn refuses a .dont/ that is a symbolic link, belongs to another
// user, or lets the group or others in: whoever made it so may have put
// the store there, and a link can lead any command to a store elsewhere
// (docs/security.md, "The project dont opens").
func (p Project) checkOwn() error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Lstat(p.StateDir())
	if err != nil {
		return errs.E(errs.StoreError, "cannot read "+p.StateDir()+": "+err.Error()).Wrap(err)
	}
	fix := errs.Step{Command: "cd " + p.Root + " && " + MakePrivate, Description: "make .dont/ private to you, if it is yours"}
	elsewhere := errs.Step{Command: "export DONT_PROJECT_DIR=<your project folder>", Description: "or point at the project you meant"}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return errs.E(ProjectNotOwn, p.StateDir()+" is a symbolic link: dont opens only a .dont/ folder that is really here; nothing was read",
			errs.Step{Command: "ls -l " + p.StateDir(), Description: "see where it leads; replace it with the folder itself if it is yours"}, elsewhere).
			Unmet(".dont/ is a folder, not a link")
	case !fi.IsDir():
		return errs.E(ProjectNotOwn, p.StateDir()+" is not a folder; nothing was read", elsewhere).Unmet(".dont/ is a folder")
	}
	if uid, ok := personal.OwnerUID(fi); ok && uid != os.Getuid() {
		return errs.E(ProjectNotOwn, fmt.Sprintf("%s belongs to uid %d, not to you (uid %d): dont opens only your own project; nothing was read", p.StateDir(), uid, os.Getuid()), elsewhere).
			Unmet(".dont/ belongs to the invoking user")
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return errs.E(ProjectNotOwn, fmt.Sprintf("%s has mode %04o: the group or others may use it, want %04o; nothing was read", p.StateDir(), m, DirMode), fix, elsewhere).
			Unmet(".dont/ is 0700")
	}
	return nil
}

// ProjectNotOwn refuses a project folder that is not the invoking user's
// own private folder (exit 3).
const ProjectNotOwn errs.Code = "project-not-own"

func notInitialised(dir string) error {
	return errs.E(errs.NotInitialised, "no dont project at or above "+dir,
		errs.Step{Command: "dont init", Description: "create .dont/ here"},
		errs.Step{Command: "export DONT_PROJECT_DIR=<project folder>", Description: "or point at an existing project"})
}

// Init creates .dont/ in root with a fresh database and default config.
func Init(ctx context.Context, root string) (Project, error) {
	p := Project{Root: root}
	if _, err := os.Stat(p.DBPath()); err == nil {
		return p, errs.E(errs.AlreadyInitialised, "a dont project already exists at "+root)
	}
	if err := os.MkdirAll(p.StateDir(), DirMode); err != nil {
		return p, errs.E(errs.StoreError, "cannot create "+Dir+": "+err.Error()).Wrap(err)
	}
	// MkdirAll leaves an existing folder as it is and obeys the umask.
	if err := os.Chmod(p.StateDir(), DirMode); err != nil {
		return p, errs.E(errs.StoreError, "cannot make "+Dir+" private: "+err.Error()).Wrap(err)
	}
	if _, err := os.Stat(p.ConfigPath()); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(p.ConfigPath(), []byte(defaultConfig), 0o600); err != nil {
			return p, errs.E(errs.StoreError, "cannot write config.toml: "+err.Error()).Wrap(err)
		}
	}
	// Create the database under a temporary name and rename it into place,
	// so a half-initialised project never looks initialised.
	tmp := p.DBPath() + ".init"
	os.Remove(tmp)
	s, err := sqlite.Create(ctx, tmp)
	if err != nil {
		return p, errs.E(errs.StoreError, "cannot create the database: "+err.Error()).Wrap(err)
	}
	s.Close()
	if err := os.Rename(tmp, p.DBPath()); err != nil {
		return p, errs.E(errs.StoreError, "cannot create the database: "+err.Error()).Wrap(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		os.Remove(tmp + side)
	}
	return p, nil
}

// MakePrivate is the command, run in the project folder, that gives .dont/
// and the database files the modes Init gives them.
const MakePrivate = "chmod 700 .dont && chmod 600 .dont/dont.db*"

// Exposure is a file of the project's state whose mode lets the group or
// others in.
type Exposure struct {
	Path string
	Mode os.FileMode // its permission bits
	Want os.FileMode
}

// Exposed lists .dont/ and the database files (dont.db and SQLite's -wal
// and -shm beside it) whose mode grants the group or others any
// permission. Files that do not exist are fine. On Windows, where the
// mode bits do not describe access, it reports nothing.
func (p Project) Exposed() ([]Exposure, error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	var out []Exposure
	for _, f := range []struct {
		path string
		want os.FileMode
	}{{p.StateDir(), DirMode}, {p.DBPath(), sqlite.FileMode}, {p.DBPath() + "-wal", sqlite.FileMode}, {p.DBPath() + "-shm", sqlite.FileMode}} {
		fi, err := os.Stat(f.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			out = append(out, Exposure{Path: f.path, Mode: m, Want: f.want})
		}
	}
	return out, nil
}

// LoadConfig reads config.toml's harmless settings (missing file:
// defaults): its trust-relevant keys are dropped, as if the person had
// not trusted it. What the person decides comes with LoadSettings.
func (p Project) LoadConfig() (Config, error) {
	s, _, err := LoadSettings(p, personal.Dirs{}, false)
	return s.Config, err
}

// MaxLease resolves spawn_max_lease: DONT_SPAWN_MAX_LEASE, else config,
// else 7 days; each held to settings.SpawnMaxLease.
func (c Config) MaxLease(env string) (time.Duration, error) {
	if env != "" {
		return settings.SpawnMaxLease.FromEnv(settings.EnvSpawnMaxLease, env)
	}
	if c.SpawnMaxLease != "" {
		return settings.SpawnMaxLease.FromConfig(settings.KeySpawnMaxLease, c.SpawnMaxLease)
	}
	return settings.DefaultSpawnMaxLease, nil
}

// Timeout resolves the spawn timeout: DONT_SPAWN_TIMEOUT, else config,
// else 24h; each held to settings.SpawnTimeout, the rule every other
// source of the setting follows.
func (c Config) Timeout(env string) (time.Duration, error) {
	if env != "" {
		return settings.SpawnTimeout.FromEnv(settings.EnvSpawnTimeout, env)
	}
	if c.SpawnTimeout != "" {
		return settings.SpawnTimeout.FromConfig(settings.KeySpawnTimeout, c.SpawnTimeout)
	}
	return settings.DefaultSpawnTimeout, nil
}

// Share is a number a config file may write bare (0.5) or quoted ("0.5"),
// kept as text; settings.ParseShare reads it.
type Share string

// UnmarshalTOML implements toml.Unmarshaler.
func (s *Share) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*s = Share(v)
	case float64:
		*s = Share(strconv.FormatFloat(v, 'g', -1, 64))
	case int64:
		*s = Share(strconv.FormatInt(v, 10))
	default:
		return fmt.Errorf("a share of the deadline is a number such as 0.5, got %v", v)
	}
	return nil
}
