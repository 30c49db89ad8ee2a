package auth

// RoleOwner is the person at the embedded CLI with no harness signal: the
// project's own user, who can already write .dont/ and so holds every
// role. It is never a bearer token's role. Answering for a person
// (approving, confirming) still needs that person at the controlling
// terminal; the CLI checks that (docs/security.md).
const RoleOwner = "owner"

// Principal is who is calling. Every call runs as exactly one principal,
// decided by its transport in one place: a bearer token's role over HTTP
// and Lambda, a harness for `dont mcp` and for the embedded CLI under a
// harness signal, the owner for the embedded CLI otherwise.
type Principal struct {
	Role    string
	TokenID string // bearer tokens
	Project string
	// Callback tokens are scoped to one spawn.
	RequestID string
	// Name labels a principal that has no token (the embedded transports).
	Name string
	// Unproven: the embedded CLI's owner before the person typed the
	// approver passphrase. It holds every role, but what only a person
	// decides (IsPerson) it does not: the process may be an agent that
	// dropped its harness signal (docs/security.md, "The approver
	// passphrase").
	Unproven bool
	// Passkey: the caller presented a passkey session (PasskeySession),
	// so it signed in with one of the approver's passkeys.
	Passkey bool
}

// Harness is the principal of an agent on an embedded transport.
func Harness(name string) Principal { return Principal{Role: RoleHarness, Name: name} }

// Owner is the principal of the project's own user at the embedded CLI.
func Owner(name string) Principal { return Principal{Role: RoleOwner, Name: name} }

// UnprovenOwner is the embedded CLI's owner before the passphrase.
func UnprovenOwner(name string) Principal {
	return Principal{Role: RoleOwner, Name: name, Unproven: true}
}

// ID names the principal on the records that keep who acted: a token id
// (never a secret), callback:<request id>, or the embedded name.
func (p Principal) ID() string {
	switch {
	case p.TokenID != "":
		return p.TokenID
	case p.RequestID != "":
		return "callback:" + p.RequestID
	}
	return p.Name
}

// Holds reports whether the principal holds role r. The owner holds every
// bearer role; a callback principal holds none (its powers are its
// spawn's, see service.CheckCallback).
func (p Principal) Holds(r string) bool {
	if p.Role == RoleOwner {
		return ValidRole(r)
	}
	return p.Role != RoleCallback && p.Role == r
}

// IsPerson reports whether the principal is a person's: an approver or
// admin token, or the owner at the embedded CLI. A harness (a harness
// token, `dont mcp`, the CLI under a harness signal) and a callback token
// are agents. The powers only a person holds (opening a session above the
// ceiling, acting on another agent's spawn or question, moving an entity
// while its verification spawn is pending) check this.
func (p Principal) IsPerson() bool {
	if p.Unproven {
		return false
	}
	switch p.Role {
	case RoleApprover, RoleAdmin, RoleOwner:
		return true
	}
	return false
}

// May reports whether the principal may call a tool whose allowed roles
// are given: it holds one of them.
func (p Principal) May(allowed []string) bool {
	for _, r := range allowed {
		if p.Holds(r) {
			return true
		}
	}
	return false
}

// RoleAllows reports whether a bearer role may call a tool whose allowed
// roles are given. Callback principals are checked by the spawn rules
// (see service.CheckCallback), never by role lists.
func RoleAllows(role string, allowed []string) bool {
	return Principal{Role: role}.May(allowed)
}
