package service

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/store"
)

// Passkeys are approvers' WebAuthn credentials and the approve that needs
// one (docs/approvals.md, "Passkeys"). The rules are approvals'
// (PasskeyRequired, PasskeyChallenge, PasskeyGrant.Binds); the WebAuthn
// ceremony is a PasskeyRelyingParty's (internal/webauthnrp).
type Passkeys struct{ *core }

// Error codes of passkeys.
const (
	// PasskeyRequired refuses an approve without a passkey assertion of a
	// question whose tier the person requires one for.
	PasskeyRequired errs.Code = "passkey-required"
	// PasskeyInvalid refuses an assertion or a registration that does not
	// count: for another question, digest or approver, replayed, expired,
	// not user-verified, or not signed by the approver's credential.
	PasskeyInvalid errs.Code = "passkey-invalid"
	// PasskeysUnavailable: the store keeps no passkeys, or the transport
	// knows no page origin to bind them to.
	PasskeysUnavailable errs.Code = "passkeys-unavailable"
)

// Ceremony kinds.
const (
	CeremonyRegister = "register"
	CeremonyApprove  = "approve"
	CeremonySignIn   = "signin"
)

// PasskeyRelyingParty runs WebAuthn's ceremonies for one page origin.
// Options are what the browser's navigator.credentials call takes
// (publicKey options, JSON); session is the relying party's state between
// begin and finish.
type PasskeyRelyingParty interface {
	BeginRegistration(approver string, existing []store.PasskeyCredential) (options, session json.RawMessage, challenge []byte, err error)
	FinishRegistration(approver string, session, response json.RawMessage) (store.PasskeyCredential, error)
	// BeginAssertion asks one of creds to sign challenge, with user
	// verification required.
	BeginAssertion(approver string, creds []store.PasskeyCredential, challenge []byte) (options, session json.RawMessage, err error)
	// AssertedChallenge is the challenge response claims to answer (not
	// yet verified: FinishAssertion verifies it).
	AssertedChallenge(response json.RawMessage) ([]byte, error)
	// FinishAssertion verifies response against session and creds (the
	// signature, the origin, the challenge, user verification) and returns
	// the credential that signed, with its sign count moved on.
	FinishAssertion(approver string, creds []store.PasskeyCredential, session, response json.RawMessage) (store.PasskeyCredential, error)
	// BeginSignIn asks any passkey of this relying party to sign in
	// (a discoverable credential names its approver), with user
	// verification required.
	BeginSignIn() (options, session json.RawMessage, challenge []byte, err error)
	// Signer is the approver response's credential claims to be
	// (its user handle; not yet verified: FinishAssertion verifies it).
	Signer(response json.RawMessage) (string, error)
}

// PasskeyRP makes the relying party of a page origin ("https://host[:port]").
type PasskeyRP func(origin string) (PasskeyRelyingParty, error)

type originKey struct{}

// WithPageOrigin records the origin the approvals page was served from,
// which passkeys are bound to. The HTTP transport sets it (the deployment's
// public URL, or the request's own host).
func WithPageOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

func (s *core) passkeyParts(ctx context.Context) (store.PasskeyStore, PasskeyRelyingParty, string, error) {
	p := s.PrincipalOf(ctx)
	if p.TokenID == "" || p.Role != auth.RoleApprover {
		return nil, nil, "", errs.E(PasskeysUnavailable, "a passkey belongs to an approver token: sign in to the approvals page with one")
	}
	ps, rp, err := s.passkeyRP(ctx)
	return ps, rp, p.TokenID, err
}

