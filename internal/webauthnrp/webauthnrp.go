// Package webauthnrp is dont's WebAuthn relying party: the adapter that
// runs passkey ceremonies with github.com/go-webauthn/webauthn for the
// service's port (service.PasskeyRelyingParty). What counts as an answer
// (which tiers need a passkey, which question a challenge names) is
// internal/approvals'; this package only speaks WebAuthn.
package webauthnrp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// New returns the relying party of a page origin ("http://localhost:8080",
// "https://dont.example.com"): its RP ID is the origin's host name, and
// only that origin's assertions verify. Browsers allow WebAuthn on https
// origins and on http://localhost; an IP address is no RP ID.
func New(origin string) (service.PasskeyRelyingParty, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Path != "" && u.Path != "/" {
		return nil, errors.New("the page origin must be http(s)://host[:port], got " + origin)
	}
	host := u.Hostname()
	if u.Scheme == "http" && host != "localhost" && !strings.HasSuffix(host, ".localhost") {
		return nil, errors.New("browsers allow passkeys only on https origins or http://localhost, not " + origin)
	}
	w, err := webauthn.New(&webauthn.Config{RPID: host, RPDisplayName: "dont", RPOrigins: []string{u.Scheme + "://" + u.Host}})
	if err != nil {
		return nil, err
	}
	return rp{w: w}, nil
}

type rp struct{ w *webauthn.WebAuthn }

// user is an approver as WebAuthn sees one: its handle is the approver
// token's id (never a secret).
type user struct {
	id    string
	creds []webauthn.Credential
}

func (u user) WebAuthnID() []byte                         { return []byte(u.id) }
func (u user) WebAuthnName() string                       { return u.id }
func (u user) WebAuthnDisplayName() string                { return "dont approver " + u.id }
func (u user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func userOf(approver string, creds []store.PasskeyCredential) (user, error) {
	u := user{id: approver}
	for _, c := range creds {
		var wc webauthn.Credential
		if err := json.Unmarshal(c.Data, &wc); err != nil {
			return u, err
		}
		u.creds = append(u.creds, wc)
	}
	return u, nil
}

func (r rp) BeginRegistration(approver string, existing []store.PasskeyCredential) (json.RawMessage, json.RawMessage, []byte, error) {
	u, err := userOf(approver, existing)
	if err != nil {
		return nil, nil, nil, err
	}
	var exclude []protocol.CredentialDescriptor
	for _, c := range u.creds {
		exclude = append(exclude, c.Descriptor())
	}
	creation, session, err := r.w.BeginRegistration(u,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementPreferred, UserVerification: protocol.VerificationRequired}),
		webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, nil, nil, err
	}
	return marshalCeremony(creation, session)
}

func (r rp) FinishRegistration(approver string, session, response json.RawMessage) (store.PasskeyCredential, error) {
	var sd webauthn.SessionData
	if err := json.Unmarshal(session, &sd); err != nil {
		return store.PasskeyCredential{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return store.PasskeyCredential{}, describe(err)
	}
	cred, err := r.w.CreateCredential(user{id: approver}, sd, parsed)
	if err != nil {
		return store.PasskeyCredential{}, describe(err)
	}
	if !cred.Flags.UserVerified {
		return store.PasskeyCredential{}, errors.New("the authenticator did not verify the user")
	}
	return record(approver, *cred)
}

func (r rp) BeginAssertion(approver string, creds []store.PasskeyCredential, challenge []byte) (json.RawMessage, json.RawMessage, error) {
	u, err := userOf(approver, creds)
	if err != nil {
		return nil, nil, err
	}
	assertion, session, err := r.w.BeginLogin(u, webauthn.WithChallenge(challenge), webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, nil, err
	}
	opts, sess, _, err := marshalCeremony(assertion, session)
	return opts, sess, err
}

func (r rp) AssertedChallenge(response json.RawMessage) ([]byte, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, describe(err)
	}
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(parsed.Response.CollectedClientData.Challenge, "="))
}

func (r rp) FinishAssertion(approver string, creds []store.PasskeyCredential, session, response json.RawMessage) (store.PasskeyCredential, error) {
	u, err := userOf(approver, creds)
	if err != nil {
		return store.PasskeyCredential{}, err
	}
	var sd webauthn.SessionData
	if err := json.Unmarshal(session, &sd); err != nil {
		return store.PasskeyCredential{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return store.PasskeyCredential{}, describe(err)
	}
	// The library checks the UV flag because the session requires it;
	// checked again here, since it is the whole point.
	if !parsed.Response.AuthenticatorData.Flags.HasUserVerified() {
		return store.PasskeyCredential{}, errors.New("the authenticator did not verify the user")
	}
	var cred *webauthn.Credential
	if len(sd.UserID) == 0 { // a sign-in: the credential named its user (Signer)
		_, cred, err = r.w.ValidatePasskeyLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
			if string(userHandle) != approver {
				return nil, errors.New("the passkey belongs to another approver")
			}
			return u, nil
		}, sd, parsed)
	} else {
		cred, err = r.w.ValidateLogin(u, sd, parsed)
	}
	if err != nil {
		return store.PasskeyCredential{}, describe(err)
	}
	if cred.Authenticator.CloneWarning {
		return store.PasskeyCredential{}, errors.New("the authenticator's signature counter went backwards (a cloned credential?)")
	}
	out, err := record(approver, *cred)
	for _, c := range creds {
		if c.ID == out.ID {
			out.CreatedAt = c.CreatedAt
		}
	}
	return out, err
}

func record(approver string, c webauthn.Credential) (store.PasskeyCredential, error) {
	data, err := json.Marshal(c)
	return store.PasskeyCredential{ID: base64.RawURLEncoding.EncodeToString(c.ID), Approver: approver, Data: data}, err
}

func marshalCeremony(options any, session *webauthn.SessionData) (json.RawMessage, json.RawMessage, []byte, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := json.Marshal(session)
	if err != nil {
		return nil, nil, nil, err
	}
	challenge, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(session.Challenge, "="))
	return opts, sess, challenge, err
}

// describe keeps the library's detail, which says what failed.
func describe(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return errors.New(pe.Details)
	}
	return err
}

func (r rp) BeginSignIn() (json.RawMessage, json.RawMessage, []byte, error) {
	assertion, session, err := r.w.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, nil, nil, err
	}
	return marshalCeremony(assertion, session)
}

func (r rp) Signer(response json.RawMessage) (string, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return "", describe(err)
	}
	if len(parsed.Response.UserHandle) == 0 {
		return "", errors.New("the passkey gave no user handle")
	}
	return string(parsed.Response.UserHandle), nil
}
