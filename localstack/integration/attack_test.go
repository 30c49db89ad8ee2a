package integration_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/attacktest"
)

// apiTokenBurst is the api function's DONT_BURST in localstack/integration.sh,
// its DONT_RATE so low that nothing refills during a run.
const apiTokenBurst = 300

// The trust boundary's attacks through the API function's bootstrap under
// aws-lambda-rie, over DynamoDB: the same suite as the in-process handler
// and `dont serve`.
func TestTheTrustBoundaryThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	target := apiTarget(s, s.api, p)
	// DONT_RATE and DONT_BURST of the api function (localstack/integration.sh).
	target.TokenBurst = apiTokenBurst
	attacktest.Run(t, target)
}

// operatorToken makes one more token of the project, as an operator does:
// a direct invoke of the operator function.
func (p *project) operatorToken(t *testing.T, role string) string {
	t.Helper()
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"create_token": map[string]any{"project": p.name, "role": role, "name": "attack-" + role}}}
	if err := p.s.operator.invoke(ctx, op, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	token, _ := data["token"].(string)
	if env["ok"] != true || token == "" {
		t.Fatalf("operator create_token %s: %v", role, env)
	}
	return token
}

// Anyone who may invoke the public api function must not mint a project's
// admin token with it: the operator event is refused there and stores
// nothing; only the operator function takes it.
func TestMintingAnAdminTokenThroughThePublicAPIFunctionIsRefused(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	before := len(p.tokens(t))
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"create_token": map[string]any{"project": p.name, "role": "admin", "name": "stolen"}}}
	if err := s.api.invoke(ctx, op, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	if env["ok"] != false || data["code"] != "forbidden" || len(data["remediation"].([]any)) == 0 || data["token"] != nil {
		t.Fatalf("the api function answered an operator event with %v", env)
	}
	if after := len(p.tokens(t)); after != before {
		t.Fatalf("tokens %d before, %d after the refused invoke", before, after)
	}
}

// tokens lists the project's tokens from the table.
func (p *project) tokens(t *testing.T) []any {
	t.Helper()
	list, err := p.store.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(list))
	for i := range list {
		out[i] = list[i]
	}
	return out
}

// apiTarget is the attack suite's target through fn for project p.
func apiTarget(s *suite, fn *function, p *project) attacktest.Target {
	return attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			e := s.request(t, fn, http.MethodPost, "/v1/tools/"+tool, token, body, headers)
			h := http.Header{}
			for k, v := range e.Headers {
				h.Set(k, v)
			}
			return attacktest.Reply{Status: e.Status, Env: e.Body, Raw: e.Raw, Header: h}
		},
		Token: func(t *testing.T, role string) string { return p.operatorToken(t, role) },
	}
}

// The Slack app's attacks through the API function, its Slack app
// answering for the project DONT_SLACK_PROJECT names. Its response_url
// posts go only to Slack's own host: the attacks assert what the API
// shows, that nothing changed.
func TestTheSlackBoundaryThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProjectNamed(t, s.slackProject)
	attacktest.RunSlack(t, attacktest.SlackTarget{
		Target:        apiTarget(s, s.api, p),
		SigningSecret: s.slackSecret,
		PostSlack: func(t *testing.T, path, body string, headers map[string]string) (int, string) {
			t.Helper()
			var resp events.APIGatewayV2HTTPResponse
			if err := s.api.invoke(ctx, httpEvent(http.MethodPost, path, "", []byte(body), headers), &resp); err != nil {
				t.Fatal(err)
			}
			if resp.IsBase64Encoded {
				b, err := base64.StdEncoding.DecodeString(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, string(b)
			}
			return resp.StatusCode, resp.Body
		},
		ResponseURL: "https://response-url.invalid/actions/T3MDE/1/x",
	})
}

// The passkey attacks through an API function whose deployment approves
// danger-full-access only with a passkey (DONT_PASSKEY_REQUIRED_FROM).
func TestThePasskeyBoundaryThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	attacktest.RunPasskeys(t, apiTarget(s, s.apiPasskey, p))
}
