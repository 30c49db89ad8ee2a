package llm

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by New.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
	DefaultRegion     = "us-east-1"
)

// Config selects and configures a provider. The zero values of Timeout and
// MaxRetries mean the defaults; a negative MaxRetries disables retries.
//
// Config never prints its API key: String, Format (every fmt verb), LogValue
// and JSON encoding all leave it out.
type Config struct {
	// Provider is "openai" (any OpenAI-compatible server; also spelled
	// "openai-compatible", "vllm", "ollama", "llamacpp"), "anthropic" or
	// "bedrock".
	Provider string
	// BaseURL overrides the provider's endpoint, with or without a trailing
	// /v1 (for Bedrock: the runtime endpoint).
	BaseURL string
	// Model is the model name, or the Bedrock model or inference profile id.
	Model string
	// APIKey authenticates to OpenAI or Anthropic. For Bedrock it is optional:
	// set, it is sent as a Bedrock API key (bearer token); unset, requests
	// are SigV4-signed with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
	// AWS_SESSION_TOKEN, else with what the aws CLI resolves from the
	// default chain (profiles, SSO, roles; see bedrock.go).
	APIKey string `json:"-"`
	// Region is the AWS region for Bedrock; empty means us-east-1
	// (ConfigFromEnv reads AWS_REGION and AWS_DEFAULT_REGION).
	Region string
	// Timeout bounds each request (each retry gets a fresh one).
	Timeout time.Duration
	// MaxRetries bounds the retries after a 429 or 5xx answer.
	MaxRetries int
	// HTTPClient sends the requests; nil means a new default client.
	HTTPClient *http.Client `json:"-"`
	// Logger receives retry notices; nil discards them. Keys never reach it.
	Logger *slog.Logger `json:"-"`
}

// Provider names accepted by New.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderBedrock   = "bedrock"
)

// openAIFamily maps each OpenAI-compatible provider name to its default base
// URL and whether an API key is needed there.
var openAIFamily = map[string]struct {
	base     string
	needsKey bool
}{
	"openai":            {"https://api.openai.com/v1", true},
	"openai-compatible": {"", false},
	"vllm":              {"http://localhost:8000/v1", false},
	"ollama":            {"http://localhost:11434/v1", false},
	"llamacpp":          {"http://localhost:8080/v1", false},
}

const anthropicDefaultBase = "https://api.anthropic.com"

// Environment variables read by ConfigFromEnv.
const (
	EnvProvider = "DONT_LLM_PROVIDER"
	EnvBaseURL  = "DONT_LLM_BASE_URL"
	EnvModel    = "DONT_LLM_MODEL"
	EnvAPIKey   = "DONT_LLM_API_KEY"
	EnvRegion   = "DONT_LLM_REGION"
)

// providerKeyVar is each provider's usual key variable, the fallback when
// neither DONT_LLM_API_KEY nor the base config sets a key. Only the provider
// that owns a variable reads it, so an OpenAI key is never sent to a local
// or third-party server configured under another name.
var providerKeyVar = map[string]string{
	ProviderOpenAI:    "OPENAI_API_KEY",
	ProviderAnthropic: "ANTHROPIC_API_KEY",
	ProviderBedrock:   "AWS_BEARER_TOKEN_BEDROCK",
}

