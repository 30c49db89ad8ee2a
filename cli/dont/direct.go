package main

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/llm"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
)

// provider builds direct mode's LLM client from [llm] of the project's
// settings overridden by the DONT_LLM_* environment. Only spawn verbs in
// direct mode call it, so no other command pays for it. With no provider
// named at all it returns nil, and the service refuses with config-missing
// (direct mode never falls back to harness mode).
//
// The API key comes from the environment, and goes only where a person
// said: provider and base_url are trust-relevant (config.go), so they come
// from the person's environment (no harness signal), the person's config
// or a workspace config the person trusted, never from what an agent
// wrote. Without them the key goes to the provider's own host, or nowhere.
func (a *app) provider(p project.Project, c project.Config) (service.Reasoner, error) {
	base := llm.Config{Provider: c.LLM.Provider, Model: c.LLM.Model, BaseURL: c.LLM.BaseURL, Region: c.LLM.Region, MaxRetries: c.LLM.MaxRetries}
	if c.LLM.Timeout != "" {
		d, err := time.ParseDuration(c.LLM.Timeout)
		if err != nil || d <= 0 {
			return nil, errs.E(errs.ConfigInvalid, "[llm] timeout must be a positive Go duration such as 60s, got "+c.LLM.Timeout).Unmet("llm.timeout > 0")
		}
		base.Timeout = d
	}
	cfg := llm.ConfigFromEnv(base, a.personEnv)
	if strings.TrimSpace(cfg.Provider) == "" {
		if ls, ok := a.settings.loaded[p.Root]; ok && slices.Contains(ls.s.Untrusted, settings.KeyLLMProvider) {
			return nil, errs.E(settings.CodeConfigUntrusted, "direct mode: the workspace's [llm] provider and base_url are not trusted (the file changed since you trusted it, or you never did); no provider was called",
				errs.Step{Command: "dont config trust", Description: "at your terminal: read .dont/config.toml's trust-relevant settings and trust them"},
				errs.Step{Command: "dont assume <id> --harness", Description: "or emit a spawn_request and let your harness's subagent do the reasoning"}).Unmet("a trusted llm.provider")
		}
		return nil, nil
	}
	// Retry notices go to stderr, so that a person waiting on a busy
	// provider knows; keys never reach the logger.
	cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pr, err := llm.New(cfg)
	if err == nil {
		return pr, nil
	}
	var ce *llm.ConfigError
	if !errors.As(err, &ce) {
		return nil, errs.E(errs.ConfigInvalid, "direct mode: "+err.Error()).Wrap(err)
	}
	code := errs.ConfigInvalid
	if len(ce.Invalid) == 0 {
		code = errs.ConfigMissing
	}
	return nil, errs.E(code, "direct mode: "+strings.TrimPrefix(err.Error(), "llm: "),
		errs.Step{Command: "export DONT_LLM_PROVIDER=<provider> DONT_LLM_MODEL=<model> DONT_LLM_API_KEY=<key>", Description: "set the missing settings ([llm] in .dont/config.toml works too, except the key)"},
		errs.Step{Command: "dont assume <id> --harness", Description: "or emit a spawn_request and let your harness's subagent do the reasoning"},
	).Unmet(append(ce.Missing, ce.Invalid...)...).Wrap(err)
}
