package approvals

import (
	"crypto/sha256"
	"crypto/subtle"
	"time"
)

// Passkey rules (docs/approvals.md, "Passkeys"; docs/security.md). The
// person may require, per project, that an approve of a question whose
// tier is at or above a level carries a fresh user-verified WebAuthn
// assertion whose challenge is bound to that question and to the digest
// of what was shown. An agent on the same machine holds the approver's
// token at worst, never the authenticator's user verification.

// PasskeyGrantTTL is how long an approve challenge may be answered: long
// enough for a fingerprint, short enough that a stolen one is stale.
const PasskeyGrantTTL = 2 * time.Minute

// tierRank orders the tiers from the narrowest.
func tierRank(t Tier) int {
	for i, u := range Tiers {
		if u == t {
			return i
		}
	}
	return -1
}

// PasskeyRequired reports whether approving a question for tier to needs
// a passkey assertion when the person requires one from tier from. An
// empty from requires none; an unknown to (never stored) requires one.
func PasskeyRequired(from, to Tier) bool {
	if from == "" {
		return false
	}
	r := tierRank(to)
	return r < 0 || r >= tierRank(from)
}

// PasskeyChallenge is the WebAuthn challenge of an approve: the SHA-256 of
// a single-use server nonce, the question's id and the shown digest, each
// length-prefixed so that no two different triples share bytes. An
// assertion over it signs exactly that question as shown.
func PasskeyChallenge(nonce []byte, approvalID, shownDigest string) []byte {
	h := sha256.New()
	h.Write([]byte("dont-passkey-approve-v1"))
	for _, part := range [][]byte{nonce, []byte(approvalID), []byte(shownDigest)} {
		var n [4]byte
		l := len(part)
		n[0], n[1], n[2], n[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		h.Write(n[:])
		h.Write(part)
	}
	return h.Sum(nil)
}

// PasskeyGrant is a pending approve challenge as the service keeps it
// between its begin and the approve that spends it.
type PasskeyGrant struct {
	Nonce       []byte
	ApprovalID  string
	ShownDigest string
	// Approver is the approver (token id) the challenge was issued to:
	// only one of their credentials may answer it.
	Approver string
	Expires  time.Time
}

// Why a passkey assertion does not count for an approve.
const (
	PasskeyOtherQuestion = "the assertion was made for another question"
	PasskeyOtherDigest   = "the assertion was made for another version of the question"
	PasskeyOtherApprover = "the assertion was made for another approver"
	PasskeyExpired       = "the assertion's challenge has expired"
	PasskeyWrongBytes    = "the assertion's challenge is not the one issued"
)

// Binds reports why g does not bind an approve of approvalID as shown by
// shownDigest, by approver, answering challenge at now ("" when it does).
func (g PasskeyGrant) Binds(approvalID, shownDigest, approver string, challenge []byte, now time.Time) string {
	switch {
	case g.ApprovalID != approvalID:
		return PasskeyOtherQuestion
	case !DigestMatches(g.ShownDigest, shownDigest):
		return PasskeyOtherDigest
	case g.Approver != approver:
		return PasskeyOtherApprover
	case !now.Before(g.Expires):
		return PasskeyExpired
	case subtle.ConstantTimeCompare(challenge, PasskeyChallenge(g.Nonce, g.ApprovalID, g.ShownDigest)) != 1:
		return PasskeyWrongBytes
	}
	return ""
}

// ParsePasskeyLevel reads a passkey_required_from value: a tier, or
// "" / "off" for none. ok is false for anything else.
func ParsePasskeyLevel(v string) (Tier, bool) {
	switch v {
	case "", "off":
		return "", true
	}
	if t := Tier(v); t.Valid() {
		return t, true
	}
	return "", false
}
