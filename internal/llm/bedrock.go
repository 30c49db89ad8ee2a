package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// bedrockMaxTokens bounds each answer.
const bedrockMaxTokens = 1024

// bedrockCredentialProcess is the AWS CLI command the adapter asks for
// credentials when neither a Bedrock API key nor the environment's access
// keys are set: the CLI resolves the whole default chain (profiles, SSO,
// assumed roles, instance and container credentials) and prints them in
// the credential_process format the SDK's processcreds reads.
const bedrockCredentialProcess = "aws configure export-credentials --format process"

// bedrock speaks Amazon Bedrock's Converse API as JSON over net/http, signed
// with the AWS SDK's SigV4 signer (or sent with a Bedrock API key as a
// bearer token). It does not link the SDK's service clients or its config
// loader: their package initialisation alone cost every CLI start about
// 1.8 ms (docs/design.md#decisions). The shared retry policy applies, as for
// the other HTTP adapters.
type bedrock struct {
	http     httpJSON
	region   string
	endpoint string
	creds    aws.CredentialsProvider // nil with an API key
	signer   *v4.Signer
	now      func() time.Time
}

func newBedrock(cfg Config) (*bedrock, error) {
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	endpoint := strings.TrimRight(cfg.BaseURL, "/")
	if endpoint == "" {
		endpoint = "https://bedrock-runtime." + region + ".amazonaws.com"
	}
	p := &bedrock{region: region, endpoint: endpoint, signer: v4.NewSigner(), now: time.Now}
	p.http = httpJSON{
		settings: newSettings(cfg),
		client:   clientOf(cfg),
		key:      cfg.APIKey,
		headers:  func(h http.Header) { h.Del("Accept") }, // as the SDK: Converse answers JSON
		errorBody: func(body []byte) (string, string) {
			var e struct {
				Type    string `json:"__type"`
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(body, &e)
			return sanitizeAWSErrorCode(e.Type + e.Code), e.Message
		},
		errorType:        func(h http.Header) string { return sanitizeAWSErrorCode(h.Get("X-Amzn-Errortype")) },
		requestIDHeaders: []string{"X-Amzn-Requestid"},
	}
	switch {
	case cfg.APIKey != "":
		// A Bedrock API key is a bearer token: like the SDK, send it over
		// HTTPS only.
		if u, err := url.Parse(endpoint); err != nil || u.Scheme != "https" {
			return nil, &ConfigError{Invalid: []string{"base URL " + redactURL(endpoint) + " (a Bedrock API key is sent over https only)"}}
		}
		key := cfg.APIKey
		p.http.sign = func(req *http.Request, _ []byte) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}
	case os.Getenv("AWS_ACCESS_KEY_ID") != "" && os.Getenv("AWS_SECRET_ACCESS_KEY") != "":
		p.creds = credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	default:
		// Resolved on the first request, as the SDK's chain was.
		p.creds = aws.NewCredentialsCache(processcreds.NewProvider(bedrockCredentialProcess))
	}
	if p.creds != nil {
		p.http.sign = p.sigV4
	}
	return p, nil
}

// sigV4 signs one attempt's request for the bedrock service in p.region.
func (p *bedrock) sigV4(req *http.Request, payload []byte) error {
	creds, err := p.creds.Retrieve(req.Context())
	if err != nil {
		return &ProviderError{Message: "no AWS credentials (give a Bedrock API key in " + EnvAPIKey + " or AWS_BEARER_TOKEN_BEDROCK, " +
			"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or install the aws CLI for profiles and SSO): " + err.Error()}
	}
	sum := sha256.Sum256(payload)
	return p.signer.SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), "bedrock", p.region, p.now())
}

// sanitizeAWSErrorCode strips the namespace and URI the wire adds to an
// error code ("ThrottlingException:http://internal.amazon.com/...").
func sanitizeAWSErrorCode(code string) string {
	code, _, _ = strings.Cut(code, ":")
	if i := strings.Index(code, "#"); i >= 0 {
		code = code[i+1:]
	}
	return code
}

func (p *bedrock) Name() string { return p.http.provider }

// String describes the provider without its key.
func (p *bedrock) String() string {
	return fmt.Sprintf("llm.Provider{%s model=%q region=%q endpoint=%q}", p.http.provider, p.http.model, p.region, redactURL(p.endpoint))
}

// Format prints String for every verb.
func (p *bedrock) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

