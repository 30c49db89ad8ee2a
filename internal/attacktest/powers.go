package attacktest

import (
	"net/http"
	"strings"
)

// An agent cannot choose its own power: above the person's session
// ceiling (workspace-write unless the person set another) a session needs
// a person's token.
func harnessCannotOpenASessionAboveTheCeiling(r run) {
	harness, admin := r.target.Token(r.t, "harness"), r.target.Token(r.t, "admin")
	rep := r.call(harness, "sessions.open", map[string]any{"tier": "danger-full-access"})
	r.refused(rep, http.StatusForbidden, "session-above-ceiling", "a harness opening a danger-full-access session")
	if !strings.Contains(rep.Raw, "dont escalate") {
		r.t.Fatalf("the remediation does not say how to ask for the one call: %s", rep.Raw)
	}
	for _, s := range r.ok(admin, "sessions.list", nil).Data()["sessions"].([]any) {
		if m, _ := s.(map[string]any); m["tier"] == "danger-full-access" {
			r.t.Fatalf("the refused open left a session: %v", m)
		}
	}
	r.ok(harness, "sessions.open", map[string]any{"tier": "workspace-write"})
	if tier := r.ok(admin, "sessions.open", map[string]any{"tier": "danger-full-access"}).Str("tier"); tier != "danger-full-access" {
		r.t.Fatalf("a person's open: tier %q", tier)
	}
}

// A callback token is shown once, at issue, to the agent that asked: no
// later read gives it to anyone, the requester included.
func harnessCannotReadACallbackToken(r run) {
	harness, other := r.target.Token(r.t, "harness"), r.target.Token(r.t, "harness")
	_, rid, cb := r.spawned(harness)
	for _, who := range []string{other, harness} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"show", map[string]any{"id": rid}},
			{"spawns", map[string]any{"all": true}},
			{"spawns", map[string]any{"pending": true}},
			{"spawns.manage", map[string]any{"op": "show", "request_id": rid}},
			{"spawns.manage", map[string]any{"op": "list"}},
		} {
			if rep := r.ok(who, c.tool, c.args); strings.Contains(rep.Raw, cb) || strings.Contains(rep.Raw, "dontcb_") {
				r.t.Fatalf("%s %v carries a callback token: %s", c.tool, c.args, rep.Raw)
			}
		}
	}
	// The request is still there to read, without its token.
	cbOf := func(rep Reply) map[string]any { m, _ := rep.Data()["callback"].(map[string]any); return m }
	if c := cbOf(r.ok(other, "show", map[string]any{"id": rid})); c["request_id"] != rid || c["token"] != nil {
		r.t.Fatalf("show %s: callback %v", rid, c)
	}
}

// Only the agent that asked a question (or a person) withdraws it.
func harnessCannotCancelAnotherHarnesssQuestion(r run) {
	harness, other, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	r.refused(r.call(other, "approvals.cancel", map[string]any{"id": apr, "reason": "withdrawn for you"}), http.StatusForbidden, "not-requester",
		"another harness withdrawing the question")
	if st := r.ok(harness, "approvals.show", map[string]any{"id": apr}).Str("state"); st != "pending" {
		r.t.Fatalf("the refused cancel ended the question: %s", st)
	}
	if v := r.ok(harness, "approvals.cancel", map[string]any{"id": apr, "reason": "not needed"}).Str("verdict"); v != "cancelled" {
		r.t.Fatalf("the requester's cancel: %q", v)
	}
}

