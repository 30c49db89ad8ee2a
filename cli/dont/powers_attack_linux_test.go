package main

import (
	"strings"
	"testing"
)

// At the embedded CLI an agent under a harness signal cannot open its
// session above the ceiling, nor with its signal dropped (the unproven
// owner); the person at their terminal, with the passphrase, can.
func TestAHarnessAtTheEmbeddedCLICannotOpenASessionAboveTheCeiling(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "sessions", "open", "--tier", "danger-full-access")
	if r.exit != 1 || r.data()["code"] != "session-above-ceiling" || len(r.data()["remediation"].([]any)) == 0 {
		t.Fatalf("a harness opening danger-full-access: exit %d %s", r.exit, r.stdout)
	}
	if n := p.ok("sessions", "list").data()["count"]; n != float64(0) {
		t.Fatalf("%v sessions after the refusal", n)
	}
	// The same agent with its harness signal dropped is the unproven
	// owner: no terminal, no passphrase, no session above the ceiling.
	if r := p.run("sessions", "open", "--tier", "danger-full-access"); r.exit != 1 || r.data()["code"] != "session-above-ceiling" {
		t.Fatalf("an agent that dropped its harness signal opening danger-full-access: exit %d %s", r.exit, r.stdout)
	}
	if n := p.ok("sessions", "list").data()["count"]; n != float64(0) {
		t.Fatalf("%v sessions after the refusals", n)
	}
	// The person at their terminal, with the approver passphrase.
	p.setPassphrase()
	if r := p.typed(testPassphrase+"\n", nil, "sessions", "open", "--tier", "danger-full-access"); r.exit != 0 || r.str("tier") != "danger-full-access" {
		t.Fatalf("the person's open: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
}

// `dont serve` takes the person's ceiling from its own flag or
// environment, where the agent holding a harness token cannot reach.
func TestDontServeHoldsHarnessTokensToThePersonsSessionCeiling(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness, admin := p.token("harness"), p.token("admin")
	srv := p.serveWith(t, []string{"--sweep-interval", "50ms", "--session-ceiling", "read-only"})
	as := func(tok string) []string { return []string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + tok} }
	if r := p.runEnv(as(harness), "sessions", "open", "--tier", "workspace-write"); r.data()["code"] != "session-above-ceiling" {
		t.Fatalf("a harness token above a read-only ceiling: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runEnv(as(harness), "sessions", "open", "--tier", "read-only"); r.exit != 0 {
		t.Fatalf("at the ceiling: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runEnv(as(admin), "sessions", "open", "--tier", "danger-full-access"); r.exit != 0 {
		t.Fatalf("a person's token: exit %d %s", r.exit, r.stdout)
	}
	bad := p.cmd("serve", "--addr", "127.0.0.1:0", "--session-ceiling", "everything")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "config-invalid") {
		t.Fatalf("a ceiling that is no tier: %v %s", err, out)
	}
}

// The callback token is in the assume's own output and in no later read.
func TestAShowAtTheEmbeddedCLINeverPrintsACallbackToken(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	a := p.ok("assume", id, "--json")
	rid := a.str("request_id")
	cb, _ := a.data()["callback"].(map[string]any)
	tok, _ := cb["token"].(string)
	if !strings.HasPrefix(tok, "dontcb_") {
		t.Fatalf("assume gave no callback token: %s", a.stdout)
	}
	for _, signal := range [][]string{nil, {"DONT_HARNESS=1"}} {
		for _, args := range [][]string{{"show", rid}, {"spawns", "--all"}, {"spawns", "manage", "--op", "show", "--request-id", rid}} {
			if r := p.runEnv(signal, append(args, "--json")...); r.exit != 0 || strings.Contains(r.stdout, "dontcb_") {
				t.Fatalf("%v %v: exit %d %s", signal, args, r.exit, r.stdout)
			}
		}
	}
}

// Under a harness signal the agent cannot move its claim beside its
// verifier; its subagent, resolving with the request id (DONT_REQUEST_ID)
// under the same name, can.
func TestAHarnessAtTheEmbeddedCLICannotVerifyItsOwnClaimWhileItsVerifierIsPending(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	agent := []string{"DONT_HARNESS=1", "DONT_AUTHOR=agent-7"}
	id := p.runEnv(agent, "conclude", "water boils at 100 C at sea level").str("id")
	rid := p.runEnv(agent, "assume", id, "--json").str("request_id")
	r := p.runEnv(agent, "dismiss", id, "--evidence", "https://example.org/its-90")
	if r.exit != 1 || r.data()["code"] != "spawn-pending" || !strings.Contains(r.stdout, rid) {
		t.Fatalf("a dismiss beside the verifier: exit %d %s", r.exit, r.stdout)
	}
	if st := p.ok("show", id).str("status"); st != "unverified" {
		t.Fatalf("the claim moved: %s", st)
	}
	// With its harness signal dropped it is the unproven owner: still no
	// move of a claim under review without the person's passphrase.
	dropped := []string{"DONT_AUTHOR=agent-7"}
	if r := p.runEnv(dropped, "dismiss", id, "--evidence", "https://example.org/its-90"); r.exit != 1 || r.data()["code"] != "spawn-pending" {
		t.Fatalf("a dismiss beside the verifier, harness signal dropped: exit %d %s", r.exit, r.stdout)
	}
	if st := p.ok("show", id).str("status"); st != "unverified" {
		t.Fatalf("the claim moved: %s", st)
	}
	sub := []string{"DONT_AUTHOR=agent-7", "DONT_REQUEST_ID=" + rid}
	if r := p.runEnv(sub, "dismiss", id, "--evidence", "https://example.org/its-90"); r.exit != 0 || r.str("status") != "verified" {
		t.Fatalf("the subagent's callback: exit %d %s", r.exit, r.stdout)
	}
}

// Harnesses sharing one embedded project are told apart by the name they
// declare (DONT_AUTHOR): one cannot cancel or heartbeat the other's spawn.
func TestAHarnessAtTheEmbeddedCLICannotTouchAnotherHarnesssSpawn(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	alice, mallory := []string{"DONT_HARNESS=1", "DONT_AUTHOR=alice"}, []string{"DONT_HARNESS=1", "DONT_AUTHOR=mallory"}
	id := p.runEnv(alice, "conclude", "water boils at 100 C at sea level").str("id")
	rid := p.runEnv(alice, "assume", id, "--json").str("request_id")
	for _, args := range [][]string{{"spawns", "heartbeat", rid, "--extend", "720h"}, {"spawns", "cancel", rid, "--reason", "mine now", "--yes"}} {
		if r := p.runEnv(mallory, args...); r.exit != 3 || r.data()["code"] != "not-requester" {
			t.Fatalf("mallory %v: exit %d %s", args, r.exit, r.stdout)
		}
	}
	if st := p.ok("spawns", "manage", "--op", "show", "--request-id", rid).str("state"); st != "pending" {
		t.Fatalf("the spawn: %s", st)
	}
	if r := p.runEnv(alice, "spawns", "cancel", rid, "--reason", "not needed", "--yes"); r.exit != 0 {
		t.Fatalf("alice's cancel: exit %d %s", r.exit, r.stdout)
	}
}

// A reopen of an ignored entity asks for what an ignore asks for.
func TestAReopenAtTheEmbeddedCLINeedsTheConfirmationAnIgnoreNeeds(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	ign := p.run("ignore", id, "--reason", "out of scope for this run")
	p.ok("ignore", id, "--reason", "out of scope for this run", "--yes")
	re := p.run("reopen", id, "--reason", "back in scope after all")
	if re.exit == 0 || re.exit != ign.exit || re.data()["code"] != ign.data()["code"] {
		t.Fatalf("unconfirmed reopen: exit %d %s; unconfirmed ignore: exit %d %s", re.exit, re.stdout, ign.exit, ign.stdout)
	}
	if st := p.ok("show", id).str("status"); st != "ignored" {
		t.Fatalf("the unconfirmed reopen ran: %s", st)
	}
	if st := p.ok("reopen", id, "--reason", "back in scope after all", "--yes").str("status"); st != "unverified" {
		t.Fatalf("a confirmed reopen: %s", st)
	}
}

// A person may move a claim under review: at their terminal, with the
// approver passphrase, which the refusal of the unproven owner asks for;
// the verifier's spawn ends as superseded.
func TestAPersonAtTheTerminalMovesAClaimUnderReview(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	agent := []string{"DONT_HARNESS=1", "DONT_AUTHOR=agent-7"}
	id := p.runEnv(agent, "conclude", "water boils at 100 C at sea level").str("id")
	rid := p.runEnv(agent, "assume", id, "--json").str("request_id")
	p.setPassphrase()
	r := p.typed(testPassphrase+"\n", nil, "dismiss", id, "--evidence", "https://example.org/its-90")
	if r.exit != 0 || r.str("status") != "verified" {
		t.Fatalf("the person's dismiss: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if st := p.ok("spawns", "manage", "--op", "show", "--request-id", rid).str("state"); st == "pending" {
		t.Fatalf("the verifier's spawn is still pending after the person's move")
	}
	// A wrong passphrase moves nothing.
	id2 := p.runEnv(agent, "conclude", "ice melts at 0 C").str("id")
	p.runEnv(agent, "assume", id2, "--json")
	if r := p.typed("not it\n", nil, "dismiss", id2, "--evidence", "https://example.org/x"); r.exit == 0 || r.data()["code"] != "person-not-proven" {
		t.Fatalf("a wrong passphrase: exit %d %s", r.exit, r.stdout)
	}
	if st := p.ok("show", id2).str("status"); st != "unverified" {
		t.Fatalf("the claim moved on a wrong passphrase: %s", st)
	}
}
