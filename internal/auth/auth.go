// Package auth holds dont's credentials: bearer tokens (random, shown once,
// stored as SHA-256 hashes, compared in constant time) with roles, and
// per-spawn callback tokens (an HMAC of the request id under the project's
// secret, so they are never stored at all). It decides which tools a
// principal may call; it does no I/O.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// Roles of bearer tokens.
const (
	RoleHarness  = "harness"  // creates and reads claims and spawns, opens sessions, requests escalations
	RoleApprover = "approver" // answers approvals
	RoleAdmin    = "admin"    // manages tokens
	// RoleCallback is the role of a spawn's callback token.
	RoleCallback = "callback"
)

// Roles lists the roles a bearer token can have.
var Roles = []string{RoleHarness, RoleApprover, RoleAdmin}

// ValidRole reports whether r is a bearer token role.
func ValidRole(r string) bool {
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}

// Token is a stored bearer token: never the secret, only its hash.
type Token struct {
	ID        string     `json:"id"`
	Project   string     `json:"project,omitempty"`
	Role      string     `json:"role"`
	Name      string     `json:"name,omitempty"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

const (
	bearerPrefix   = "dont_"
	callbackPrefix = "dontcb_"
)

// NewSecret returns a token's secret part: 256 random bits.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// BearerString is the whole token a client presents: dont_<id>_<secret>.
func BearerString(id, secret string) string { return bearerPrefix + id + "_" + secret }

// FromAuthorization is the token of an Authorization header value that
// uses the Bearer scheme, else "". The scheme name is case-insensitive
// and may be followed by more than one space (RFC 7235 §2.1, RFC 6750
// §2.1): "Bearer x", "bearer x" and "BEARER  x" all present x.
func FromAuthorization(header string) string {
	scheme, rest, found := strings.Cut(strings.TrimLeft(header, " "), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.Trim(rest, " \t")
}

// ParseBearer splits a presented bearer token into id and secret. Only
// the shape NewSecret and BearerString make is accepted — a token id
// (tok:<ULID>) and a 43-character base64url secret — so that garbage is
// refused on its face, before any store is asked about it.
func ParseBearer(tok string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(tok, bearerPrefix)
	if !found {
		return "", "", false
	}
	// Ids have no underscore; secrets (base64url) may.
	id, secret, found = strings.Cut(rest, "_")
	if !found || !isID(id, tokenKind) || !isMAC(secret) {
		return "", "", false
	}
	return id, secret, true
}

// WellFormed reports whether a presented token has the shape of a bearer
// or a callback token this package makes. It reads nothing: a transport
// refuses any other token before it costs a store read or a hash.
func WellFormed(tok string) bool {
	if IsCallback(tok) {
		_, _, _, _, ok := splitCallback(tok)
		return ok
	}
	if IsPasskeySession(tok) {
		_, _, _, ok := splitPasskeySession(tok)
		return ok
	}
	_, _, ok := ParseBearer(tok)
	return ok
}

// Kinds of the ids a token names (internal/ids's, which this package
// does not import).
const (
	tokenKind = "tok"
	spawnKind = "spawn"
)

// encodedLen is the length of 32 bytes in unpadded base64url: a bearer
// secret (NewSecret) and a callback token's MAC (sign) both have it.
var encodedLen = base64.RawURLEncoding.EncodedLen(32)

// isMAC reports whether s is 32 bytes in unpadded base64url.
func isMAC(s string) bool {
	if len(s) != encodedLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == 32
}

// isID reports whether s is kind:<ULID> (26 characters of Crockford's
// base32, upper case, the first at most 7: a 128-bit value).
func isID(s, kind string) bool {
	u, found := strings.CutPrefix(s, kind+":")
	if !found || len(u) != 26 || u[0] > '7' {
		return false
	}
	for i := 0; i < len(u); i++ {
		if !strings.ContainsRune(crockford, rune(u[i])) {
			return false
		}
	}
	return true
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Hash is what is stored for a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Matches compares a presented secret with a stored hash in constant time.
func Matches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(Hash(secret)), []byte(hash)) == 1
}

// CallbackToken is the token a spawn request carries: it names the request
// and proves the project issued it.
func CallbackToken(projectSecret []byte, requestID string) string {
	return CallbackTokenOf(projectSecret, "", requestID)
}

// CallbackTokenOf is CallbackToken for a store shared by many projects: the
// token also names its project (hex-encoded, after the request id), so
// that a deployment can route it without a lookup; the MAC covers both.
func CallbackTokenOf(projectSecret []byte, project, requestID string) string {
	if project == "" {
		return callbackPrefix + requestID + "_" + mac(projectSecret, requestID)
	}
	return callbackPrefix + requestID + "." + hex.EncodeToString([]byte(project)) + "_" + macOf(projectSecret, project, requestID)
}

// CallbackTokenKeyed is CallbackTokenOf under one version of a project's
// rotating secret: the token also names the version (keyID, e.g. "2"), so
// that tokens issued before a rotation still verify under the secret they
// were made with. The MAC covers project, version and request id.
func CallbackTokenKeyed(secret []byte, project, keyID, requestID string) string {
	if keyID == "" {
		return CallbackTokenOf(secret, project, requestID)
	}
	return callbackPrefix + requestID + "." + hex.EncodeToString([]byte(project)) + "." + keyID + "_" + macKeyed(secret, project, keyID, requestID)
}

// ParseCallback checks a callback token's MAC and returns its request id.
func ParseCallback(projectSecret []byte, tok string) (requestID string, ok bool) {
	return ParseCallbackKeyed(func(string) ([]byte, bool) { return projectSecret, true }, tok)
}

// ParseCallbackKeyed checks a callback token's MAC under the secret that
// secretOf returns for the key id the token names ("" for a token without
// one) and returns its request id.
func ParseCallbackKeyed(secretOf func(keyID string) ([]byte, bool), tok string) (requestID string, ok bool) {
	requestID, project, keyID, sig, found := splitCallback(tok)
	if !found {
		return "", false
	}
	secret, known := secretOf(keyID)
	if !known {
		return "", false
	}
	want := mac(secret, requestID)
	switch {
	case keyID != "":
		want = macKeyed(secret, project, keyID, requestID)
	case project != "":
		want = macOf(secret, project, requestID)
	}
	return requestID, subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1
}

// CallbackKeyID is the secret version a callback token names, unverified;
// "" if it names none.
func CallbackKeyID(tok string) string {
	_, _, keyID, _, _ := splitCallback(tok)
	return keyID
}

// CallbackProject is the project a callback token names, unverified (the
// project's secret verifies it); "" if it names none.
func CallbackProject(tok string) string {
	_, project, _, _, _ := splitCallback(tok)
	return project
}

func splitCallback(tok string) (requestID, project, keyID, sig string, ok bool) {
	rest, found := strings.CutPrefix(tok, callbackPrefix)
	if !found {
		return "", "", "", "", false
	}
	head, sig, found := strings.Cut(rest, "_")
	if !found {
		return "", "", "", "", false
	}
	parts := strings.Split(head, ".")
	if len(parts) > 3 {
		return "", "", "", "", false
	}
	requestID = parts[0]
	if !strings.HasPrefix(requestID, spawnKind+":") || !isMAC(sig) {
		return "", "", "", "", false
	}
	if len(parts) >= 2 {
		p, err := hex.DecodeString(parts[1])
		if err != nil || len(p) == 0 {
			return "", "", "", "", false
		}
		project = string(p)
	}
	if len(parts) == 3 {
		keyID = parts[2]
		if !validKeyID(keyID) {
			return "", "", "", "", false
		}
	}
	return requestID, project, keyID, sig, requestID != ""
}

// validKeyID: a secret version is a short decimal number.
func validKeyID(k string) bool {
	if k == "" || len(k) > 6 {
		return false
	}
	for _, c := range k {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsCallback reports whether a presented token is shaped like a callback token.
func IsCallback(tok string) bool { return strings.HasPrefix(tok, callbackPrefix) }

func macKeyed(secret []byte, project, keyID, requestID string) string {
	return sign(secret, "dont-callback-v3\x00"+project+"\x00"+keyID+"\x00"+requestID)
}

func macOf(secret []byte, project, requestID string) string {
	return sign(secret, "dont-callback-v2\x00"+project+"\x00"+requestID)
}

// sign is the base64url HMAC-SHA256 of msg under secret.
func sign(secret []byte, msg string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func mac(secret []byte, requestID string) string {
	return sign(secret, "dont-callback-v1\x00"+requestID)
}