// The Converse wire format: the parts of its request and response the
// adapter uses.
type (
	converseText struct {
		Text string `json:"text"`
	}
	converseRequest struct {
		System          []converseText `json:"system"`
		Messages        []converseMsg  `json:"messages"`
		InferenceConfig converseInfer  `json:"inferenceConfig"`
		ToolConfig      *converseTools `json:"toolConfig,omitempty"`
	}
	converseMsg struct {
		Role    string         `json:"role"`
		Content []converseText `json:"content"`
	}
	converseInfer struct {
		MaxTokens   int      `json:"maxTokens"`
		Temperature *float32 `json:"temperature,omitempty"`
	}
	converseTools struct {
		Tools      []converseTool `json:"tools"`
		ToolChoice converseChoice `json:"toolChoice"`
	}
	converseTool struct {
		ToolSpec struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				JSON map[string]any `json:"json"`
			} `json:"inputSchema"`
		} `json:"toolSpec"`
	}
	converseChoice struct {
		Tool struct {
			Name string `json:"name"`
		} `json:"tool"`
	}
	converseResponse struct {
		Output struct {
			Message *struct {
				Content []struct {
					Text    *string `json:"text"`
					ToolUse *struct {
						Name  string          `json:"name"`
						Input json.RawMessage `json:"input"`
					} `json:"toolUse"`
				} `json:"content"`
			} `json:"message"`
		} `json:"output"`
		StopReason string `json:"stopReason"`
	}
)

func (p *bedrock) input(system, prompt string) converseRequest {
	return converseRequest{
		System:          []converseText{{Text: system}},
		Messages:        []converseMsg{{Role: "user", Content: []converseText{{Text: prompt}}}},
		InferenceConfig: converseInfer{MaxTokens: bedrockMaxTokens},
	}
}

// converse sends one Converse request under the shared retry policy.
func (p *bedrock) converse(ctx context.Context, op string, in converseRequest) (converseResponse, error) {
	var out converseResponse
	url := p.endpoint + "/model/" + httpbinding.EscapePath(p.http.model, true) + "/converse"
	raw, err := p.http.post(ctx, op, url, in)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, unusable(p.Name(), op, "the response is not Converse JSON")
	}
	return out, nil
}

// Judge forces a call of the verdict tool (toolChoice "tool") and reads the
// verdict from the tool input.
func (p *bedrock) Judge(ctx context.Context, prompt string) (Verdict, error) {
	if strings.TrimSpace(prompt) == "" {
		return Verdict{}, invalidArgument("empty prompt")
	}
	in := p.input(JudgeInstructions, prompt)
	tool := converseTool{}
	tool.ToolSpec.Name, tool.ToolSpec.Description = verdictToolName, verdictToolDescription
	tool.ToolSpec.InputSchema.JSON = verdictSchema()
	in.ToolConfig = &converseTools{Tools: []converseTool{tool}}
	in.ToolConfig.ToolChoice.Tool.Name = verdictToolName
	out, err := p.converse(ctx, opJudge, in)
	if err != nil {
		return Verdict{}, err
	}
	if out.StopReason == "max_tokens" {
		return Verdict{}, unusable(p.Name(), opJudge, "output cut off at the token limit")
	}
	if out.Output.Message == nil {
		return Verdict{}, unusable(p.Name(), opJudge, "response has no message")
	}
	for _, block := range out.Output.Message.Content {
		if block.ToolUse == nil || block.ToolUse.Name != verdictToolName {
			continue
		}
		if len(block.ToolUse.Input) == 0 || string(block.ToolUse.Input) == "null" {
			return Verdict{}, unusable(p.Name(), opJudge, "the %s tool call has no input", verdictToolName)
		}
		return parseVerdict(p.Name(), block.ToolUse.Input)
	}
	return Verdict{}, unusable(p.Name(), opJudge, "no %s tool call in the response (stopReason %q)", verdictToolName, out.StopReason)
}

// Candidates sends n concurrent Converse calls (at most maxInFlight in
// flight) with inferenceConfig.temperature set: Converse has no n.
func (p *bedrock) Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error) {
	if err := checkCandidateArgs(prompt, n, temperature); err != nil {
		return nil, err
	}
	return p.http.fanOut(ctx, n, func(ctx context.Context, _ int) (string, error) {
		in := p.input(CandidateInstructions, prompt)
		t := float32(temperature)
		in.InferenceConfig.Temperature = &t
		out, err := p.converse(ctx, opCandidates, in)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		if out.Output.Message != nil {
			for _, block := range out.Output.Message.Content {
				if block.Text != nil {
					b.WriteString(*block.Text)
				}
			}
		}
		text := strings.TrimSpace(b.String())
		if text == "" {
			return "", unusable(p.Name(), opCandidates, "a response had no text (stopReason %q)", out.StopReason)
		}
		return text, nil
	})
}

// compile-time checks
var (
	_ Provider = (*openAI)(nil)
	_ Provider = (*anthropic)(nil)
	_ Provider = (*bedrock)(nil)
)
