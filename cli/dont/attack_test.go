package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/attacktest"
	"github.com/dont-cli/dont/internal/confirm"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The trust boundary's attacks against a real `dont serve`.
func TestTheTrustBoundaryThroughDontServe(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// A per-token burst the flood subtest exceeds, at a rate that refills
	// nothing during the run.
	const burst = 100
	srv := p.serveWith(t, []string{"--sweep-interval", "50ms", "--rate", "0.001", "--burst", strconv.Itoa(burst)})
	attacktest.Run(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			req, _ := http.NewRequest(http.MethodPost, srv.endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			r := attacktest.Reply{Status: resp.StatusCode, Raw: string(raw), Header: resp.Header}
			if err := json.Unmarshal(raw, &r.Env); err != nil {
				t.Fatalf("%s: not an envelope: %q", tool, raw)
			}
			return r
		},
		Token:      func(t *testing.T, role string) string { return p.token(role) },
		TokenBurst: burst,
	})
}

// The passkey attacks against a real `dont serve` whose project approves
// danger-full-access only with a passkey.
func TestThePasskeyBoundaryThroughDontServe(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	srv := p.serve(t, "DONT_PASSKEY_REQUIRED_FROM=danger-full-access")
	attacktest.RunPasskeys(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			req, _ := http.NewRequest(http.MethodPost, srv.endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			r := attacktest.Reply{Status: resp.StatusCode, Raw: string(raw), Header: resp.Header}
			if err := json.Unmarshal(raw, &r.Env); err != nil {
				t.Fatalf("%s: not an envelope: %q", tool, raw)
			}
			return r
		},
		Token: func(t *testing.T, role string) string { return p.token(role) },
	})
}

// escalated opens a session that the owner is watching (an embedded read)
// and asks one question in it.
func escalated(t *testing.T, p *testProject) string {
	t.Helper()
	ses := p.ok("sessions", "open", "--tier", "read-only").str("session_id")
	p.frames("--session", ses)
	return p.ok("escalate", "--session", ses, "--call", "c-"+ses, "--to", "danger-full-access", "--reason", "installs", "--no-wait", "--", "make", "install").str("approval_id")
}

func TestAnAgentAtTheEmbeddedCLICannotApproveItsOwnEscalation(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	apr := escalated(t, p)
	// Under a harness signal, even with a terminal to type at.
	for _, signal := range []string{"DONT_HARNESS=1", "DONT_REQUEST_ID=spawn:01HX05A9K8VP0000000000000A"} {
		r := p.answered([]string{signal}, "approvals", "approve", apr)
		if r.exit != 2 || r.data()["code"] != string(confirm.PersonRequired) {
			t.Fatalf("%s: approve exit %d %s", signal, r.exit, r.stdout)
		}
	}
	// Without a controlling terminal, "y" on stdin is not a person's answer.
	r := p.runIn(t, nil, strings.NewReader("y\n"), "approvals", "approve", apr, "--yes")
	if r.exit != 2 || r.data()["code"] != string(confirm.PersonRequired) {
		t.Fatalf("approve from stdin: exit %d %s", r.exit, r.stdout)
	}
	r = p.runIn(t, nil, strings.NewReader("y\n"), "approvals", "refuse", apr, "--yes")
	if r.exit != 2 {
		t.Fatalf("refuse from stdin: exit %d %s", r.exit, r.stdout)
	}
	if st := p.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("the question was answered: %s", st)
	}
	// The person at the terminal answers it.
	if v := p.okAnswered("approvals", "approve", apr).str("verdict"); v != "approved" {
		t.Fatalf("verdict %q", v)
	}
}

func TestAWatchUnderAHarnessSignalOrWithoutATerminalAnswersNothing(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ses := p.ok("sessions", "open", "--tier", "read-only").str("session_id")
	for _, env := range [][]string{{"DONT_HARNESS=1"}, nil} {
		r := p.runIn(t, env, strings.NewReader("y\n"), "approvals", "watch", "--session", ses)
		if r.exit != 2 || r.data()["code"] != string(confirm.PersonRequired) {
			t.Fatalf("watch %v: exit %d %s", env, r.exit, r.stdout)
		}
	}
}

func TestAHarnessSignalMakesTheEmbeddedCLIAHarness(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	before := p.ok("tokens", "list").data()["count"]
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "tokens", "create", "--role", "admin", "--yes")
	if r.exit != 3 || r.data()["code"] != "forbidden" {
		t.Fatalf("tokens create as a harness: exit %d %s", r.exit, r.stdout)
	}
	if after := p.ok("tokens", "list").data()["count"]; after != before {
		t.Fatalf("a token was created: %v -> %v", before, after)
	}
}

