package integration_test

import (
	"net/http"
	"testing"

	"github.com/dont-cli/dont/internal/attacktest"
)

// The trust boundary's attacks through the API function's bootstrap under
// aws-lambda-rie, over DynamoDB: the same suite as the in-process handler
// and `dont serve`.
func TestTheTrustBoundaryThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	attacktest.Run(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			e := s.request(t, s.api, http.MethodPost, "/v1/tools/"+tool, token, body, headers)
			return attacktest.Reply{Status: e.Status, Env: e.Body, Raw: e.Raw}
		},
		Token: func(t *testing.T, role string) string { return p.operatorToken(t, role) },
	})
}

// operatorToken makes one more token of the project, as an operator does:
// a direct invoke of the API function.
func (p *project) operatorToken(t *testing.T, role string) string {
	t.Helper()
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"create_token": map[string]any{"project": p.name, "role": role, "name": "attack-" + role}}}
	if err := p.s.api.invoke(ctx, op, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	token, _ := data["token"].(string)
	if env["ok"] != true || token == "" {
		t.Fatalf("operator create_token %s: %v", role, env)
	}
	return token
}
