package httpapi_test

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// registeringRP is a relying party that accepts any registration: the
// credential is the one the response names. It stands in for a browser's
// authenticator in tests of the key, not of WebAuthn.
type registeringRP struct{}

func (registeringRP) BeginRegistration(string, []store.PasskeyCredential) (json.RawMessage, json.RawMessage, []byte, error) {
	challenge := make([]byte, 32)
	rand.Read(challenge)
	return json.RawMessage(`{"publicKey":{}}`), json.RawMessage(`{}`), challenge, nil
}

func (registeringRP) FinishRegistration(_ string, _, response json.RawMessage) (store.PasskeyCredential, error) {
	var named struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(response, &named); err != nil || named.ID == "" {
		return store.PasskeyCredential{}, errors.New("no credential id")
	}
	return store.PasskeyCredential{ID: named.ID, Data: json.RawMessage(`{}`)}, nil
}

func (registeringRP) BeginAssertion(string, []store.PasskeyCredential, []byte) (json.RawMessage, json.RawMessage, error) {
	return nil, nil, errors.New("not in this test")
}
func (registeringRP) AssertedChallenge(json.RawMessage) ([]byte, error) {
	return nil, errors.New("not in this test")
}
func (registeringRP) FinishAssertion(string, []store.PasskeyCredential, json.RawMessage, json.RawMessage) (store.PasskeyCredential, error) {
	return store.PasskeyCredential{}, errors.New("not in this test")
}
func (registeringRP) BeginSignIn() (json.RawMessage, json.RawMessage, []byte, error) {
	return nil, nil, nil, errors.New("not in this test")
}
func (registeringRP) Signer(json.RawMessage) (string, error) {
	return "", errors.New("not in this test")
}

const pageOrigin = "http://localhost:8080"

// A keyed passkeys.register-finish cut by a crash after it stored the
// passkey (its challenge spent, the key's completion lost): the retry,
// once the claim is stale, reports that passkey instead of
// idempotency-outcome-unknown or refusing the spent challenge, and the
// approver has one passkey. Another approver who sends the same key and
// body learns nothing of it: its call runs as its own and is refused.
func TestAKeyedPasskeyRegistrationCutAfterItStoredReportsThatPasskeyOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano()) // the passkey is dated by the clock the key is
	a.svc.PasskeyRP = func(string) (service.PasskeyRelyingParty, error) { return registeringRP{}, nil }
	approver := a.tokens["approver"]
	page := []string{confirm.CapsHeader, confirm.CLICaps, "Origin", pageOrigin}
	begin := a.api.raw(approver, "passkeys.register-begin", `{"cli_confirmed":true}`, page...)
	challenge := begin.str("challenge")
	if begin.status != 200 || challenge == "" {
		t.Fatalf("register-begin: %d %s", begin.status, begin.raw)
	}
	credential, _ := json.Marshal(map[string]any{"id": "Y3JlZC0x", "type": "public-key"})
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"challenge": challenge, "credential": string(credential)}, "cli_confirmed": true})
	finish := func(token string) reply {
		return a.api.raw(token, "passkeys.register-finish", string(body), append([]string{"Idempotency-Key", "reg-1"}, page...)...)
	}
	store.cut.Store(true)
	first := finish(approver)
	store.cut.Store(false)
	if first.status != 200 || first.str("credential_id") != "Y3JlZC0x" {
		t.Fatalf("register-finish: %d %s", first.status, first.raw)
	}
	store.late.Store(int64(2 * idempotency.StaleClaim))
	again := finish(approver)
	if again.status != 200 || again.str("credential_id") != "Y3JlZC0x" || again.str("approver") != first.str("approver") {
		t.Fatalf("a retry once the claim is stale: %d %s", again.status, again.raw)
	}
	other, err := a.svc.Credentials.Create(t.Context(), "approver", "another approver")
	if err != nil {
		t.Fatal(err)
	}
	if stolen := finish(other.Secret); stolen.status/100 == 2 || stolen.code() != string(service.PasskeyInvalid) {
		t.Fatalf("another approver's retry of the key: %d %s", stolen.status, stolen.raw)
	}
	store.late.Store(0)
	creds, err := a.store.Passkeys(t.Context(), first.str("approver"))
	if err != nil || len(creds) != 1 {
		t.Fatalf("the approver has %d passkeys, want 1: %v", len(creds), err)
	}
}

// A keyed passkeys.register-begin cut by a crash: the retry, once the
// claim is stale, issues a challenge that works (the lost one expires
// unanswered) instead of idempotency-outcome-unknown.
func TestAKeyedPasskeyChallengeLostToACrashIsIssuedAfreshOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano())
	a.svc.PasskeyRP = func(string) (service.PasskeyRelyingParty, error) { return registeringRP{}, nil }
	approver := a.tokens["approver"]
	page := []string{"Idempotency-Key", "begin-1", confirm.CapsHeader, confirm.CLICaps, "Origin", pageOrigin}
	first, again := func() (reply, reply) {
		store.cut.Store(true)
		first := a.api.raw(approver, "passkeys.register-begin", `{"cli_confirmed":true}`, page...)
		store.cut.Store(false)
		store.late.Store(int64(2 * idempotency.StaleClaim))
		defer store.late.Store(0)
		return first, a.api.raw(approver, "passkeys.register-begin", `{"cli_confirmed":true}`, page...)
	}()
	if first.status != 200 || again.status != 200 || again.str("challenge") == "" || again.str("challenge") == first.str("challenge") {
		t.Fatalf("register-begin, then its retry once the claim is stale: %d %s\n%d %s", first.status, first.raw, again.status, again.raw)
	}
	credential, _ := json.Marshal(map[string]any{"id": "Y3JlZC0y", "type": "public-key"})
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"challenge": again.str("challenge"), "credential": string(credential)}, "cli_confirmed": true})
	if r := a.api.raw(approver, "passkeys.register-finish", string(body), page[2:]...); r.status != 200 {
		t.Fatalf("the retry's challenge does not register: %d %s", r.status, r.raw)
	}
}
