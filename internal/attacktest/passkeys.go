package attacktest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// RunPasskeys runs the passkey attacks (docs/approvals.md, "Passkeys")
// against a target whose project approves danger-full-access only with
// a passkey (passkey_required_from, DONT_PASSKEY_REQUIRED_FROM) and whose
// page origin is PasskeyOrigin. The attacks that need a real
// authenticator's assertion (another question, another digest, a replay,
// no user verification) run in Chromium with a virtual authenticator
// against dont serve (cli/dont/web_passkey_test.go).
func RunPasskeys(t *testing.T, target Target) {
	tests := []struct {
		name string
		f    func(r run)
	}{
		{"an approve at the passkey tier with only a token answers nothing", tokenOnlyApproveAtThePasskeyTier},
		{"an approve with a forged assertion answers nothing", forgedAssertionAnswersNothing},
		{"a harness token cannot register a passkey or take an approve challenge", harnessCannotUsePasskeyCeremonies},
		{"a forged passkey session reads nothing", forgedPasskeySessionReadsNothing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(run{t: t, target: target}) })
	}
}

// PasskeyOrigin is the page origin the passkey attacks call from.
const PasskeyOrigin = "http://localhost"

var fromThePage = map[string]any{"cli_confirmed": true, "X-Dont-CLI-Caps": "cli-confirm-v1", "Origin": PasskeyOrigin}

func (r run) stillPending(token, id, what string) {
	r.t.Helper()
	if st := r.ok(token, "approvals.show", map[string]any{"id": id}).Str("state"); st != "pending" {
		r.t.Fatalf("%s answered the question: %s", what, st)
	}
}

func tokenOnlyApproveAtThePasskeyTier(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	r.refused(r.call(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": r.questionDigest(approver, apr)}, fromThePage),
		http.StatusForbidden, "passkey-required", "an approve with only the approver token")
	r.stillPending(harness, apr, "a token-only approve")
	// A refusal needs no passkey.
	if v := r.ok(approver, "approvals.refuse", map[string]any{"id": apr, "shown_digest": r.questionDigest(approver, apr)}, fromThePage).Str("verdict"); v != "refused" {
		r.t.Fatalf("a token-only refusal: verdict %q", v)
	}
}

// forgedAssertion is an assertion-shaped JSON over a challenge the server
// never issued, signed by nobody.
func forgedAssertion(t *testing.T) string {
	random := func(n int) []byte { b := make([]byte, n); rand.Read(b); return b }
	b64 := base64.RawURLEncoding.EncodeToString
	client, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": b64(random(32)), "origin": PasskeyOrigin, "crossOrigin": false})
	rpID := sha256.Sum256([]byte("localhost"))
	authData := append(rpID[:], 0x05, 0, 0, 0, 1) // user present and verified, counter 1
	id := b64(random(16))
	body, _ := json.Marshal(map[string]any{"id": id, "rawId": id, "type": "public-key", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64(client), "authenticatorData": b64(authData), "signature": b64(random(64)), "userHandle": b64([]byte("tok:x"))}})
	return string(body)
}

func forgedAssertionAnswersNothing(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	for what, assertion := range map[string]string{"a forged assertion": forgedAssertion(r.t), "an assertion that is not JSON": "{", "an empty object": "{}"} {
		r.refused(r.call(approver, "approvals.approve", map[string]any{"id": apr, "shown_digest": r.questionDigest(approver, apr), "passkey_assertion": assertion}, fromThePage),
			http.StatusForbidden, "passkey-invalid", what)
	}
	r.stillPending(harness, apr, "a forged assertion")
	r.ok(approver, "approvals.refuse", map[string]any{"id": apr, "shown_digest": r.questionDigest(approver, apr)}, fromThePage)
}

func harnessCannotUsePasskeyCeremonies(r run) {
	harness, approver := r.target.Token(r.t, "harness"), r.target.Token(r.t, "approver")
	apr := r.askedQuestion(harness, approver)
	r.refused(r.call(harness, "passkeys.register-begin", nil, fromThePage), http.StatusForbidden, "forbidden", "a harness beginning a passkey registration")
	r.refused(r.call(harness, "passkeys.approve-begin", map[string]any{"id": apr}, fromThePage), http.StatusForbidden, "forbidden", "a harness taking an approve challenge")
	r.stillPending(harness, apr, "a harness's passkey calls")
	r.ok(approver, "approvals.refuse", map[string]any{"id": apr, "shown_digest": r.questionDigest(approver, apr)}, fromThePage)
}

func forgedPasskeySessionReadsNothing(r run) {
	approver := r.target.Token(r.t, "approver")
	id := r.ok(approver, "whoami", nil).Str("principal")
	if id == "" {
		r.t.Fatalf("whoami names no token id: %v", r.ok(approver, "whoami", nil).Raw)
	}
	exp := time.Now().Add(time.Hour).Unix()
	mac := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	forged := "dontpks_" + id + "_" + itoa(exp) + "_" + mac
	rep := r.call(forged, "approvals.list", nil)
	if rep.Status != http.StatusUnauthorized || rep.Env["ok"] != false {
		r.t.Fatalf("a forged passkey session: %d %s", rep.Status, rep.Raw)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
