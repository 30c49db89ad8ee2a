package llm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

const judgePrompt = "Verify claim:01HX05A9K8VP: \"Since Go 1.22 each loop iteration has its own variable.\" Run dont dismiss with evidence or dont trust with a reason."

const guessPrompt = "Which pure-Go SQLite driver should dont embed?"

func openAIConfig(base string) Config {
	return Config{Provider: "openai", BaseURL: base, Model: "gpt-4o-2024-08-06", APIKey: testKey, Timeout: 5 * time.Second}
}

func TestOpenAIJudgeSendsStrictJSONSchemaAndReturnsVerdict(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "openai/judge_dismiss.json", "X-Request-Id", "req_5b1e0c7d8f")
	})
	p := newTestProvider(t, openAIConfig(srv.URL))

	v, err := p.Judge(context.Background(), judgePrompt)
	if err != nil {
		t.Fatal(err)
	}
	want := Verdict{Action: ActionDismiss, Evidence: []string{
		"https://go.dev/ref/spec#For_statements_with_range_clause",
		"https://go.dev/blog/loopvar-preview",
	}, Reason: "Since Go 1.22 each iteration of a for loop has its own variable, as the spec and the loopvar post state."}
	if !jsonEqual(t, v, want) {
		t.Errorf("verdict = %+v, want %+v", v, want)
	}

	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("sent %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	body := r.decode(t)
	if body["model"] != "gpt-4o-2024-08-06" {
		t.Errorf("model = %v", body["model"])
	}
	wantMsgs := []any{
		map[string]any{"role": "system", "content": JudgeInstructions},
		map[string]any{"role": "user", "content": judgePrompt},
	}
	if !jsonEqual(t, body["messages"], wantMsgs) {
		t.Errorf("messages = %v", body["messages"])
	}
	wantFormat := map[string]any{
		"type": "json_schema",
		"json_schema": map[string]any{
			"name":        "verdict",
			"description": verdictToolDescription,
			"strict":      true,
			"schema":      verdictSchema(),
		},
	}
	if !jsonEqual(t, body["response_format"], wantFormat) {
		t.Errorf("response_format = %v", body["response_format"])
	}
	schema := body["response_format"].(map[string]any)["json_schema"].(map[string]any)["schema"].(map[string]any)
	if schema["additionalProperties"] != false || len(schema["required"].([]any)) != 3 {
		t.Errorf("strict schema must require every property and forbid others: %v", schema)
	}
	for _, k := range []string{"n", "temperature"} {
		if _, ok := body[k]; ok {
			t.Errorf("judge request carries %q", k)
		}
	}
}

func TestOpenAIJudgeTrustWithSpecificReason(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "openai/judge_trust.json")
	})
	v, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != ActionTrust || len(v.Evidence) != 0 || v.Reason == "" {
		t.Errorf("verdict = %+v", v)
	}
}

