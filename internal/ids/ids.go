// Package ids makes and checks dont's identifiers: a kind prefix and a ULID,
// such as claim:01HX05A9K8VP….
package ids

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Kinds of identifier.
const (
	Claim    = "claim"
	Term     = "term"
	Spawn    = "spawn"
	Event    = "event"
	Approval = "apr"
	Session  = "ses"
	Token    = "tok"
	Request  = "req"
	// Confirmation is a call held for an approver (the server's own confirmation flow).
	Confirmation = "conf"
	// Hook is a webhook subscription; Message one announced event (its webhook-id).
	Hook    = "hook"
	Message = "msg"
)

// entropy draws each id's random part from the operating system's
// generator (ULID's default is math/rand seeded by the clock), so nobody
// can tell the next question's or token's id from one they saw. Nothing
// grants a power for knowing an id, but nothing need learn it early.
var (
	mu      sync.Mutex
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// New returns a fresh id of the kind, timestamped at t. IDs made in one
// process sort in creation order.
func New(kind string, t time.Time) string {
	mu.Lock()
	id := ulid.MustNew(ulid.Timestamp(t), entropy)
	mu.Unlock()
	return kind + ":" + id.String()
}

// Kind returns the prefix of a well-formed id, or "" if id is malformed.
func Kind(id string) string {
	kind, rest, ok := strings.Cut(id, ":")
	if !ok || rest == "" {
		return ""
	}
	switch kind {
	case Claim, Term, Spawn, Event, Approval, Session, Token, Request, Confirmation, Hook, Message:
		if _, err := ulid.ParseStrict(rest); err != nil {
			return ""
		}
		return kind
	}
	return ""
}
