package mcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// agents connects one MCP client per author to its own `dont mcp` server,
// every server over the same store (with tokens and approvals): each is
// the harness principal mcp:<author>.
func agents(t *testing.T, authors ...string) []*sdk.ClientSession {
	t.Helper()
	out, _ := agentsOn(t, authors...)
	return out
}

func agentsOn(t *testing.T, authors ...string) ([]*sdk.ClientSession, *sqlite.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var out []*sdk.ClientSession
	for _, author := range authors {
		srv := mcp.New("test", func(context.Context, *tools.Tool) (*service.Service, func(), error) {
			return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Approvals: service.Approvals{Store: st}, Author: author}), func() {}, nil
		})
		cs := connect(t, srv, nil, nil)
		out = append(out, cs)
	}
	return out, st
}

func refusedWith(t *testing.T, res *sdk.CallToolResult, env map[string]any, code, what string) {
	t.Helper()
	if !res.IsError || data(env)["code"] != code || len(data(env)["remediation"].([]any)) == 0 {
		t.Fatalf("%s: want %s with remediation, got %v", what, code, env)
	}
}

// assumed is a verified claim under review, and its spawn request.
func assumed(t *testing.T, cs *sdk.ClientSession) (claim, rid, token string) {
	t.Helper()
	claim = verified(t, cs, "water boils at 100 C at sea level")
	res, env := call(t, cs, "assume", map[string]any{"id": claim})
	cb, _ := data(env)["callback"].(map[string]any)
	token, _ = cb["token"].(string)
	if res.IsError || token == "" {
		t.Fatalf("assume: %v", env)
	}
	return claim, data(env)["request_id"].(string), token
}

func TestAnAgentOverMCPCannotOpenASessionAboveTheCeiling(t *testing.T) {
	cs := agents(t, "agent")[0]
	res, env := call(t, cs, "sessions_open", map[string]any{"tier": "danger-full-access"})
	refusedWith(t, res, env, "session-above-ceiling", "a danger-full-access session over MCP")
	if res, env := call(t, cs, "sessions_open", map[string]any{"tier": "workspace-write"}); res.IsError {
		t.Fatalf("a session at the ceiling: %v", env)
	}
}

// The callback token is in the assume's own result (above), and in no
// later read over MCP, of the agent that asked or of another.
func TestAnAgentOverMCPCannotReadACallbackTokenAfterItsIssue(t *testing.T) {
	as := agents(t, "alice", "mallory")
	_, rid, token := assumed(t, as[0])
	for _, cs := range as {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"show", map[string]any{"id": rid}},
			{"spawns", map[string]any{"all": true}},
			{"spawns_manage", map[string]any{"op": "show", "request_id": rid}},
		} {
			res, env := call(t, cs, c.tool, c.args)
			text := res.Content[0].(*sdk.TextContent).Text
			if res.IsError || strings.Contains(text, token) || strings.Contains(text, "dontcb_") {
				t.Fatalf("%s %v: %v", c.tool, c.args, env)
			}
		}
	}
}

// Over MCP an agent is mcp:<author>: another author's server cannot
// cancel, heartbeat or resolve the spawn, nor withdraw the question.
func TestAnAgentOverMCPCannotTouchAnotherAgentsSpawnOrQuestion(t *testing.T) {
	as, st := agentsOn(t, "alice", "mallory")
	alice, mallory := as[0], as[1]
	claim, rid, _ := assumed(t, alice)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"spawns_heartbeat", map[string]any{"request_id": rid, "extend": "720h"}},
		{"dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/x"}, "request_id": rid}},
	} {
		res, env := call(t, mallory, c.tool, c.args)
		refusedWith(t, res, env, "not-requester", "another agent's "+c.tool)
	}
	if _, env := call(t, alice, "spawns_manage", map[string]any{"op": "show", "request_id": rid}); data(env)["state"] != "pending" {
		t.Fatalf("the spawn: %v", env)
	}
	// A question, made answerable by a person's read of its session (an
	// approver's client records it in the store; none is over MCP).
	_, ses := call(t, alice, "sessions_open", map[string]any{"tier": "read-only"})
	sid := data(ses)["session_id"].(string)
	if err := st.TouchSubscriber(context.Background(), sid, "approver", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	res, q := call(t, alice, "escalate", map[string]any{"session": sid, "call": "c1", "to": "workspace-write", "reason": "r", "no_wait": true})
	if res.IsError {
		t.Fatalf("escalate: %v", q)
	}
	res, env := call(t, mallory, "approvals_cancel", map[string]any{"id": data(q)["approval_id"], "reason": "withdrawn for you"})
	refusedWith(t, res, env, "not-requester", "another agent withdrawing the question")
	if res, env := call(t, alice, "approvals_cancel", map[string]any{"id": data(q)["approval_id"], "reason": "not needed"}); res.IsError || data(env)["verdict"] != "cancelled" {
		t.Fatalf("the requester's cancel: %v", env)
	}
}

// Doubt is enforced on the agent that asked, over MCP too.
func TestAnAgentOverMCPCannotVerifyItsOwnClaimWhileItsVerifierIsPending(t *testing.T) {
	cs := agents(t, "agent")[0]
	claim, rid, _ := assumed(t, cs)
	res, env := call(t, cs, "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/its-90"}})
	refusedWith(t, res, env, "spawn-pending", "a dismiss beside the pending verifier")
	if !strings.Contains(data(env)["message"].(string), rid) {
		t.Fatalf("the refusal does not name %s: %v", rid, env)
	}
	if _, show := call(t, cs, "show", map[string]any{"id": claim}); data(show)["status"] != "unverified" {
		t.Fatalf("the claim moved: %v", data(show)["status"])
	}
}

// A reopen undoes an ignore: without a person's confirmation in the host
// it is held, as an ignore is.
func TestAReopenOverMCPNeedsTheConfirmationAnIgnoreNeeds(t *testing.T) {
	cs, st := client(t, nil, nil)
	id := verified(t, cs, "water boils at 100 C at sea level")
	if _, env := call(t, cs, "reopen", map[string]any{"id": id, "reason": "back in scope after all"}); data(env)["status"] != confirm.StatusPending {
		t.Fatalf("reopen without elicitation: %v", env)
	}
	if _, show := call(t, cs, "show", map[string]any{"id": id}); data(show)["status"] != "verified" {
		t.Fatalf("the unconfirmed reopen ran: %v", data(show)["status"])
	}
	if held, _ := st.ListConfirmations(context.Background()); len(held) != 1 || held[0].Tool != "reopen" {
		t.Fatalf("held: %+v", held)
	}
}
