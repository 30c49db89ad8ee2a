package project

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/settings"
)

// TrustPinFile is the file, in the person's folder for a project
// (personal.Dirs.ProjectDir), that pins the workspace config the person
// trusted: the SHA-256 of its bytes (settings.Pin), in hex.
const TrustPinFile = "trusted-config.sha256"

// Layers are a project's config files as read: the workspace's
// .dont/config.toml, whether the person trusted its exact bytes, and the
// person's own config.
type Layers struct {
	Workspace      Config
	WorkspaceBytes []byte // nil: no file
	// Trusted: the person's pin matches WorkspaceBytes.
	Trusted bool
	// Person is the person's own config, if PersonPath holds one that is
	// theirs alone; PersonProblem says why an existing one was ignored.
	Person        Config
	PersonPath    string
	PersonFound   bool
	PersonProblem error
	// PinPath is where the trust pin lives ("" without the person's folders).
	PinPath string
}

// Settings are a project's effective file settings (the environment is
// applied by whoever reads them, through the same order).
type Settings struct {
	Config Config
	// From says, per key (settings.Key…, "spawn_timeout", "llm.model",
	// "agents.<name>", …), which file gave the value.
	From map[string]settings.Source
	// Untrusted are the trust-relevant keys the workspace config sets,
	// ignored because the person has not trusted its bytes.
	Untrusted []string
}

// LoadLayers reads the workspace config, its trust pin and the person's
// config. ok is false when the person's folders are unknown: then only
// the workspace file is read, untrusted. A file that does not parse, or
// that defines a built-in agent profile, is config-invalid.
func LoadLayers(p Project, dirs personal.Dirs, ok bool) (Layers, error) {
	var l Layers
	b, err := os.ReadFile(p.ConfigPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return l, errs.E(errs.ConfigInvalid, "cannot read "+p.ConfigPath()+": "+err.Error()).Wrap(err)
	default:
		l.WorkspaceBytes = b
		if l.Workspace, err = decode(p.ConfigPath(), b); err != nil {
			return l, err
		}
	}
	if !ok {
		return l, nil
	}
	l.PinPath = filepath.Join(dirs.ProjectDir(p.Root), TrustPinFile)
	if l.WorkspaceBytes != nil && personal.CheckOwned(l.PinPath) == nil {
		if pin, err := os.ReadFile(l.PinPath); err == nil && strings.TrimSpace(string(pin)) == settings.Pin(l.WorkspaceBytes) {
			l.Trusted = true
		}
	}
	l.PersonPath = dirs.ConfigPath()
	if _, err := os.Lstat(l.PersonPath); errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err := personal.CheckOwned(l.PersonPath); err != nil {
		l.PersonProblem = err
		return l, nil
	}
	pb, err := os.ReadFile(l.PersonPath)
	if err != nil {
		return l, errs.E(errs.ConfigInvalid, "cannot read "+l.PersonPath+": "+err.Error()).Wrap(err)
	}
	if l.Person, err = decode(l.PersonPath, pb); err != nil {
		return l, err
	}
	l.PersonFound = true
	return l, nil
}