// passkeyRP is the store and the relying party of the calling page.
func (s *core) passkeyRP(ctx context.Context) (store.PasskeyStore, PasskeyRelyingParty, error) {
	ps, ok := s.Store.(store.PasskeyStore)
	origin, _ := ctx.Value(originKey{}).(string)
	if !ok || s.PasskeyRP == nil || origin == "" {
		return nil, nil, errs.E(PasskeysUnavailable, "passkeys need the approvals page of dont serve or the API function (a page origin to bind them to)")
	}
	// A deployment with a public URL binds passkeys to its origin only;
	// without one (dont serve on localhost) the calling page's origin is
	// the relying party's (docs/approvals.md, "Passkeys").
	if pub := s.HooksConfig.PublicURL; pub != "" {
		if u, err := url.Parse(pub); err != nil || u.Scheme+"://"+u.Host != origin {
			return nil, nil, errs.E(PasskeysUnavailable, "passkeys of this project belong to the page at "+quoteID(pub)+", not "+quoteID(origin))
		}
	}
	rp, err := s.PasskeyRP(origin)
	if err != nil {
		return nil, nil, errs.E(PasskeysUnavailable, "cannot bind passkeys to "+quoteID(origin)+": "+err.Error())
	}
	return ps, rp, nil
}

// PasskeyOptions are the options of a browser ceremony and the key that
// names it.
type PasskeyOptions struct {
	Options   json.RawMessage `json:"options"`
	Challenge string          `json:"challenge"`
	Expires   time.Time       `json:"expires"`
}

// RegisterBegin starts registering a passkey for the calling approver.
func (s *Passkeys) RegisterBegin(ctx context.Context) (PasskeyOptions, error) {
	ps, rp, approver, err := s.passkeyParts(ctx)
	if err != nil {
		return PasskeyOptions{}, err
	}
	creds, err := ps.Passkeys(ctx, approver)
	if err != nil {
		return PasskeyOptions{}, storeErr(err)
	}
	// The token registers the first passkey only (trust on first use):
	// once one exists, another is added only by a caller signed in with a
	// passkey, so an agent that reads the token later cannot register a
	// software authenticator of its own (docs/security.md, "Passkeys").
	if len(creds) > 0 && !s.PrincipalOf(ctx).Passkey {
		return PasskeyOptions{}, errs.E(PasskeyRequired, "this approver has a passkey already: sign in with it to add another; the token alone registers only the first").
			Unmet("a second passkey is added by a caller signed in with the first")
	}
	opts, session, challenge, err := rp.BeginRegistration(approver, creds)
	if err != nil {
		return PasskeyOptions{}, errs.E(PasskeysUnavailable, "cannot begin a registration: "+err.Error())
	}
	c := store.PasskeyCeremony{Key: base64.RawURLEncoding.EncodeToString(challenge), Kind: CeremonyRegister, Approver: approver, Session: session,
		Expires: s.now().Add(approvals.PasskeyGrantTTL)}
	if err := ps.PutPasskeyCeremony(ctx, c); err != nil {
		return PasskeyOptions{}, storeErr(err)
	}
	return PasskeyOptions{Options: opts, Challenge: c.Key, Expires: c.Expires}, nil
}

// PasskeyView is a registered passkey as callers see it.
type PasskeyView struct {
	ID        string    `json:"credential_id"`
	Approver  string    `json:"approver"`
	CreatedAt time.Time `json:"created_at"`
}

// RegisterFinish stores the credential the browser made for challenge.
func (s *Passkeys) RegisterFinish(ctx context.Context, challenge string, response json.RawMessage) (PasskeyView, error) {
	return s.RegisterFinishResuming(ctx, challenge, response, time.Time{})
}

// RegisterFinishResuming is RegisterFinish for a keyed call whose earlier
// run (cut by a crash) claimed its key at resumeSince (the zero time:
// none): if that run stored the credential, the call reports it
// (resumedPasskey) instead of refusing the spent challenge; otherwise it
// runs, and a challenge the cut run spent is refused as used — nothing
// was registered, and the page begins again.
func (s *Passkeys) RegisterFinishResuming(ctx context.Context, challenge string, response json.RawMessage, resumeSince time.Time) (PasskeyView, error) {
	ps, rp, approver, err := s.passkeyParts(ctx)
	if err != nil {
		return PasskeyView{}, err
	}
	if !resumeSince.IsZero() {
		if v, ok, err := resumedPasskey(ctx, ps, approver, response, resumeSince); err != nil || ok {
			return v, err
		}
	}
	c, err := s.takeCeremony(ctx, ps, challenge, CeremonyRegister, approver)
	if err != nil {
		return PasskeyView{}, err
	}
	cred, err := rp.FinishRegistration(approver, c.Session, response)
	if err != nil {
		return PasskeyView{}, passkeyInvalid("the registration does not verify: " + err.Error())
	}
	cred.Approver, cred.CreatedAt = approver, s.now()
	if err := ps.PutPasskey(ctx, cred); err != nil {
		return PasskeyView{}, storeErr(err)
	}
	return PasskeyView{ID: cred.ID, Approver: approver, CreatedAt: cred.CreatedAt}, nil
}

