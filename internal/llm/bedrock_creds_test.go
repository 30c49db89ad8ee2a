package llm

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBedrockSignsWithWhatTheAWSCLIResolves: with neither a Bedrock API key
// nor access keys in the environment, the adapter asks the aws CLI for the
// default chain's credentials (profiles, SSO, roles) in the
// credential_process format, and signs with them, session token included.
func TestBedrockSignsWithWhatTheAWSCLIResolves(t *testing.T) {
	bedrockEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "dev-sso")
	bin := t.TempDir()
	argsFile := filepath.Join(bin, "args")
	script := "#!/bin/sh\necho \"$AWS_PROFILE $*\" > " + argsFile + "\n" +
		`echo '{"Version":1,"AccessKeyId":"AKIDFROMCLI","SecretAccessKey":"cli-secret","SessionToken":"cli-session"}'` + "\n"
	if err := os.WriteFile(filepath.Join(bin, "aws"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	if _, err := newTestProvider(t, bedrockConfig(srv.URL)).Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	h := srv.requests()[0].Header
	if a := h.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDFROMCLI/") || !strings.Contains(a, "/eu-west-3/bedrock/aws4_request") {
		t.Errorf("Authorization = %q, want SigV4 with the CLI's access key", a)
	}
	if got := h.Get("X-Amz-Security-Token"); got != "cli-session" {
		t.Errorf("X-Amz-Security-Token = %q, want the CLI's session token", got)
	}
	args, _ := os.ReadFile(argsFile)
	if got := strings.TrimSpace(string(args)); got != "dev-sso configure export-credentials --format process" {
		t.Errorf("aws was run as %q, want the profile's export-credentials", got)
	}
}

// TestBedrockWithoutAnyCredentialsFailsBeforeSending: no API key, no access
// keys and no aws CLI fail the call — as the SDK's chain did, on the first
// request — with a provider error that names every way to give
// credentials, and nothing is sent unsigned.
func TestBedrockWithoutAnyCredentialsFailsBeforeSending(t *testing.T) {
	bedrockEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("PATH", t.TempDir())
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	_, err := newTestProvider(t, bedrockConfig(srv.URL)).Judge(context.Background(), judgePrompt)
	var pe *ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, ErrProvider) || !strings.Contains(err.Error(), "AWS_BEARER_TOKEN_BEDROCK") || !strings.Contains(err.Error(), "aws CLI") {
		t.Fatalf("Judge = %v, want a provider error naming the credential sources", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent without credentials", n)
	}
}

// TestBedrockAPIKeyOverPlainHTTPIsRefused: like the SDK, the adapter sends
// a Bedrock API key over https only.
func TestBedrockAPIKeyOverPlainHTTPIsRefused(t *testing.T) {
	bedrockEnv(t)
	cfg := bedrockConfig("http://127.0.0.1:1")
	cfg.APIKey = testKey
	_, err := New(cfg)
	if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("New = %v, want a ConfigError without the key", err)
	}
}
