package llm

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// TestBedrockSendsWhatTheSDKClientSends holds the net/http adapter to the
// AWS SDK's own Converse client (linked by this test only): for the same
// judge and candidate calls both send the same method, escaped path,
// content type, signed headers and JSON body, so a signature the SDK's
// signer computes over either request is the same.
func TestBedrockSendsWhatTheSDKClientSends(t *testing.T) {
	bedrockEnv(t)
	srv := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		respond(t, w, 200, "bedrock/converse_tool_use.json")
	})
	ours := newTestProvider(t, bedrockConfig(srv.URL))
	if _, err := ours.Judge(context.Background(), judgePrompt); err != nil {
		t.Fatal(err)
	}
	if _, err := ours.Candidates(context.Background(), guessPrompt, 1, 0.7); err == nil {
		t.Fatal("a tool-use answer has no text: want an unusable candidate")
	}

	sdk := bedrockruntime.New(bedrockruntime.Options{
		Region:       "eu-west-3",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
		Retryer:      aws.NopRetryer{},
	})
	input := func(system, prompt string) *bedrockruntime.ConverseInput {
		return &bedrockruntime.ConverseInput{
			ModelId:         aws.String(bedrockModel),
			System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}},
			Messages:        []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: prompt}}}},
			InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(bedrockMaxTokens)},
		}
	}
	judge := input(JudgeInstructions, judgePrompt)
	judge.ToolConfig = &types.ToolConfiguration{
		Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name:        aws.String(verdictToolName),
			Description: aws.String(verdictToolDescription),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(verdictSchema())},
		}}},
		ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(verdictToolName)}},
	}
	guess := input(CandidateInstructions, guessPrompt)
	guess.InferenceConfig.Temperature = aws.Float32(0.7)
	for _, in := range []*bedrockruntime.ConverseInput{judge, guess} {
		if _, err := sdk.Converse(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}

	reqs := srv.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	signed := func(r seen) string {
		m := sigV4Scope.FindStringSubmatch(r.Header.Get("Authorization"))
		if m == nil {
			t.Fatalf("Authorization = %q, want SigV4", r.Header.Get("Authorization"))
		}
		a := r.Header.Get("Authorization")
		start := len("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20060102/eu-west-3/bedrock/aws4_request, SignedHeaders=")
		end := len(a) - len(", Signature=") - 64
		return a[start:end]
	}
	for i, name := range []string{"judge", "candidates"} {
		got, want := reqs[i], reqs[i+2]
		if got.Method != want.Method || got.Path != want.Path {
			t.Errorf("%s: sent %s %s, the SDK %s %s", name, got.Method, got.Path, want.Method, want.Path)
		}
		if g, w := got.Header.Get("Content-Type"), want.Header.Get("Content-Type"); g != w {
			t.Errorf("%s: Content-Type %q, the SDK %q", name, g, w)
		}
		if !jsonEqual(t, got.decode(t), want.decode(t)) {
			t.Errorf("%s: body\n%s\nthe SDK's\n%s", name, got.Body, want.Body)
		}
		// The SDK signs more headers (its user agent, an invocation id);
		// every header this adapter signs, it signs too.
		for _, h := range splitSemi(signed(got)) {
			if !contains(splitSemi(signed(want)), h) {
				t.Errorf("%s: signs %q, the SDK does not (%s)", name, h, signed(want))
			}
		}
	}
}

func splitSemi(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ';' {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
