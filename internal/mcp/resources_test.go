package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func readResource(t *testing.T, cs *sdk.ClientSession, uri string) map[string]any {
	t.Helper()
	r, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(r.Contents) != 1 || r.Contents[0].MIMEType != "application/json" {
		t.Fatalf("read %s: %+v", uri, r.Contents)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(r.Contents[0].Text), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// Pending spawns and open questions are resources a host lists, reads and
// subscribes to: a new question, and its ending, each send
// notifications/resources/updated for the open questions and for the
// question itself.
func TestOpenQuestionsAndPendingSpawnsAreSubscribableResourcesOverMCP(t *testing.T) {
	defer mcp.SetResourcePoll(10 * time.Millisecond)()
	// resources/subscribe, as hosts speak it up to protocol 2025-11-25
	// (the TypeScript SDK's test covers it too).
	subscribableResources(t, "2025-11-25")
}

func subscribableResources(t *testing.T, version string) {
	updated := make(chan string, 64)
	w := newWaitingWith(t, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	ctx := context.Background()
	list, err := w.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, mcp.URIOpenQuestions) || !slices.Contains(uris, mcp.URIPendingSpawns) {
		t.Fatalf("resources/list: %v", uris)
	}
	if env := readResource(t, w.cs, mcp.URIOpenQuestions); env["envelope_kind"] != "approvals" || data(env)["count"] != 0.0 {
		t.Fatalf("open questions before any: %v", env)
	}
	if err := w.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: mcp.URIOpenQuestions}); err != nil {
		t.Fatal(err)
	}
	_, q := call(t, w.cs, "escalate", map[string]any{"session": w.session, "call": "c1", "to": "workspace-write", "reason": "writes", "no_wait": true})
	id := data(q)["approval_id"].(string)
	waitUpdated(t, updated, mcp.URIOpenQuestions)
	if env := readResource(t, w.cs, mcp.URIOpenQuestions); data(env)["count"] != 1.0 {
		t.Fatalf("open questions after the escalate: %v", env)
	}
	one := "dont://approvals/" + id
	if err := w.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: one}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.person.Escalations.Approve(ctx, id, "person"); err != nil {
		t.Fatal(err)
	}
	waitUpdated(t, updated, one)
	if env := readResource(t, w.cs, one); data(env)["verdict"] != "approved" {
		t.Fatalf("the question after the approval: %v", env)
	}
	// A pending spawn is listed; its resource shows the request.
	claim, rid, token := assumed(t, w.cs)
	spawns := readResource(t, w.cs, mcp.URIPendingSpawns)
	if b, _ := json.Marshal(spawns); !strings.Contains(string(b), rid) || !strings.Contains(string(b), claim) {
		t.Fatalf("pending spawns: %s", b)
	}
	if env := readResource(t, w.cs, "dont://spawns/"+rid); data(env)["request_id"] != rid || strings.Contains(mustJSON(env), token) {
		t.Fatalf("the spawn: %v", env)
	}
}

// A resource read is the tool call it names, as the harness principal: it
// never shows a callback token (which only the issuing call's answer
// carries), and a URI naming anything else — tokens, held calls, the
// approver's tools — is not a resource.
func TestAnAgentOverMCPCannotReadMoreThroughResourcesThanThroughTools(t *testing.T) {
	w := newWaitingWith(t, nil, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	_, rid, token := assumed(t, w.cs)
	for _, uri := range []string{mcp.URIPendingSpawns, "dont://spawns/" + rid} {
		if env := readResource(t, w.cs, uri); strings.Contains(mustJSON(env), token) || strings.Contains(mustJSON(env), "dontcb_") {
			t.Fatalf("%s shows the callback token: %v", uri, env)
		}
	}
	for _, uri := range []string{"dont://tokens/list", "dont://confirmations/pending", "file:///etc/passwd", "dont://approvals/"} {
		if _, err := w.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Fatalf("%s was read", uri)
		}
		if err := w.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err == nil {
			t.Fatalf("%s was subscribed", uri)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func waitUpdated(t *testing.T, updated chan string, uri string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case u := <-updated:
			if u == uri {
				return
			}
		case <-deadline:
			t.Fatalf("no notifications/resources/updated for %s within 10 s", uri)
		}
	}
}

// Each subscribed resource is a store read every second: a client cannot
// subscribe to any number of them to load the store.
func TestAnAgentOverMCPCannotLoadTheStoreWithSubscriptions(t *testing.T) {
	w := newWaitingWith(t, nil, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	refused := 0
	for i := range 40 {
		uri := "dont://approvals/apr:01HX05A9K8VP00000000000" + string(rune('A'+i/10)) + string(rune('A'+i%10))
		if err := w.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err != nil {
			if !strings.Contains(err.Error(), "at most 32 resources") {
				t.Fatalf("subscribe %d: %v", i, err)
			}
			refused++
		}
	}
	if refused != 8 {
		t.Fatalf("%d of 40 subscriptions refused, want 8 (32 watched)", refused)
	}
}