// resumedPasskey is the credential a cut run of a keyed register-finish
// stored, ok false if it stored none: the calling approver's own passkey
// whose id is the one response names, registered within the key's
// lifetime (idempotency.Window before the retry's claim). Only the
// caller's own passkeys are read, so a retry learns nothing of another
// approver's, and it reports an id the caller itself sent.
func resumedPasskey(ctx context.Context, ps store.PasskeyStore, approver string, response json.RawMessage, resumeSince time.Time) (PasskeyView, bool, error) {
	var named struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(response, &named) != nil || named.ID == "" {
		return PasskeyView{}, false, nil
	}
	creds, err := ps.Passkeys(ctx, approver)
	if err != nil {
		return PasskeyView{}, false, storeErr(err)
	}
	for _, c := range creds {
		if c.ID == named.ID && c.Approver == approver && !c.CreatedAt.Before(resumeSince.Add(-idempotency.Window)) {
			return PasskeyView{ID: c.ID, Approver: approver, CreatedAt: c.CreatedAt}, true, nil
		}
	}
	return PasskeyView{}, false, nil
}

// ApproveBegin issues the challenge an approve of question id needs: a
// fresh nonce bound to the question and to the digest of what is shown
// now (approvals.PasskeyChallenge), single-use, for PasskeyGrantTTL.
func (s *Passkeys) ApproveBegin(ctx context.Context, id string) (PasskeyOptions, error) {
	ps, rp, approver, err := s.passkeyParts(ctx)
	if err != nil {
		return PasskeyOptions{}, err
	}
	st, err := s.approvalStore()
	if err != nil {
		return PasskeyOptions{}, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return PasskeyOptions{}, err
	}
	creds, err := ps.Passkeys(ctx, approver)
	if err != nil {
		return PasskeyOptions{}, storeErr(err)
	}
	if len(creds) == 0 {
		return PasskeyOptions{}, errs.E(PasskeyRequired, "this approver has no passkey; register one on the approvals page first").On(id).
			Unmet("an approver who answers with a passkey has registered one")
	}
	nonce := make([]byte, 32)
	if _, err := crand.Read(nonce); err != nil {
		return PasskeyOptions{}, err
	}
	digest := approvals.ShownDigest(a.Shown())
	challenge := approvals.PasskeyChallenge(nonce, a.ID, digest)
	opts, session, err := rp.BeginAssertion(approver, creds, challenge)
	if err != nil {
		return PasskeyOptions{}, errs.E(PasskeysUnavailable, "cannot begin an assertion: "+err.Error())
	}
	c := store.PasskeyCeremony{Key: base64.RawURLEncoding.EncodeToString(challenge), Kind: CeremonyApprove, Approver: approver, ApprovalID: a.ID,
		ShownDigest: digest, Nonce: nonce, Session: session, Expires: s.now().Add(approvals.PasskeyGrantTTL)}
	if err := ps.PutPasskeyCeremony(ctx, c); err != nil {
		return PasskeyOptions{}, storeErr(err)
	}
	return PasskeyOptions{Options: opts, Challenge: c.Key, Expires: c.Expires}, nil
}

func (s *core) takeCeremony(ctx context.Context, ps store.PasskeyStore, key, kind, approver string) (store.PasskeyCeremony, error) {
	c, err := ps.TakePasskeyCeremony(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return c, passkeyInvalid("the challenge was never issued, or was already used (a passkey answer counts once)")
	case err != nil:
		return c, storeErr(err)
	case c.Kind != kind:
		return c, passkeyInvalid("the challenge was issued for a " + c.Kind + ", not a " + kind)
	case c.Approver != approver:
		return c, passkeyInvalid(approvals.PasskeyOtherApprover)
	case !s.now().Before(c.Expires):
		return c, passkeyInvalid(approvals.PasskeyExpired)
	}
	return c, nil
}