// ConfigFromEnv returns base overridden by the environment: DONT_LLM_PROVIDER,
// DONT_LLM_BASE_URL, DONT_LLM_MODEL, DONT_LLM_REGION and DONT_LLM_API_KEY
// replace base's values when set. A key still missing falls back to the
// provider's usual variable (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// AWS_BEARER_TOKEN_BEDROCK), and a region to AWS_REGION, then
// AWS_DEFAULT_REGION. AWS credentials are read when the provider is built (bedrock.go).
// getenv is os.Getenv in production.
func ConfigFromEnv(base Config, getenv func(string) string) Config {
	cfg := base
	set := func(dst *string, name string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	set(&cfg.Provider, EnvProvider)
	set(&cfg.BaseURL, EnvBaseURL)
	set(&cfg.Model, EnvModel)
	set(&cfg.Region, EnvRegion)
	set(&cfg.APIKey, EnvAPIKey)
	if cfg.APIKey == "" {
		if name, ok := providerKeyVar[normaliseProvider(cfg.Provider)]; ok {
			set(&cfg.APIKey, name)
		}
	}
	if normaliseProvider(cfg.Provider) == ProviderBedrock && cfg.Region == "" {
		set(&cfg.Region, "AWS_REGION")
		if cfg.Region == "" {
			set(&cfg.Region, "AWS_DEFAULT_REGION")
		}
	}
	return cfg
}

// validRegion reports whether r is shaped like an AWS region name:
// lowercase letters, digits and hyphens.
func validRegion(r string) bool {
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return len(r) <= 32
}

func normaliseProvider(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	switch p {
	case "llama.cpp", "llama-cpp":
		return "llamacpp"
	case "openai_compatible":
		return "openai-compatible"
	}
	return p
}

// New builds the provider cfg names. Its error is a *ConfigError (ErrConfig)
// naming every missing or invalid setting.
func New(cfg Config) (Provider, error) {
	name := normaliseProvider(cfg.Provider)
	cfg.Provider = name
	cfg.Model = strings.TrimSpace(cfg.Model)
	cfg.BaseURL = strings.TrimSpace(cfg.BaseURL)
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	ce := &ConfigError{}
	if cfg.Model == "" {
		ce.Missing = append(ce.Missing, "model ("+EnvModel+")")
	}
	if cfg.Timeout < 0 {
		ce.Invalid = append(ce.Invalid, "timeout "+cfg.Timeout.String()+" (want a positive duration)")
	}
	// A region names an AWS region and nothing else: it becomes part of
	// Bedrock's host, where the key goes, and may come from a file the
	// person did not write ("us-east-1.evil.example/" would move the host).
	if cfg.Region = strings.TrimSpace(cfg.Region); cfg.Region != "" && !validRegion(cfg.Region) {
		ce.Invalid = append(ce.Invalid, "region "+strconv.Quote(cfg.Region)+" (want an AWS region name such as us-east-1)")
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ce.Invalid = append(ce.Invalid, "base URL "+strconv.Quote(redactURL(cfg.BaseURL))+" (want http:// or https:// and a host)")
		}
	}
	keyMissing := func(needed bool) {
		if needed && cfg.APIKey == "" {
			what := "API key (" + EnvAPIKey
			if v, ok := providerKeyVar[name]; ok {
				what += " or " + v
			}
			ce.Missing = append(ce.Missing, what+")")
		}
	}
	var build func() (Provider, error)
	switch {
	case name == "":
		ce.Missing = append(ce.Missing, "provider ("+EnvProvider+": openai, anthropic or bedrock)")
	case name == ProviderAnthropic:
		keyMissing(cfg.BaseURL == "")
		if cfg.BaseURL == "" {
			cfg.BaseURL = anthropicDefaultBase
		}
		build = func() (Provider, error) { return newAnthropic(cfg), nil }
	case name == ProviderBedrock:
		build = func() (Provider, error) { return newBedrock(cfg) }
	default:
		fam, ok := openAIFamily[name]
		if !ok {
			ce.Invalid = append(ce.Invalid, "provider "+strconv.Quote(cfg.Provider)+" (want openai, openai-compatible, vllm, ollama, llamacpp, anthropic or bedrock)")
			break
		}
		if cfg.BaseURL == "" {
			if fam.base == "" {
				ce.Missing = append(ce.Missing, "base URL ("+EnvBaseURL+")")
			}
			keyMissing(fam.needsKey)
			cfg.BaseURL = fam.base
		}
		build = func() (Provider, error) { return newOpenAI(cfg), nil }
	}
	if len(ce.Missing) > 0 || len(ce.Invalid) > 0 {
		return nil, ce
	}
	return build()
}

// settings are the resolved knobs shared by every adapter.
type settings struct {
	provider   string
	model      string
	timeout    time.Duration
	maxRetries int
	logger     *slog.Logger
	// backoff bounds; tests shorten them.
	backoffBase time.Duration
	backoffMax  time.Duration
	// maxRetryAfter is the longest Retry-After the client will wait; asked
	// to wait longer, it gives up at once.
	maxRetryAfter time.Duration
}

func newSettings(cfg Config) settings {
	s := settings{
		provider:      cfg.Provider,
		model:         cfg.Model,
		timeout:       cfg.Timeout,
		maxRetries:    cfg.MaxRetries,
		logger:        cfg.Logger,
		backoffBase:   500 * time.Millisecond,
		backoffMax:    20 * time.Second,
		maxRetryAfter: 2 * time.Minute,
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	switch {
	case s.maxRetries == 0:
		s.maxRetries = DefaultMaxRetries
	case s.maxRetries < 0:
		s.maxRetries = 0
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}

const redacted = "[redacted]"

func maskKey(k string) string {
	if k == "" {
		return `""`
	}
	return redacted
}

// redactURL hides a password in a URL's user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// String describes cfg without its API key.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{Provider:%q BaseURL:%q Model:%q Region:%q APIKey:%s Timeout:%s MaxRetries:%d}",
		c.Provider, redactURL(c.BaseURL), c.Model, c.Region, maskKey(c.APIKey), c.Timeout, c.MaxRetries)
}

// Format prints String for every verb, so that %v, %+v and %#v never show
// the key.
func (c Config) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue logs cfg without its API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("base_url", redactURL(c.BaseURL)),
		slog.String("model", c.Model),
		slog.String("region", c.Region),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_retries", c.MaxRetries),
	)
}

// MarshalJSON encodes cfg without its API key and with any password in the
// base URL redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	type shown struct {
		Provider   string
		BaseURL    string
		Model      string
		Region     string
		APIKeySet  bool
		Timeout    time.Duration
		MaxRetries int
	}
	return json.Marshal(shown{c.Provider, redactURL(c.BaseURL), c.Model, c.Region, c.APIKey != "", c.Timeout, c.MaxRetries})
}
