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

// ParseBearer splits a presented bearer token into id and secret.
func ParseBearer(tok string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(tok, bearerPrefix)
	if !found {
		return "", "", false
	}
	// Ids have no underscore; secrets (base64url) may.
	id, secret, found = strings.Cut(rest, "_")
	if !found || id == "" || secret == "" {
		return "", "", false
	}
	return id, secret, true
}

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

// ParseCallback checks a callback token's MAC and returns its request id.
func ParseCallback(projectSecret []byte, tok string) (requestID string, ok bool) {
	requestID, project, sig, found := splitCallback(tok)
	if !found {
		return "", false
	}
	want := mac(projectSecret, requestID)
	if project != "" {
		want = macOf(projectSecret, project, requestID)
	}
	return requestID, subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1
}

// CallbackProject is the project a callback token names, unverified (the
// project's secret verifies it); "" if it names none.
func CallbackProject(tok string) string {
	_, project, _, _ := splitCallback(tok)
	return project
}

func splitCallback(tok string) (requestID, project, sig string, ok bool) {
	rest, found := strings.CutPrefix(tok, callbackPrefix)
	if !found {
		return "", "", "", false
	}
	head, sig, found := strings.Cut(rest, "_")
	if !found {
		return "", "", "", false
	}
	requestID, hexProject, named := strings.Cut(head, ".")
	if named {
		p, err := hex.DecodeString(hexProject)
		if err != nil || len(p) == 0 {
			return "", "", "", false
		}
		project = string(p)
	}
	return requestID, project, sig, requestID != ""
}

// IsCallback reports whether a presented token is shaped like a callback token.
func IsCallback(tok string) bool { return strings.HasPrefix(tok, callbackPrefix) }

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