// decode reads one config file and refuses a built-in profile's name.
func decode(path string, b []byte) (Config, error) {
	var c Config
	if _, err := toml.Decode(string(b), &c); err != nil {
		return c, errs.E(errs.ConfigInvalid, "cannot read "+path+": "+err.Error()).Wrap(err)
	}
	for _, name := range sortedNames(c.Agents) {
		if settings.IsBuiltinProfile(name) {
			return c, errs.E(errs.ConfigInvalid, path+" defines [agents."+name+"], the name of a built-in profile: a built-in profile cannot be redefined",
				errs.Step{Command: "[agents.my-" + name + "]\ntemplate = \"" + name + "\"  # in " + path, Description: "give your profile its own name, starting from the built-in one, and run it with --agent my-" + name}).
				Unmet("no [agents.<name>] named " + strings.Join(settings.BuiltinProfiles, ", "))
		}
	}
	return c, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve merges the layers: the person's config first, then the
// workspace's, then the defaults. The workspace's trust-relevant keys
// count only when the person trusted its bytes; otherwise each one it
// sets (to other than its default) is listed in Untrusted.
func (l Layers) Resolve() Settings {
	s := Settings{From: map[string]settings.Source{}}
	ws, person := l.Workspace, Config{}
	if l.PersonFound {
		person = l.Person
	}
	pick := func(key string, trustRelevant bool, dst *string, p, w string) {
		switch {
		case p != "":
			*dst, s.From[key] = p, settings.SourcePersonConfig
		case w == "":
		case trustRelevant && !l.Trusted:
			s.Untrusted = append(s.Untrusted, key)
		default:
			*dst, s.From[key] = w, settings.SourceWorkspace
		}
	}
	c := &s.Config
	pick(settings.KeySpawnTimeout, false, &c.SpawnTimeout, person.SpawnTimeout, ws.SpawnTimeout)
	// A lease equal to the default changes nothing: not worth a warning
	// (every project dont init made before holds one).
	wsLease := ws.SpawnMaxLease
	if d, ok := settings.SpawnMaxLease.Parse(wsLease); ok && d == settings.DefaultSpawnMaxLease && !l.Trusted {
		wsLease = ""
	}
	pick(settings.KeySpawnMaxLease, true, &c.SpawnMaxLease, person.SpawnMaxLease, wsLease)
	pick(settings.KeySessionCeiling, true, &c.SessionCeiling, person.SessionCeiling, ws.SessionCeiling)
	pick(settings.KeyHarnessTier, true, &c.HarnessTier, person.HarnessTier, ws.HarnessTier)
	pick(settings.KeyApprovalTimeout, true, &c.ApprovalTimeout, person.ApprovalTimeout, ws.ApprovalTimeout)
	pick(settings.KeyApprovalTimeoutMin, true, &c.ApprovalTimeoutMin, person.ApprovalTimeoutMin, ws.ApprovalTimeoutMin)
	pick(settings.KeyApprovalTimeoutMax, true, &c.ApprovalTimeoutMax, person.ApprovalTimeoutMax, ws.ApprovalTimeoutMax)
	remind := string(c.ApprovalRemindAt)
	pick(settings.KeyApprovalRemindAt, true, &remind, string(person.ApprovalRemindAt), string(ws.ApprovalRemindAt))
	c.ApprovalRemindAt = Share(remind)
	pick(settings.KeyTwoPersonFrom, true, &c.TwoPersonFrom, person.TwoPersonFrom, ws.TwoPersonFrom)
	pick(settings.KeySubscriberLease, true, &c.SubscriberLease, person.SubscriberLease, ws.SubscriberLease)
	pick(settings.KeyPasskeyRequiredFrom, true, &c.PasskeyRequiredFrom, person.PasskeyRequiredFrom, ws.PasskeyRequiredFrom)
	pick(settings.KeyFrameRetention, true, &c.FrameRetention, person.FrameRetention, ws.FrameRetention)
	pick(settings.KeyDeliveryRetention, true, &c.DeliveryRetention, person.DeliveryRetention, ws.DeliveryRetention)
	pick(settings.KeyLLMProvider, true, &c.LLM.Provider, person.LLM.Provider, ws.LLM.Provider)
	pick(settings.KeyLLMBaseURL, true, &c.LLM.BaseURL, person.LLM.BaseURL, ws.LLM.BaseURL)
	pick("llm.model", false, &c.LLM.Model, person.LLM.Model, ws.LLM.Model)
	pick("llm.region", false, &c.LLM.Region, person.LLM.Region, ws.LLM.Region)
	pick("llm.timeout", false, &c.LLM.Timeout, person.LLM.Timeout, ws.LLM.Timeout)
	switch {
	case person.LLM.MaxRetries != 0:
		c.LLM.MaxRetries, s.From["llm.max_retries"] = person.LLM.MaxRetries, settings.SourcePersonConfig
	case ws.LLM.MaxRetries != 0:
		c.LLM.MaxRetries, s.From["llm.max_retries"] = ws.LLM.MaxRetries, settings.SourceWorkspace
	}
	pick(settings.KeyPublicURL, true, &c.Hooks.PublicURL, person.Hooks.PublicURL, ws.Hooks.PublicURL)
	switch {
	case len(person.Hooks.AllowPrivate) > 0:
		c.Hooks.AllowPrivate, s.From[settings.KeyAllowPrivate] = person.Hooks.AllowPrivate, settings.SourcePersonConfig
	case len(ws.Hooks.AllowPrivate) == 0:
	case !l.Trusted:
		s.Untrusted = append(s.Untrusted, settings.KeyAllowPrivate)
	default:
		c.Hooks.AllowPrivate, s.From[settings.KeyAllowPrivate] = ws.Hooks.AllowPrivate, settings.SourceWorkspace
	}
	// Rules: the person's first (the first rule that matches decides),
	// then the workspace's, only if the person trusted its bytes: an agent
	// that writes the workspace config adds no rule.
	if len(person.Rules) > 0 {
		c.Rules, s.From[settings.KeyRules] = append(c.Rules, person.Rules...), settings.SourcePersonConfig
	}
	switch {
	case len(ws.Rules) == 0:
	case !l.Trusted:
		s.Untrusted = append(s.Untrusted, settings.KeyRules)
	default:
		c.Rules = append(c.Rules, ws.Rules...)
		if s.From[settings.KeyRules] == "" {
			s.From[settings.KeyRules] = settings.SourceWorkspace
		}
	}
	// Agent profiles merge by name; the person's win.
	for _, n := range sortedNames(person.Agents) {
		if c.Agents == nil {
			c.Agents = map[string]Agent{}
		}
		c.Agents[n], s.From[settings.KeyAgents+"."+n] = person.Agents[n], settings.SourcePersonConfig
	}
	for _, n := range sortedNames(ws.Agents) {
		key := settings.KeyAgents + "." + n
		switch {
		case s.From[key] != "":
		case !l.Trusted:
			s.Untrusted = append(s.Untrusted, key)
		default:
			if c.Agents == nil {
				c.Agents = map[string]Agent{}
			}
			c.Agents[n], s.From[key] = ws.Agents[n], settings.SourceWorkspace
		}
	}
	return s
}

// LoadSettings reads and resolves p's settings (LoadLayers, Resolve).
func LoadSettings(p Project, dirs personal.Dirs, ok bool) (Settings, Layers, error) {
	l, err := LoadLayers(p, dirs, ok)
	if err != nil {
		return Settings{}, l, err
	}
	return l.Resolve(), l, nil
}

// TrustRelevant is the part of a config that only a person decides, as a
// config file would hold it: what `dont config trust` shows before it asks.
func (c Config) TrustRelevant() Config {
	return Config{SpawnMaxLease: c.SpawnMaxLease, SessionCeiling: c.SessionCeiling, HarnessTier: c.HarnessTier, ApprovalTimeout: c.ApprovalTimeout,
		ApprovalTimeoutMin: c.ApprovalTimeoutMin, ApprovalTimeoutMax: c.ApprovalTimeoutMax, ApprovalRemindAt: c.ApprovalRemindAt, TwoPersonFrom: c.TwoPersonFrom, SubscriberLease: c.SubscriberLease,
		PasskeyRequiredFrom: c.PasskeyRequiredFrom, FrameRetention: c.FrameRetention, DeliveryRetention: c.DeliveryRetention,
		LLM: LLM{Provider: c.LLM.Provider, BaseURL: c.LLM.BaseURL}, Hooks: c.Hooks, Agents: c.Agents, Rules: c.Rules}
}

// Trust pins the workspace config's current bytes as the person's: its
// trust-relevant keys count until the file changes. The caller has asked
// the person at their terminal.
func Trust(l Layers) error {
	if l.PinPath == "" {
		return errs.E(errs.ConfigMissing, "cannot find your home folder in the user database, where the trust pin is kept")
	}
	if err := personal.MkdirAll(filepath.Dir(l.PinPath)); err != nil {
		return errs.E(errs.StoreError, "cannot create "+filepath.Dir(l.PinPath)+": "+err.Error()).Wrap(err)
	}
	tmp := l.PinPath + ".tmp"
	os.Remove(tmp)
	if err := os.WriteFile(tmp, []byte(settings.Pin(l.WorkspaceBytes)+"\n"), personal.FileMode); err != nil {
		return errs.E(errs.StoreError, "cannot write "+tmp+": "+err.Error()).Wrap(err)
	}
	if err := os.Rename(tmp, l.PinPath); err != nil {
		return errs.E(errs.StoreError, "cannot write "+l.PinPath+": "+err.Error()).Wrap(err)
	}
	return nil
}
