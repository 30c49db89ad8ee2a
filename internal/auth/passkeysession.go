package auth

import (
	"crypto/hmac"
	"strconv"
	"strings"
	"time"
)

// A passkey session is what the approvals page holds after an approver
// signed in with their passkey instead of pasting their token:
// dontpks_<token id>_<expiry, unix seconds>_<MAC>. It stands for that one
// approver token — the MAC, under the project's secret, binds the token
// id and the expiry — and counts only while the token is not revoked and
// until the expiry (PasskeySessionTTL). It reaches no further than the
// token: every call it makes is the token's.
const passkeySessionPrefix = "dontpks_"

// PasskeySessionTTL is how long a passkey sign-in lasts: a working
// session at the page, not a standing credential.
const PasskeySessionTTL = 12 * time.Hour

// PasskeySession makes the session token of tokenID, valid until expires.
func PasskeySession(secret []byte, tokenID string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return passkeySessionPrefix + tokenID + "_" + exp + "_" + sign(secret, "dont-passkey-session-v1\x00"+tokenID+"\x00"+exp)
}

// IsPasskeySession reports whether a presented token is shaped like a
// passkey session (its prefix).
func IsPasskeySession(tok string) bool { return strings.HasPrefix(tok, passkeySessionPrefix) }

// splitPasskeySession checks the shape of a passkey session.
func splitPasskeySession(tok string) (tokenID, exp, mac string, ok bool) {
	rest, found := strings.CutPrefix(tok, passkeySessionPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "_")
	// The MAC (base64url) may hold underscores: it is the rest.
	if len(parts) < 3 || !isID(parts[0], tokenKind) {
		return "", "", "", false
	}
	tokenID, exp = parts[0], parts[1]
	mac = strings.Join(parts[2:], "_")
	if _, err := strconv.ParseInt(exp, 10, 64); err != nil || !isMAC(mac) {
		return "", "", "", false
	}
	return tokenID, exp, mac, true
}

// ParsePasskeySession returns the token id a passkey session stands for,
// if its MAC verifies under secret and it has not expired at now.
func ParsePasskeySession(secret []byte, tok string, now time.Time) (tokenID string, ok bool) {
	tokenID, exp, got, ok := splitPasskeySession(tok)
	if !ok {
		return "", false
	}
	want := sign(secret, "dont-passkey-session-v1\x00"+tokenID+"\x00"+exp)
	if !hmac.Equal([]byte(got), []byte(want)) {
		return "", false
	}
	unix, _ := strconv.ParseInt(exp, 10, 64)
	if !now.Before(time.Unix(unix, 0)) {
		return "", false
	}
	return tokenID, true
}
