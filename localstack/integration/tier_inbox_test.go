package integration_test

// The approvals page's inbox through the api function over DynamoDB.
// This file sorts after integration_test.go for the reason
// tier_escalation_test.go gives: its questions leave delayed messages.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The page is served by the api function, and its inbox read works there:
// an approver's read makes every session answerable, lists every open
// question with the names of sessions and tokens, and shows the endings
// with their reasons.
func TestTheApprovalsInboxThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	approver := p.approver()

	var page events.APIGatewayV2HTTPResponse
	if err := s.api.invoke(ctx, httpEvent(http.MethodGet, "/approvals", "", nil, nil), &page); err != nil {
		t.Fatal(err)
	}
	if page.StatusCode != 200 || !strings.Contains(page.Body, "approvals.inbox") {
		t.Fatalf("GET /approvals through the api function: %d", page.StatusCode)
	}

	front := p.ok(s.api, "sessions.open", map[string]any{"tier": "read-only", "name": "frontend"}).str("session_id")
	back := p.ok(s.api, "sessions.open", map[string]any{"tier": "read-only", "name": "backend"}).str("session_id")
	in := p.ok(s.api, "approvals.inbox", map[string]any{"subscriber": "integration-page"}, approver).data()
	if v, _ := in["viewer"].(map[string]any); v["can_answer"] != true || v["watching"] != "*" || v["name"] != "integration-approver" {
		t.Fatalf("the approver's viewer: %v", in["viewer"])
	}
	ask := func(ses, call string) string {
		return p.ok(s.api, "escalate", map[string]any{"session": ses, "call": call, "to": "workspace-write", "reason": "r", "no_wait": true}).str("approval_id")
	}
	a, b := ask(front, "inbox-a"), ask(back, "inbox-b")
	in = p.ok(s.api, "approvals.inbox", map[string]any{}, approver).data()
	pending, _ := in["pending"].([]any)
	names, _ := in["names"].(map[string]any)
	requester, _ := pending[0].(map[string]any)["requester"].(string)
	if len(pending) != 2 || names[front] != "frontend" || names[back] != "backend" || names[requester] != "integration" {
		t.Fatalf("the inbox: %d pending, names %v", len(pending), names)
	}
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"id": a, "reason": "not in production"}, "cli_confirmed": true})
	if e := s.request(t, s.api, http.MethodPost, "/v1/tools/approvals.refuse", approver, body, map[string]string{"X-Dont-CLI-Caps": "cli-confirm-v1"}); e.Status != http.StatusOK {
		t.Fatalf("refuse: %d %s", e.Status, e.Raw)
	}
	p.ok(s.api, "approvals.cancel", map[string]any{"id": b, "reason": "the build gave up"})
	in = p.ok(s.api, "approvals.inbox", map[string]any{}, approver).data()
	endings := map[string]map[string]any{}
	list, _ := in["endings"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		endings[m["approval_id"].(string)] = m
	}
	if endings[a]["verdict"] != "refused" || endings[a]["detail"] != "not in production" ||
		endings[b]["verdict"] != "cancelled" || endings[b]["detail"] != "the build gave up" {
		t.Fatalf("the endings: %v", list)
	}
}
