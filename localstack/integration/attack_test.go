package integration_test

import (
	"net/http"
	"testing"

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
	attacktest.Run(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			e := s.request(t, s.api, http.MethodPost, "/v1/tools/"+tool, token, body, headers)
			h := http.Header{}
			for k, v := range e.Headers {
				h.Set(k, v)
			}
			return attacktest.Reply{Status: e.Status, Env: e.Body, Raw: e.Raw, Header: h}
		},
		Token: func(t *testing.T, role string) string { return p.operatorToken(t, role) },
		// DONT_RATE and DONT_BURST of the api function (localstack/integration.sh).
		TokenBurst: apiTokenBurst,
	})
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