func passkeyInvalid(why string) *errs.Error {
	return errs.E(PasskeyInvalid, "the passkey answer does not count: "+why+"; nothing was answered").
		Unmet("a passkey answer is a fresh user-verified assertion of the approver's own credential over the challenge issued for this question as shown")
}

// passkeyGate is the approve path's passkey check (Answer): an approve of
// a's tier at or above the person's level needs an assertion (response,
// the browser's PublicKeyCredential as JSON) over the challenge issued for
// this question as shown (digest), by the calling approver. Refusals, and
// approves below the level, pass. The ceremony is spent before anything
// is verified, so an assertion is never verified twice.
func (s *core) passkeyGate(ctx context.Context, a approvals.Approval, d approvals.Decision, digest string, response json.RawMessage) error {
	if d.Verdict != approvals.Approved || !approvals.PasskeyRequired(s.Approvals.PasskeyRequiredFrom, a.To) || a.State != approvals.Pending {
		return nil
	}
	if len(response) == 0 {
		return errs.E(PasskeyRequired, a.ID+" asks for "+string(a.To)+", which this project approves only with a passkey; nothing was answered").
			On(a.ID).Unmet("an approve at or above " + string(s.Approvals.PasskeyRequiredFrom) + " carries a passkey assertion for the question as shown")
	}
	ps, rp, approver, err := s.passkeyParts(ctx)
	if err != nil {
		return err
	}
	challenge, err := rp.AssertedChallenge(response)
	if err != nil {
		return passkeyInvalid("the assertion cannot be read: " + err.Error())
	}
	c, err := s.takeCeremony(ctx, ps, base64.RawURLEncoding.EncodeToString(challenge), CeremonyApprove, approver)
	if err != nil {
		return err
	}
	g := approvals.PasskeyGrant{Nonce: c.Nonce, ApprovalID: c.ApprovalID, ShownDigest: c.ShownDigest, Approver: c.Approver, Expires: c.Expires}
	if digest == "" {
		digest = approvals.ShownDigest(a.Shown())
	}
	if why := g.Binds(a.ID, digest, approver, challenge, s.now()); why != "" {
		return passkeyInvalid(why)
	}
	creds, err := ps.Passkeys(ctx, approver)
	if err != nil {
		return storeErr(err)
	}
	cred, err := rp.FinishAssertion(approver, creds, c.Session, response)
	if err != nil {
		return passkeyInvalid("the assertion does not verify: " + err.Error())
	}
	cred.Approver = approver
	if err := ps.PutPasskey(ctx, cred); err != nil {
		return storeErr(err)
	}
	return nil
}

// passkeyCheck reads the question and holds an approve to passkeyGate;
// without a level it reads nothing.
func (s *core) passkeyCheck(ctx context.Context, in AnswerInput, d approvals.Decision) error {
	if s.Approvals.PasskeyRequiredFrom == "" || d.Verdict != approvals.Approved {
		return nil
	}
	st, err := s.approvalStore()
	if err != nil {
		return err
	}
	a, err := s.approvalRecord(ctx, st, in.ApprovalID)
	if err != nil {
		return err
	}
	return s.passkeyGate(ctx, a, d, in.ShownDigest, in.PasskeyAssertion)
}

// PasskeySignIn is a passkey sign-in: the session credential the page
// holds instead of the approver's token (auth.PasskeySession).
type PasskeySignIn struct {
	Session  string    `json:"session"`
	Approver string    `json:"approver"`
	Expires  time.Time `json:"expires"`
}

