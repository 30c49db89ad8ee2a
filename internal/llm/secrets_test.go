package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// renderings collects every way a value can reach a log line or a terminal.
func renderings(v any) []string {
	out := []string{
		fmt.Sprint(v),
		fmt.Sprintf("%v", v),
		fmt.Sprintf("%+v", v),
		fmt.Sprintf("%#v", v),
		fmt.Sprintf("%s", v),
		fmt.Sprintf("%q", v),
	}
	if s, ok := v.(fmt.Stringer); ok {
		out = append(out, s.String())
	}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b))
	}
	return out
}

func errorRenderings(err error) []string {
	var out []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		out = append(out, renderings(e)...)
		out = append(out, e.Error())
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		out = append(out, fmt.Sprintf("%+v", *pe), fmt.Sprintf("%#v", *pe), pe.Message, pe.Type)
	}
	return out
}

func TestAPIKeyNeverAppearsInErrorsLogsOrStrings(t *testing.T) {
	bedrockEnv(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	type provoke struct {
		name    string
		cfg     func(base string) Config
		tls     bool
		handler func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int)
		call    func(p Provider) error
	}
	judge := func(p Provider) error { _, err := p.Judge(context.Background(), judgePrompt); return err }
	guess := func(p Provider) error { _, err := p.Candidates(context.Background(), guessPrompt, 3, 0.7); return err }
	echo401 := func(file string) func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int) {
		return func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int) {
			return func(w http.ResponseWriter, r *http.Request, _ int) { respond(t, w, 401, file) }
		}
	}
	busy := func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			// A broken proxy that echoes the key header in a 503.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprintf(w, `{"error":{"message":"upstream rejected Authorization %s","type":"%s","code":null}}`, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	}
	hang := func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) { blockUntilGone(r) }
	}
	bedrockEcho := func(t *testing.T) func(w http.ResponseWriter, r *http.Request, i int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(403)
			fmt.Fprintf(w, `{"message":"Invalid API key %s"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}
	}
	withKey := func(f func(string) Config) func(string) Config {
		return func(base string) Config { c := f(base); c.APIKey = testKey; c.Logger = logger; return c }
	}
	cases := []provoke{
		{"openai 401 echoing the key", withKey(openAIConfig), false, echo401("openai/error_401_echo.json"), judge},
		{"openai 503 echoing the header, retried", withKey(openAIConfig), false, busy, guess},
		{"anthropic 401 echoing the key", withKey(anthropicConfig), false, echo401("anthropic/error_401_echo.json"), judge},
		{"anthropic 503 echoing the header, retried", withKey(anthropicConfig), false, busy, guess},
		{"anthropic timeout", func(base string) Config {
			c := withKey(anthropicConfig)(base)
			c.Timeout = 100 * time.Millisecond
			return c
		}, false, hang, judge},
		{"bedrock 403 echoing the API key", withKey(bedrockConfig), true, bedrockEcho, judge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var srv *fakeProvider
			if c.tls {
				srv = newFakeTLSProvider(t, c.handler(t))
			} else {
				srv = newFakeProvider(t, c.handler(t))
			}
			cfg := c.cfg(srv.URL)
			if c.tls {
				cfg.HTTPClient = srv.Client()
			}
			p := newTestProvider(t, cfg)
			err := c.call(p)
			if err == nil {
				t.Fatal("no error provoked")
			}
			// The test is only meaningful if the key went out on the wire.
			reqs := srv.requests()
			if len(reqs) == 0 {
				t.Fatal("no request reached the server")
			}
			h := reqs[0].Header
			if !strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), testKey) {
				t.Fatalf("the key was not sent: %v", h)
			}
			for _, s := range append(append(errorRenderings(err), renderings(p)...), renderings(cfg)...) {
				if strings.Contains(s, testKey) {
					t.Errorf("key leaked: %s", s)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("no retry was logged, so the log check proves nothing:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), testKey) {
		t.Errorf("key leaked into the logs:\n%s", logs.String())
	}
}

func TestConfigNeverPrintsItsKey(t *testing.T) {
	cfg := Config{Provider: "openai", BaseURL: "https://user:hunter2@proxy.example.com/v1", Model: "gpt-4o", APIKey: testKey}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("configured", "llm", cfg)
	all := append(renderings(cfg), logs.String(), fmt.Sprintf("%v", &cfg), fmt.Sprintf("%+v", []Config{cfg}))
	for _, s := range all {
		if strings.Contains(s, testKey) || strings.Contains(s, "hunter2") {
			t.Errorf("secret leaked: %s", s)
		}
	}
	if !strings.Contains(cfg.String(), redacted) || !strings.Contains(logs.String(), `"api_key_set":true`) {
		t.Errorf("String %q / log %q should say a key is set", cfg.String(), logs.String())
	}
	if strings.Contains(Config{}.String(), redacted) {
		t.Errorf("an empty key is not redacted, it is absent: %s", Config{})
	}
}

func TestScrubKeyErrKeepsCancellation(t *testing.T) {
	err := scrubKeyErr(fmt.Errorf("dial with %s: %w", testKey, context.Canceled), testKey)
	if strings.Contains(err.Error(), testKey) || !errors.Is(err, context.Canceled) {
		t.Errorf("scrubKeyErr = %v (canceled: %v)", err, errors.Is(err, context.Canceled))
	}
	plain := errors.New("connection refused")
	if scrubKeyErr(plain, testKey) != plain {
		t.Errorf("an error without the key must be kept as is")
	}
}
