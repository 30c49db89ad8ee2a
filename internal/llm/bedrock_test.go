package llm

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

const bedrockModel = "anthropic.claude-3-5-sonnet-20240620-v1:0"

// bedrockEnv isolates the AWS default credential chain: static test
// credentials from the environment, no profile files, no instance metadata.
func bedrockEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY":       "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "",
		"AWS_DEFAULT_REGION":          "",
		"AWS_BEARER_TOKEN_BEDROCK":    "",
		"AWS_ENDPOINT_URL":            "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}

func bedrockConfig(base string) Config {
	return Config{Provider: "bedrock", BaseURL: base, Model: bedrockModel, Region: "eu-west-3", Timeout: 5 * time.Second}
}

var sigV4Scope = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/([a-z0-9-]+)/bedrock/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$`)

func TestBedrockJudgeForcesVerdictToolThroughConverse(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json", "X-Amzn-Requestid", "9f8e7d6c-5b4a-3c2d-1e0f-a9b8c7d6e5f4")
	})
	v, err := newTestProvider(t, bedrockConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != ActionTrust || v.Reason == "" || len(v.Evidence) != 0 {
		t.Errorf("verdict = %+v", v)
	}

	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" {
		t.Errorf("sent %s %s", r.Method, r.Path)
	}
	m := sigV4Scope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[1] != "eu-west-3" {
		t.Errorf("Authorization = %q, want SigV4 for bedrock in eu-west-3", r.Header.Get("Authorization"))
	}
	body := r.decode(t)
	wantToolConfig := map[string]any{
		"toolChoice": map[string]any{"tool": map[string]any{"name": "verdict"}},
		"tools": []any{map[string]any{"toolSpec": map[string]any{
			"name":        "verdict",
			"description": verdictToolDescription,
			"inputSchema": map[string]any{"json": verdictSchema()},
		}}},
	}
	if !jsonEqual(t, body["toolConfig"], wantToolConfig) {
		t.Errorf("toolConfig = %v", body["toolConfig"])
	}
	if !jsonEqual(t, body["system"], []any{map[string]any{"text": JudgeInstructions}}) {
		t.Errorf("system = %v", body["system"])
	}
	wantMsgs := []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": judgePrompt}}}}
	if !jsonEqual(t, body["messages"], wantMsgs) {
		t.Errorf("messages = %v", body["messages"])
	}
	if !jsonEqual(t, body["inferenceConfig"], map[string]any{"maxTokens": bedrockMaxTokens}) {
		t.Errorf("inferenceConfig = %v", body["inferenceConfig"])
	}
}

func TestBedrockRegionDefaultsToUSEast1(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	cfg := bedrockConfig(srv.URL)
	cfg.Region = ""
	if _, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	m := sigV4Scope.FindStringSubmatch(srv.requests()[0].Header.Get("Authorization"))
	if m == nil || m[1] != "us-east-1" {
		t.Errorf("Authorization = %q, want the us-east-1 scope", srv.requests()[0].Header.Get("Authorization"))
	}
}

func TestBedrockAPIKeyIsSentAsBearerToken(t *testing.T) {
	bedrockEnv(t)
	// The SDK sends a bearer token over HTTPS only.
	srv := newFakeTLSProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	cfg := bedrockConfig(srv.URL)
	cfg.APIKey = testKey
	cfg.HTTPClient = srv.Client()
	if _, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the Bedrock API key as a bearer token", got)
	}
}

func TestBedrockGuessSendsNConverseCallsAtExactTemperature(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		time.Sleep(80 * time.Millisecond)
		respond(t, w, 200, "bedrock/converse_text.json")
	})
	got, err := newTestProvider(t, bedrockConfig(srv.URL)).Candidates(context.Background(), guessPrompt, 5, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0] != "modernc.org/sqlite" {
		t.Fatalf("candidates = %q", got)
	}
	reqs := srv.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (Converse has no n)", len(reqs))
	}
	for _, r := range reqs {
		mustContain(t, r.Body, `"temperature":0.7`)
		body := r.decode(t)
		if _, ok := body["toolConfig"]; ok {
			t.Errorf("candidate request carries toolConfig")
		}
		if !jsonEqual(t, body["system"], []any{map[string]any{"text": CandidateInstructions}}) {
			t.Errorf("system = %v", body["system"])
		}
	}
	if m := srv.maxInFlight.Load(); m > maxInFlight || m < 2 {
		t.Errorf("max in flight = %d, want concurrent calls bounded by %d", m, maxInFlight)
	}
}

func TestBedrockJudgeUnusableAnswers(t *testing.T) {
	bedrockEnv(t)
	for _, file := range []string{
		"bedrock/converse_tool_use_hedge.json",
		"bedrock/converse_max_tokens.json",
		"bedrock/converse_text.json",
	} {
		t.Run(file, func(t *testing.T) {
			srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				respond(t, w, 200, file)
			})
			_, err := newTestProvider(t, bedrockConfig(srv.URL)).Judge(context.Background(), judgePrompt)
			if !errors.Is(err, ErrUnusableVerdict) || errors.Is(err, ErrProvider) {
				t.Fatalf("Judge = %v, want ErrUnusableVerdict only", err)
			}
		})
	}
}

func TestBedrockRetriesThrottlingThenSucceeds(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if i == 0 {
			respond(t, w, 429, "bedrock/error_throttling.json",
				"X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
				"X-Amzn-Requestid", "c3a1b2d4-0000-4e5f-8a9b-1c2d3e4f5a6b")
			return
		}
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	if _, err := newTestProvider(t, bedrockConfig(srv.URL)).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (the SDK's own retries must be off)", n)
	}
}

func TestBedrockGivesUpAfterMaxRetries(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 503, "bedrock/error_service_unavailable.json",
			"X-Amzn-Errortype", "ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/",
			"X-Amzn-Requestid", "5e6f7a8b-1111-4c2d-9e0f-a1b2c3d4e5f6")
	})
	cfg := bedrockConfig(srv.URL)
	cfg.MaxRetries = 2
	_, err := newTestProvider(t, cfg).Judge(context.Background(), judgePrompt)
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("Judge = %v, want *ProviderError", err)
	}
	if pe.StatusCode != 503 || pe.Type != "ServiceUnavailableException" || pe.RequestID != "5e6f7a8b-1111-4c2d-9e0f-a1b2c3d4e5f6" || pe.Attempts != 3 || pe.Message != "Bedrock is unable to process your request." {
		t.Errorf("error = %+v", *pe)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + MaxRetries)", n)
	}
}