// Only the agent that asked for a spawn (or its callback token, or a
// person) keeps it alive, cancels it or resolves it.
func harnessCannotTouchAnotherHarnesssSpawn(r run) {
	harness, other := r.target.Token(r.t, "harness"), r.target.Token(r.t, "harness")
	claim, rid, _ := r.spawned(harness)
	before := r.ok(harness, "spawns.manage", map[string]any{"op": "show", "request_id": rid}).Str("expires_at")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"spawns.heartbeat", map[string]any{"request_id": rid, "extend": "720h"}},
		{"spawns.cancel", map[string]any{"request_id": rid, "reason": "mine now"}},
		{"spawns.manage", map[string]any{"op": "cancel", "request_id": rid, "reason": "mine now"}},
		{"dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/x"}, "request_id": rid}},
		{"trust", map[string]any{"id": claim, "reason": "ITS-90 gives 99.97 C at 1 atm", "request_id": rid}},
	} {
		r.refused(r.call(other, c.tool, c.args, confirmedByCLI), http.StatusForbidden, "not-requester", "another harness calling "+c.tool)
	}
	sp := r.ok(harness, "spawns.manage", map[string]any{"op": "show", "request_id": rid})
	if sp.Str("state") != "pending" || sp.Str("expires_at") != before {
		r.t.Fatalf("the refused calls moved the spawn: %s", sp.Raw)
	}
	if st := r.status(harness, claim); st != "unverified" {
		r.t.Fatalf("the claim moved: %s", st)
	}
	// The agent that asked may.
	if moved := r.ok(harness, "spawns.heartbeat", map[string]any{"request_id": rid, "extend": "1m"}).Str("state"); moved != "pending" {
		r.t.Fatalf("the requester's heartbeat: %s", moved)
	}
}

// Doubt is enforced on the agent that asked: while its verifier's spawn is
// pending, the claim moves only by that spawn's callback or a person.
func harnessCannotVerifyBesideItsVerifier(r run) {
	harness, admin := r.target.Token(r.t, "harness"), r.target.Token(r.t, "admin")
	claim, rid, cb := r.spawned(harness)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/its-90"}}},
		{"trust", map[string]any{"id": claim, "reason": "ITS-90 gives 99.97 C at 1 atm"}},
		{"ignore", map[string]any{"id": claim, "reason": "out of scope for this run"}},
	} {
		rep := r.call(harness, c.tool, c.args, confirmedByCLI)
		r.refused(rep, http.StatusConflict, "spawn-pending", "the harness calling "+c.tool+" beside its verifier")
		if !strings.Contains(rep.Raw, rid) {
			r.t.Fatalf("the refusal does not name the pending spawn %s: %s", rid, rep.Raw)
		}
	}
	if st := r.status(harness, claim); st != "unverified" {
		r.t.Fatalf("the claim moved: %s", st)
	}
	// The spawn's callback moves it.
	if st := r.ok(cb, "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/its-90"}, "request_id": rid}).Str("status"); st != "verified" {
		r.t.Fatalf("the callback: %s", st)
	}
	// A person moves it too, and the spawn ends as cancelled.
	other, otherRID, _ := r.spawned(harness)
	if st := r.ok(admin, "trust", map[string]any{"id": other, "reason": "ITS-90 gives 99.97 C at 1 atm"}).Str("status"); st != "doubted" {
		r.t.Fatalf("a person's doubt: %s", st)
	}
	sp := r.ok(harness, "spawns.manage", map[string]any{"op": "show", "request_id": otherRID})
	if sp.Str("state") != "resolved" || sp.Str("outcome") != "cancelled" {
		r.t.Fatalf("the superseded spawn: %s", sp.Raw)
	}
}

// Reopening an ignored entity undoes a confirmed ignore: it needs the
// same confirmation.
func reopenIsGatedLikeIgnore(r run) {
	harness := r.target.Token(r.t, "harness")
	id := r.verifiedClaim(harness)
	r.held(r.call(harness, "ignore", map[string]any{"id": id, "reason": "out of scope for this run"}), "an unconfirmed ignore")
	r.ok(harness, "ignore", map[string]any{"id": id, "reason": "out of scope for this run"}, confirmedByCLI)
	r.held(r.call(harness, "reopen", map[string]any{"id": id, "reason": "back in scope after all"}), "an unconfirmed reopen")
	if st := r.status(harness, id); st != "ignored" {
		r.t.Fatalf("the unconfirmed reopen ran: %s", st)
	}
	if st := r.ok(harness, "reopen", map[string]any{"id": id, "reason": "back in scope after all"}, confirmedByCLI).Str("status"); st != "unverified" {
		r.t.Fatalf("a confirmed reopen: %s", st)
	}
}