// SignInBegin starts a passkey sign-in. It needs no token: the passkey is
// the credential.
func (s *Passkeys) SignInBegin(ctx context.Context) (PasskeyOptions, error) {
	ps, rp, err := s.passkeyRP(ctx)
	if err != nil {
		return PasskeyOptions{}, err
	}
	opts, session, challenge, err := rp.BeginSignIn()
	if err != nil {
		return PasskeyOptions{}, errs.E(PasskeysUnavailable, "cannot begin a sign-in: "+err.Error())
	}
	c := store.PasskeyCeremony{Key: base64.RawURLEncoding.EncodeToString(challenge), Kind: CeremonySignIn, Session: session, Expires: s.now().Add(approvals.PasskeyGrantTTL)}
	if err := ps.PutPasskeyCeremony(ctx, c); err != nil {
		return PasskeyOptions{}, storeErr(err)
	}
	return PasskeyOptions{Options: opts, Challenge: c.Key, Expires: c.Expires}, nil
}

// SignInFinish verifies a sign-in assertion and returns a session
// credential for the approver whose passkey signed, if their token is
// still an unrevoked approver token.
func (s *Passkeys) SignInFinish(ctx context.Context, challenge string, response json.RawMessage) (PasskeySignIn, error) {
	ps, rp, err := s.passkeyRP(ctx)
	if err != nil {
		return PasskeySignIn{}, err
	}
	c, err := s.takeCeremony(ctx, ps, challenge, CeremonySignIn, "")
	if err != nil {
		return PasskeySignIn{}, err
	}
	approver, err := rp.Signer(response)
	if err != nil {
		return PasskeySignIn{}, passkeyInvalid("the assertion names no approver: " + err.Error())
	}
	creds, err := ps.Passkeys(ctx, approver)
	if err != nil {
		return PasskeySignIn{}, storeErr(err)
	}
	if len(creds) == 0 {
		return PasskeySignIn{}, passkeyInvalid("no approver has this passkey")
	}
	cred, err := rp.FinishAssertion(approver, creds, c.Session, response)
	if err != nil {
		return PasskeySignIn{}, passkeyInvalid("the assertion does not verify: " + err.Error())
	}
	ts, err := s.tokens()
	if err != nil {
		return PasskeySignIn{}, err
	}
	t, err := ts.GetToken(ctx, approver)
	if err != nil || t.RevokedAt != nil || t.Role != auth.RoleApprover {
		return PasskeySignIn{}, passkeyInvalid("the approver token this passkey belongs to is revoked or unknown")
	}
	cred.Approver = approver
	if err := ps.PutPasskey(ctx, cred); err != nil {
		return PasskeySignIn{}, storeErr(err)
	}
	// The secret's first version signs sessions (passkeySession reads it
	// back the same way); issuingSecret makes it if the project has none.
	if _, _, err := issuingSecret(ctx, ts); err != nil {
		return PasskeySignIn{}, storeErr(err)
	}
	secret, err := callbackSecret(ctx, ts, "")
	if err != nil {
		return PasskeySignIn{}, storeErr(err)
	}
	exp := s.now().Add(auth.PasskeySessionTTL).Truncate(time.Second)
	return PasskeySignIn{Session: auth.PasskeySession(secret, approver, exp), Approver: approver, Expires: exp}, nil
}

// passkeySession resolves a passkey session to the approver token it
// stands for, which must still be an unrevoked approver token.
func (s *Credentials) passkeySession(ctx context.Context, ts store.TokenStore, presented string) (auth.Principal, error) {
	secret, err := callbackSecret(ctx, ts, "")
	if errors.Is(err, store.ErrNotFound) {
		return auth.Principal{}, errs.E(Unauthenticated, "invalid passkey session")
	}
	if err != nil {
		return auth.Principal{}, storeErr(err)
	}
	id, ok := auth.ParsePasskeySession(secret, presented, s.now())
	if !ok {
		return auth.Principal{}, errs.E(Unauthenticated, "invalid or expired passkey session: sign in again")
	}
	t, err := ts.GetToken(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (t.RevokedAt != nil || t.Role != auth.RoleApprover) {
		return auth.Principal{}, errs.E(Unauthenticated, "the approver token this passkey session stands for was revoked")
	}
	if err != nil {
		return auth.Principal{}, storeErr(err)
	}
	return auth.Principal{Role: t.Role, TokenID: t.ID, Project: t.Project, Passkey: true}, nil
}
