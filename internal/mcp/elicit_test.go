package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/confirm"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// person is the MCP host's user: it answers every elicitation with its
// next action and keeps the messages it was shown.
type person struct {
	mu       sync.Mutex
	actions  []string
	messages []string
}

func (p *person) answer(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, req.Params.Message)
	action := "decline"
	if len(p.actions) > 0 {
		action, p.actions = p.actions[0], p.actions[1:]
	}
	if action == "accept" {
		return &sdk.ElicitResult{Action: action, Content: map[string]any{}}, nil
	}
	return &sdk.ElicitResult{Action: action}, nil
}

func (p *person) asked() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.messages) }

// Both ways the protocol elicits: a request from the server while the
// call is open (up to 2025-11-25), and the input-required result a
// client answers by retrying the call (2026-07-28).
var elicitVersions = []string{"2025-11-25", ""}

func versionName(v string) string {
	if v == "" {
		return "latest"
	}
	return v
}

// A verified claim, ready to lock.
func verified(t *testing.T, cs *sdk.ClientSession, statement string) string {
	t.Helper()
	_, env := call(t, cs, "conclude", map[string]any{"statement": statement})
	id := data(env)["id"].(string)
	if res, env := call(t, cs, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/e"}}); res.IsError {
		t.Fatalf("dismiss: %v", env)
	}
	return id
}

// With the elicitation capability, a gated call asks the person in the
// host and runs only when they accept; decline and cancel refuse it, and
// nothing is written or held.
func TestAGatedCallRunsOnlyWhenThePersonInTheHostAccepts(t *testing.T) {
	for _, v := range elicitVersions {
		t.Run(versionName(v), func(t *testing.T) {
			p := &person{}
			cs, st := client(t, &sdk.ClientOptions{ElicitationHandler: p.answer}, &sdk.ClientSessionOptions{ProtocolVersion: v})
			if got := cs.InitializeResult().ProtocolVersion; v != "" && got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			t.Logf("protocol %s", cs.InitializeResult().ProtocolVersion)
			id := verified(t, cs, "water boils at 100 C at sea level")

			for _, action := range []string{"decline", "cancel"} {
				p.actions = []string{action}
				res, env := call(t, cs, "lock", map[string]any{"id": id, "reason": "settled"})
				if !res.IsError || data(env)["code"] != string(confirm.Declined) || len(data(env)["remediation"].([]any)) == 0 {
					t.Fatalf("%s: %v", action, env)
				}
				if _, show := call(t, cs, "show", map[string]any{"id": id}); data(show)["status"] != "verified" {
					t.Fatalf("after %s the claim is %v", action, data(show)["status"])
				}
			}
			if held, err := st.ListConfirmations(context.Background()); err != nil || len(held) != 0 {
				t.Fatalf("declined calls were held: %v %v", held, err)
			}

			p.actions = []string{"accept"}
			res, env := call(t, cs, "lock", map[string]any{"id": id, "reason": "settled"})
			if res.IsError || env["envelope_kind"] != "claim" || data(env)["status"] != "locked" {
				t.Fatalf("accepted lock: %v", env)
			}
			if p.asked() != 3 {
				t.Fatalf("the person was asked %d times for 3 calls", p.asked())
			}
			if m := p.messages[2]; !strings.Contains(m, "lock") || !strings.Contains(m, `reason: "settled"`) || !strings.Contains(m, id) {
				t.Fatalf("the question does not show the call: %q", m)
			}
			// Reads and exempt operations never ask.
			call(t, cs, "show", map[string]any{"id": id})
			call(t, cs, "spawns_manage", map[string]any{"op": "list"})
			if p.asked() != 3 {
				t.Fatalf("a read asked the person (%d questions)", p.asked())
			}
		})
	}
}

// Without the capability nothing changes: the gated call is held for an
// approver, and nobody is asked.
func TestWithoutElicitationAGatedCallIsHeldAsBefore(t *testing.T) {
	cs, st := client(t, nil, nil)
	id := verified(t, cs, "water boils at 100 C at sea level")
	res, env := call(t, cs, "lock", map[string]any{"id": id, "reason": "settled"})
	if res.IsError || data(env)["status"] != confirm.StatusPending {
		t.Fatalf("lock without elicitation: %v", env)
	}
	if held, _ := st.ListConfirmations(context.Background()); len(held) != 1 {
		t.Fatalf("%d held calls", len(held))
	}
}

// An agent writes the reason; it cannot hide what the person is asked to
// confirm with a carriage return, an escape sequence or a bidi override.
func TestAReasonWithControlCharactersCannotHideItsCallInTheElicitation(t *testing.T) {
	for _, v := range elicitVersions {
		t.Run(versionName(v), func(t *testing.T) {
			p := &person{}
			cs, _ := client(t, &sdk.ClientOptions{ElicitationHandler: p.answer}, &sdk.ClientSessionOptions{ProtocolVersion: v})
			id := verified(t, cs, "a claim")
			call(t, cs, "ignore", map[string]any{"id": id, "reason": "rm -rf /\r\x1b[2K\u202eharmless tidy-up"})
			if p.asked() != 1 {
				t.Fatalf("asked %d times", p.asked())
			}
			m := p.messages[0]
			for _, hidden := range []string{"\r", "\x1b", "\u202e"} {
				if strings.Contains(m, hidden) {
					t.Fatalf("the question carries %q raw: %q", hidden, m)
				}
			}
			if !strings.Contains(m, `rm -rf /\r\u001b[2K\u202eharmless`) {
				t.Fatalf("the question does not show the escaped reason: %q", m)
			}
		})
	}
}

// An invalid call, or one the principal may not make, is refused before
// anyone is asked.
func TestTheHostIsNotAskedAboutACallThatCannotRun(t *testing.T) {
	p := &person{actions: []string{"accept"}}
	cs, _ := client(t, &sdk.ClientOptions{ElicitationHandler: p.answer}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, env := call(t, cs, "spawns_cancel", map[string]any{"reason": "no id"})
	if !res.IsError || p.asked() != 0 {
		t.Fatalf("asked %d times; %v", p.asked(), env)
	}
}
