package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/auth/bearer"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// bedrockMaxTokens bounds each answer.
const bedrockMaxTokens = 1024

// converser is the part of *bedrockruntime.Client the adapter uses.
type converser interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

// bedrock speaks Amazon Bedrock's Converse API through aws-sdk-go-v2. The
// SDK's own retries are off: the shared retry policy applies, as for the HTTP
// adapters.
type bedrock struct {
	settings
	client   converser
	region   string
	endpoint string
	key      string // Bedrock API key, when set; never formatted
}

func newBedrock(cfg Config) (*bedrock, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	// Loading resolves settings only: credentials are fetched lazily, on
	// the first request.
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, &ConfigError{Invalid: []string{"AWS configuration (" + scrubKey(err.Error(), cfg.APIKey) + ")"}}
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	key := cfg.APIKey
	client := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		o.Retryer = aws.NopRetryer{}
		if cfg.BaseURL != "" {
			o.BaseEndpoint = aws.String(strings.TrimRight(cfg.BaseURL, "/"))
		}
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		}
		if key != "" {
			o.BearerAuthTokenProvider = bearer.TokenProviderFunc(func(context.Context) (bearer.Token, error) {
				return bearer.Token{Value: key}, nil
			})
			o.AuthSchemePreference = []string{"httpBearerAuth"}
		}
	})
	return &bedrock{
		settings: newSettings(cfg),
		client:   client,
		region:   awsCfg.Region,
		endpoint: cfg.BaseURL,
		key:      key,
	}, nil
}

func (p *bedrock) Name() string { return p.provider }

// String describes the provider without its key.
func (p *bedrock) String() string {
	return fmt.Sprintf("llm.Provider{%s model=%q region=%q endpoint=%q}", p.provider, p.model, p.region, redactURL(p.endpoint))
}

// Format prints String for every verb.
func (p *bedrock) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

// converse runs one Converse call under the shared retry policy.
func (p *bedrock) converse(ctx context.Context, op string, in *bedrockruntime.ConverseInput) (*bedrockruntime.ConverseOutput, error) {
	var out *bedrockruntime.ConverseOutput
	err := p.retry(ctx, op, func(ctx context.Context) error {
		o, err := p.client.Converse(ctx, in)
		if err != nil {
			return p.providerError(err)
		}
		out = o
		return nil
	})
	return out, err
}

// providerError turns an SDK error into a *ProviderError carrying the HTTP
// status, Retry-After, error code, message and request id.
func (p *bedrock) providerError(err error) *ProviderError {
	pe := &ProviderError{}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		pe.StatusCode = re.HTTPStatusCode()
		if re.Response.Response != nil {
			pe.RetryAfter = parseRetryAfter(re.Response.Header, time.Now())
		}
	}
	var are *awshttp.ResponseError
	if errors.As(err, &are) {
		pe.RequestID = are.ServiceRequestID()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		pe.Type = scrubKey(api.ErrorCode(), p.key)
		pe.Message = scrubKey(api.ErrorMessage(), p.key)
	}
	if pe.StatusCode == 0 {
		pe.Err = scrubKeyErr(err, p.key)
	}
	return pe
}

func (p *bedrock) input(system, prompt string) *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String(p.model),
		System:  []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}},
		Messages: []types.Message{{
			Role:    types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: prompt}},
		}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(bedrockMaxTokens)},
	}
}

func bedrockContent(out *bedrockruntime.ConverseOutput) ([]types.ContentBlock, bool) {
	if out == nil {
		return nil, false
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return nil, false
	}
	return msg.Value.Content, true
}

// Judge forces a call of the verdict tool (toolChoice "tool") and reads the
// verdict from the tool input.
func (p *bedrock) Judge(ctx context.Context, prompt string) (Verdict, error) {
	if strings.TrimSpace(prompt) == "" {
		return Verdict{}, invalidArgument("empty prompt")
	}
	in := p.input(JudgeInstructions, prompt)
	in.ToolConfig = &types.ToolConfiguration{
		Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name:        aws.String(verdictToolName),
			Description: aws.String(verdictToolDescription),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(verdictSchema())},
		}}},
		ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(verdictToolName)}},
	}
	out, err := p.converse(ctx, opJudge, in)
	if err != nil {
		return Verdict{}, err
	}
	if out.StopReason == types.StopReasonMaxTokens {
		return Verdict{}, unusable(p.Name(), opJudge, "output cut off at the token limit")
	}
	content, ok := bedrockContent(out)
	if !ok {
		return Verdict{}, unusable(p.Name(), opJudge, "response has no message")
	}
	for _, block := range content {
		use, ok := block.(*types.ContentBlockMemberToolUse)
		if !ok || aws.ToString(use.Value.Name) != verdictToolName {
			continue
		}
		if use.Value.Input == nil {
			return Verdict{}, unusable(p.Name(), opJudge, "the %s tool call has no input", verdictToolName)
		}
		raw, err := use.Value.Input.MarshalSmithyDocument()
		if err != nil {
			return Verdict{}, unusable(p.Name(), opJudge, "the %s tool input is unreadable", verdictToolName)
		}
		return parseVerdict(p.Name(), raw)
	}
	return Verdict{}, unusable(p.Name(), opJudge, "no %s tool call in the response (stopReason %q)", verdictToolName, out.StopReason)
}

// Candidates sends n concurrent Converse calls (at most maxInFlight in
// flight) with inferenceConfig.temperature set: Converse has no n.
func (p *bedrock) Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error) {
	if err := checkCandidateArgs(prompt, n, temperature); err != nil {
		return nil, err
	}
	return p.fanOut(ctx, n, func(ctx context.Context, _ int) (string, error) {
		in := p.input(CandidateInstructions, prompt)
		in.InferenceConfig.Temperature = aws.Float32(float32(temperature))
		out, err := p.converse(ctx, opCandidates, in)
		if err != nil {
			return "", err
		}
		content, _ := bedrockContent(out)
		var b strings.Builder
		for _, block := range content {
			if t, ok := block.(*types.ContentBlockMemberText); ok {
				b.WriteString(t.Value)
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
