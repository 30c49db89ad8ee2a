package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func anthropicConfig(base string) Config {
	return Config{Provider: "anthropic", BaseURL: base, Model: "claude-sonnet-4-20250514", APIKey: testKey, Timeout: 5 * time.Second}
}

func TestAnthropicJudgeForcesVerdictToolCall(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "anthropic/judge_tool_use.json", "Request-Id", "req_011CSHoA1b2C3d4E5f6G7h8I")
	})
	v, err := newTestProvider(t, anthropicConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	if err != nil {
		t.Fatal(err)
	}
	want := Verdict{Action: ActionDismiss, Evidence: []string{"https://www.sqlite.org/wal.html", "doi:10.14778/3554821.3554842"}}
	if !jsonEqual(t, v, want) {
		t.Errorf("verdict = %+v, want %+v", v, want)
	}

	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("sent %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	for h, want := range map[string]string{
		"X-Api-Key":         testKey,
		"Anthropic-Version": "2023-06-01",
		"Content-Type":      "application/json",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q; Anthropic takes the key in x-api-key only", h)
	}
	body := r.decode(t)
	if body["model"] != "claude-sonnet-4-20250514" || body["system"] != JudgeInstructions {
		t.Errorf("model = %v, system = %v", body["model"], body["system"])
	}
	if mt, ok := body["max_tokens"].(float64); !ok || mt < 1 {
		t.Errorf("max_tokens = %v", body["max_tokens"])
	}
	if !jsonEqual(t, body["messages"], []any{map[string]any{"role": "user", "content": judgePrompt}}) {
		t.Errorf("messages = %v", body["messages"])
	}
	wantTools := []any{map[string]any{
		"name":         "verdict",
		"description":  verdictToolDescription,
		"input_schema": verdictSchema(),
	}}
	if !jsonEqual(t, body["tools"], wantTools) {
		t.Errorf("tools = %v", body["tools"])
	}
	if !jsonEqual(t, body["tool_choice"], map[string]any{"type": "tool", "name": "verdict"}) {
		t.Errorf("tool_choice = %v, want the verdict tool forced", body["tool_choice"])
	}
	if _, ok := body["temperature"]; ok {
		t.Errorf("judge request carries temperature")
	}
}

func TestAnthropicJudgeUnusableAnswers(t *testing.T) {
	for _, file := range []string{
		"anthropic/judge_tool_use_hedge.json",
		"anthropic/judge_dismiss_bad_evidence.json",
		"anthropic/judge_text_only.json",
	} {
		t.Run(file, func(t *testing.T) {
			srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				respond(t, w, 200, file)
			})
			_, err := newTestProvider(t, anthropicConfig(srv.URL)).Judge(context.Background(), judgePrompt)
			if !errors.Is(err, ErrUnusableVerdict) || errors.Is(err, ErrProvider) {
				t.Fatalf("Judge = %v, want ErrUnusableVerdict only", err)
			}
		})
	}
}

func TestAnthropicGuessSendsNConcurrentRequestsAtExactTemperature(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		time.Sleep(80 * time.Millisecond)
		respond(t, w, 200, "anthropic/candidate_text.json")
	})
	got, err := newTestProvider(t, anthropicConfig(srv.URL+"/v1")).Candidates(context.Background(), guessPrompt, 6, 0.35)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d candidates, want 6", len(got))
	}
	for _, c := range got {
		if c != "modernc.org/sqlite" {
			t.Errorf("candidate %q, want the trimmed text block", c)
		}
	}
	reqs := srv.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6 (Messages has no n)", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/messages" {
			t.Errorf("path = %q", r.Path)
		}
		mustContain(t, r.Body, `"temperature":0.35`)
		body := r.decode(t)
		if _, ok := body["n"]; ok {
			t.Errorf("request carries n")
		}
		if _, ok := body["tools"]; ok {
			t.Errorf("candidate request carries tools")
		}
		if body["system"] != CandidateInstructions {
			t.Errorf("system = %v", body["system"])
		}
	}
	if m := srv.maxInFlight.Load(); m > maxInFlight || m < 2 {
		t.Errorf("max in flight = %d, want concurrent requests bounded by %d", m, maxInFlight)
	}
}

func TestAnthropicRetriesOverloaded529(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i == 0 {
			respond(t, w, 529, "anthropic/error_529.json", "Request-Id", "req_011CSHoJ8ZkqG4sY1wXbV3Tn")
			return
		}
		respond(t, w, 200, "anthropic/judge_tool_use.json")
	})
	if _, err := newTestProvider(t, anthropicConfig(srv.URL)).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestAnthropicErrorCarriesTypeMessageAndRequestID(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 429, "anthropic/error_429.json", "Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy", "Retry-After", "0")
	})
	cfg := anthropicConfig(srv.URL)
	cfg.MaxRetries = 1
	_, err := newTestProvider(t, cfg).Candidates(context.Background(), guessPrompt, 1, 1)
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("Candidates = %v, want *ProviderError", err)
	}
	if pe.StatusCode != 429 || pe.Type != "rate_limit_error" || pe.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" || pe.Attempts != 2 || pe.Op != "candidates" || pe.Provider != "anthropic" {
		t.Errorf("error = %+v", *pe)
	}
	if !errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnusableCandidates) {
		t.Errorf("%v: want ErrRateLimited, not unusable", err)
	}
}