func TestOpenAIJudgeUnusableAnswers(t *testing.T) {
	cases := []struct {
		name, file string
		body       string
	}{
		{name: "hedge-only trust reason", file: "openai/judge_trust_hedge.json"},
		{name: "prose instead of the schema", file: "openai/judge_malformed.json"},
		{name: "refusal", file: "openai/judge_refusal.json"},
		{name: "body is not a chat completion", body: "<html><body>502 Bad Gateway</body></html>"},
		{name: "no choices", body: `{"id":"chatcmpl-1","object":"chat.completion","created":1745601284,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				if c.file != "" {
					respond(t, w, 200, c.file)
					return
				}
				w.WriteHeader(200)
				_, _ = w.Write([]byte(c.body))
			})
			_, err := newTestProvider(t, openAIConfig(srv.URL)).Judge(context.Background(), judgePrompt)
			if !errors.Is(err, ErrUnusableVerdict) {
				t.Fatalf("Judge = %v, want ErrUnusableVerdict", err)
			}
			if errors.Is(err, ErrProvider) {
				t.Errorf("an unusable verdict must not match ErrProvider: %v", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests: an unusable verdict must not be retried", n)
			}
		})
	}
}

func TestOpenAIGuessSendsExactNAndTemperatureInOneRequest(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "openai/candidates_vllm_n3.json")
	})
	cfg := openAIConfig(srv.URL + "/v1/")
	cfg.Provider, cfg.APIKey, cfg.Model = "vllm", "", "Qwen/Qwen2.5-7B-Instruct"
	got, err := newTestProvider(t, cfg).Candidates(context.Background(), guessPrompt, 3, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modernc.org/sqlite", "modernc.org/sqlite", "github.com/ncruces/go-sqlite3"}
	if !slices.Equal(got, want) {
		t.Errorf("candidates = %q, want %q", got, want)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want one request carrying n", len(reqs))
	}
	if reqs[0].Path != "/v1/chat/completions" {
		t.Errorf("path = %q (a base ending in /v1 must not double it)", reqs[0].Path)
	}
	if h := reqs[0].Header.Get("Authorization"); h != "" {
		t.Errorf("no key configured, but Authorization = %q", h)
	}
	mustContain(t, reqs[0].Body, `"n":3`, `"temperature":0.7`)
	body := reqs[0].decode(t)
	if body["n"] != 3.0 || body["temperature"] != 0.7 {
		t.Errorf("n = %v, temperature = %v", body["n"], body["temperature"])
	}
	if _, ok := body["response_format"]; ok {
		t.Errorf("candidates request carries response_format")
	}
	msgs := body["messages"].([]any)
	if msgs[0].(map[string]any)["content"] != CandidateInstructions || msgs[1].(map[string]any)["content"] != guessPrompt {
		t.Errorf("messages = %v", msgs)
	}
}

func TestOpenAIGuessSendsTemperatureZero(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "openai/candidates_ollama_single.json")
	})
	if _, err := newTestProvider(t, openAIConfig(srv.URL)).Candidates(context.Background(), guessPrompt, 1, 0); err != nil {
		t.Fatal(err)
	}
	mustContain(t, srv.requests()[0].Body, `"n":1`, `"temperature":0`)
}

func TestOpenAIGuessTopsUpWhenServerIgnoresN(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i > 0 {
			time.Sleep(80 * time.Millisecond) // keep top-ups in flight together
		}
		respond(t, w, 200, "openai/candidates_ollama_single.json")
	})
	cfg := openAIConfig(srv.URL)
	cfg.Provider, cfg.APIKey, cfg.Model = "ollama", "", "llama3.2"
	got, err := newTestProvider(t, cfg).Candidates(context.Background(), guessPrompt, 9, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("%d candidates, want 9", len(got))
	}
	reqs := srv.requests()
	if len(reqs) != 9 {
		t.Fatalf("%d requests, want 1 with n=9 and 8 top-ups", len(reqs))
	}
	mustContain(t, reqs[0].Body, `"n":9`, `"temperature":0.7`)
	for _, r := range reqs[1:] {
		mustContain(t, r.Body, `"n":1`, `"temperature":0.7`)
	}
	if m := srv.maxInFlight.Load(); m > maxInFlight || m < 2 {
		t.Errorf("max in flight = %d, want concurrent top-ups bounded by %d", m, maxInFlight)
	}
}

func TestOpenAIGuessRejectsBadArguments(t *testing.T) {
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "openai/candidates_ollama_single.json")
	})
	p := newTestProvider(t, openAIConfig(srv.URL))
	for _, c := range []struct {
		prompt string
		n      int
		temp   float64
	}{{guessPrompt, 0, 0.7}, {guessPrompt, 3, -0.1}, {"  ", 3, 0.7}} {
		if _, err := p.Candidates(context.Background(), c.prompt, c.n, c.temp); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Candidates(%q, %d, %g) = %v, want ErrInvalidArgument", c.prompt, c.n, c.temp, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent for invalid arguments", n)
	}
}

func TestGuessWithoutUsableAnswersIsUnusable(t *testing.T) {
	empty := `{"id":"chatcmpl-483","object":"chat.completion","created":1745601702,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"message":{"role":"assistant","content":"  \n"},"finish_reason":"stop"}],"usage":{"prompt_tokens":61,"completion_tokens":1,"total_tokens":62}}`
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(empty))
	})
	cfg := openAIConfig(srv.URL)
	cfg.Provider = "ollama"
	_, err := newTestProvider(t, cfg).Candidates(context.Background(), guessPrompt, 2, 0.7)
	if !errors.Is(err, ErrUnusableCandidates) || errors.Is(err, ErrUnusableVerdict) || errors.Is(err, ErrProvider) {
		t.Fatalf("Candidates = %v, want ErrUnusableCandidates only", err)
	}
	// One request with n=2, then top-ups; the first unusable top-up cancels
	// the other, which may not have reached the server yet.
	if n := len(srv.requests()); n < 2 || n > 3 {
		t.Errorf("%d requests, want 1 with n=2 and at most 2 single top-ups", n)
	}
}