// An agent on `dont mcp` opens a session, reads its frames, escalates and
// tries to answer its own question, or to mint an admin token.
func TestAnAgentOverMCPCannotApproveItsOwnEscalationOrMintTokens(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	ses := s.call("sessions_open", map[string]any{"tier": "read-only"}).data()["session_id"].(string)
	s.call("approvals_frames", map[string]any{"session": ses})
	r := s.call("escalate", map[string]any{"session": ses, "call": "c1", "to": "danger-full-access", "reason": "r", "no_wait": true})
	if !r.isError || r.data()["code"] != "no-subscriber" {
		t.Fatalf("an MCP reader made the session answerable: %s", r.text)
	}
	list, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if strings.HasPrefix(tl.Name, "approvals_approve") || strings.HasPrefix(tl.Name, "approvals_refuse") ||
			strings.HasPrefix(tl.Name, "confirmations_") || strings.HasPrefix(tl.Name, "tokens_") {
			t.Errorf("MCP exposes %s", tl.Name)
		}
	}
	for _, name := range []string{"approvals_approve", "confirmations_confirm", "tokens_create"} {
		res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"id": "apr:01HX05A9K8VP0000000000000A", "role": "admin"}})
		if err == nil && !res.IsError {
			t.Fatalf("%s ran over MCP", name)
		}
	}
	if n := p.ok("tokens", "list").data()["count"]; n != 0.0 {
		t.Fatalf("%v tokens exist", n)
	}
}

func TestMCPNeverAdvertisesOrHonoursSkipConfirmation(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.mcp()
	list, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		if bytes.Contains(b, []byte("skip_confirmation")) {
			t.Errorf("%s advertises a skip parameter: %s", tl.Name, b)
		}
	}
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := s.call("ignore", map[string]any{"id": id, "reason": "out of scope here", "skip_confirmation": true})
	if !r.isError || r.data()["code"] != "usage" {
		t.Fatalf("skip_confirmation over MCP: %s", r.text)
	}
	r = s.call("ignore", map[string]any{"id": id, "reason": "out of scope here", "auto_skip_confirmation": true})
	if !r.isError {
		t.Fatalf("auto_skip_confirmation over MCP: %s", r.text)
	}
	if st := p.ok("show", id).str("status"); st != "unverified" {
		t.Fatalf("the call ran: %s", st)
	}
}

func TestMCPAnnotationsAreTruthful(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	list, err := p.mcp().cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*sdk.ToolAnnotations{}
	for _, tl := range list.Tools {
		by[tl.Name] = tl.Annotations
	}
	for _, name := range []string{"show", "list", "spawns", "approvals_list"} {
		if a := by[name]; a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
			t.Errorf("%s: %+v, want read-only and idempotent", name, a)
		}
	}
	for _, name := range []string{"lock", "ignore", "spawns_cancel", "approvals_cancel"} {
		if a := by[name]; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Errorf("%s: %+v, want destructive", name, a)
		}
	}
	for _, name := range []string{"conclude", "define", "assume"} {
		if a := by[name]; a == nil || a.DestructiveHint == nil || *a.DestructiveHint {
			t.Errorf("%s: %+v, want not destructive", name, a)
		}
	}
}

// A subagent's CLI over DONT_ENDPOINT with its callback token.
func TestACallbackTokenThroughTheCLINeedsItsRequestIDAndARetryExitsZero(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	asHarness := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}
	id := p.runEnv(asHarness, "conclude", "water boils at 100 C at sea level").str("id")
	p.runEnv(asHarness, "dismiss", id, "--evidence", "https://example.org/its-90")
	req := p.runEnv(asHarness, "assume", id)
	rid := req.str("request_id")
	cb, _ := req.data()["callback"].(map[string]any)
	asSubagent := []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + cb["token"].(string)}
	if r := p.runEnv(asSubagent, "trust", id, "--reason", "ITS-90 gives 99.97 C at 1 atm"); r.exit != 3 || r.data()["code"] != "forbidden" {
		t.Fatalf("trust without its request id: exit %d %s", r.exit, r.stdout)
	}
	if st := p.runEnv(asHarness, "show", id).str("status"); st != "unverified" {
		t.Fatalf("the claim moved: %s", st)
	}
	withID := append(asSubagent, "DONT_REQUEST_ID="+rid)
	if r := p.runEnv(withID, "dismiss", id, "--evidence", "https://example.org/its-90"); r.exit != 0 {
		t.Fatalf("dismiss: exit %d %s", r.exit, r.stdout)
	}
	r := p.runEnv(withID, "dismiss", id, "--evidence", "https://example.org/its-90")
	if w := warnings(r); r.exit != 0 || r.env["ok"] != true || len(w) != 1 || w[0] != "spawn-duplicate" {
		t.Fatalf("the retried callback: exit %d %s", r.exit, r.stdout)
	}
}

// The Slack app's attacks against a real `dont serve` started with the
// app's signing secret. Its response_url posts go only to Slack's own
// host: the interactions point response_url elsewhere (never posted),
// and the attacks assert what the API shows: nothing changed.
func TestTheSlackBoundaryThroughDontServe(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	srv := p.serve(t, "DONT_SLACK_SIGNING_SECRET="+secret)
	attacktest.RunSlack(t, attacktest.SlackTarget{
		Target: attacktest.Target{
			Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
				req, _ := http.NewRequest(http.MethodPost, srv.endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				for k, v := range headers {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				r := attacktest.Reply{Status: resp.StatusCode, Raw: string(raw), Header: resp.Header}
				if err := json.Unmarshal(raw, &r.Env); err != nil {
					t.Fatalf("%s: not an envelope: %q", tool, raw)
				}
				return r
			},
			Token: func(t *testing.T, role string) string { return p.token(role) },
		},
		SigningSecret: secret,
		PostSlack:     attacktest.PostSlackTo(srv.endpoint),
		ResponseURL:   "https://response-url.invalid/actions/T3MDE/1/x",
	})
}
