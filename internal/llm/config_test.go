package llm

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestNewNamesMissingSettings(t *testing.T) {
	cases := []struct {
		name        string
		cfg         Config
		wantMissing []string
		wantInvalid int
	}{
		{"nothing set", Config{},
			[]string{"model (DONT_LLM_MODEL)", "provider (DONT_LLM_PROVIDER: openai, anthropic or bedrock)"}, 0},
		{"openai without model or key", Config{Provider: "openai"},
			[]string{"model (DONT_LLM_MODEL)", "API key (DONT_LLM_API_KEY or OPENAI_API_KEY)"}, 0},
		{"anthropic without key", Config{Provider: "anthropic", Model: "claude-sonnet-4-20250514"},
			[]string{"API key (DONT_LLM_API_KEY or ANTHROPIC_API_KEY)"}, 0},
		{"openai-compatible without base URL", Config{Provider: "openai-compatible", Model: "qwen2.5"},
			[]string{"base URL (DONT_LLM_BASE_URL)"}, 0},
		{"unknown provider", Config{Provider: "gemini", Model: "x"}, nil, 1},
		{"base URL without scheme", Config{Provider: "ollama", Model: "llama3.2", BaseURL: "localhost:11434"}, nil, 1},
		{"negative timeout", Config{Provider: "ollama", Model: "llama3.2", Timeout: -time.Second}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg)
			if p != nil {
				t.Errorf("New returned a provider with an error")
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New = %v, want ErrConfig", err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New error %T is not *ConfigError", err)
			}
			got := slices.Clone(ce.Missing)
			slices.Sort(got)
			want := slices.Clone(c.wantMissing)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("Missing = %q, want %q", got, want)
			}
			if len(ce.Invalid) != c.wantInvalid {
				t.Errorf("Invalid = %q, want %d entries", ce.Invalid, c.wantInvalid)
			}
		})
	}
}

func TestNewBuildsEachProvider(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cases := []struct {
		cfg  Config
		name string
	}{
		{Config{Provider: "openai", Model: "gpt-4o", APIKey: testKey}, "openai"},
		{Config{Provider: "OpenAI", Model: "local", BaseURL: "http://127.0.0.1:9/v1"}, "openai"},
		{Config{Provider: "ollama", Model: "llama3.2"}, "ollama"},
		{Config{Provider: "llama.cpp", Model: "any"}, "llamacpp"},
		{Config{Provider: "vllm", Model: "Qwen/Qwen2.5-7B-Instruct"}, "vllm"},
		{Config{Provider: "anthropic", Model: "claude-sonnet-4-20250514", APIKey: testKey}, "anthropic"},
		{Config{Provider: "bedrock", Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", Region: "eu-west-3"}, "bedrock"},
	}
	for _, c := range cases {
		p, err := New(c.cfg)
		if err != nil {
			t.Errorf("New(%v) = %v", c.cfg, err)
			continue
		}
		if p.Name() != c.name {
			t.Errorf("New(%v).Name() = %q, want %q", c.cfg, p.Name(), c.name)
		}
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	p, err := New(Config{Provider: "ollama", Model: "llama3.2"})
	if err != nil {
		t.Fatal(err)
	}
	o := p.(*openAI)
	if o.url != "http://localhost:11434/v1/chat/completions" {
		t.Errorf("url = %q", o.url)
	}
	s := settingsOf(p)
	if s.timeout != DefaultTimeout || s.maxRetries != DefaultMaxRetries {
		t.Errorf("timeout %s, retries %d; want defaults", s.timeout, s.maxRetries)
	}
	p, _ = New(Config{Provider: "ollama", Model: "llama3.2", MaxRetries: -1, Timeout: 5 * time.Second})
	if s := settingsOf(p); s.maxRetries != 0 || s.timeout != 5*time.Second {
		t.Errorf("timeout %s, retries %d; want 5s and 0", s.timeout, s.maxRetries)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	base := Config{Provider: "anthropic", Model: "claude-from-config", Timeout: 30 * time.Second, MaxRetries: 5}

	got := ConfigFromEnv(base, env(map[string]string{
		"ANTHROPIC_API_KEY": "ak-fallback",
	}))
	if got.Provider != "anthropic" || got.Model != "claude-from-config" || got.APIKey != "ak-fallback" || got.Timeout != 30*time.Second || got.MaxRetries != 5 {
		t.Errorf("fallback key: got %v (key set: %v)", got, got.APIKey != "")
	}

	got = ConfigFromEnv(base, env(map[string]string{
		"DONT_LLM_PROVIDER": "openai",
		"DONT_LLM_BASE_URL": "http://gpu-box:8000/v1",
		"DONT_LLM_MODEL":    "Qwen/Qwen2.5-7B-Instruct",
		"DONT_LLM_API_KEY":  "dont-key",
		"OPENAI_API_KEY":    "openai-key",
	}))
	if got.Provider != "openai" || got.BaseURL != "http://gpu-box:8000/v1" || got.Model != "Qwen/Qwen2.5-7B-Instruct" || got.APIKey != "dont-key" {
		t.Errorf("DONT_LLM_* must win: got %v, key %q", got, got.APIKey)
	}

	got = ConfigFromEnv(Config{Provider: "openai", APIKey: "config-key"}, env(map[string]string{"OPENAI_API_KEY": "openai-key"}))
	if got.APIKey != "config-key" {
		t.Errorf("a key from the base config must beat the provider's variable, got %q", got.APIKey)
	}

	got = ConfigFromEnv(Config{}, env(map[string]string{
		"DONT_LLM_PROVIDER": "ollama",
		"OPENAI_API_KEY":    "openai-key",
	}))
	if got.APIKey != "" {
		t.Errorf("OPENAI_API_KEY must not be sent to an ollama server, got %q", got.APIKey)
	}

	got = ConfigFromEnv(Config{Provider: "bedrock"}, env(map[string]string{
		"AWS_DEFAULT_REGION": "eu-central-1",
	}))
	if got.Region != "eu-central-1" {
		t.Errorf("bedrock region = %q, want AWS_DEFAULT_REGION", got.Region)
	}
	got = ConfigFromEnv(Config{Provider: "bedrock"}, env(map[string]string{
		"DONT_LLM_REGION":    "ap-northeast-1",
		"AWS_REGION":         "eu-west-1",
		"AWS_DEFAULT_REGION": "eu-central-1",
	}))
	if got.Region != "ap-northeast-1" {
		t.Errorf("bedrock region = %q, want DONT_LLM_REGION", got.Region)
	}
}

// Bedrock's host is built from the region; a region read from a file an
// agent wrote must not move it (and with it the person's credentials).
func TestARegionCannotMoveBedrocksHost(t *testing.T) {
	for _, region := range []string{"us-east-1.evil.example/", "evil.example#", "us-east-1 ", "a@b"} {
		_, err := New(Config{Provider: "bedrock", Model: "m", Region: region, APIKey: "k"})
		var ce *ConfigError
		if region == "us-east-1 " {
			if err != nil {
				t.Fatalf("a region with a trailing space is trimmed, got %v", err)
			}
			continue
		}
		if !errors.As(err, &ce) || len(ce.Invalid) == 0 {
			t.Fatalf("region %q: want an invalid setting, got %v", region, err)
		}
	}
	if _, err := New(Config{Provider: "bedrock", Model: "m", Region: "eu-west-3", APIKey: "k"}); err != nil {
		t.Fatalf("a real region: %v", err)
	}
}
