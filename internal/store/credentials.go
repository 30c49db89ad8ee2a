package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dont-cli/dont/internal/auth"
)

// TokenStore keeps bearer tokens (hashes only) and the project secret that
// callback tokens are derived from.
type TokenStore interface {
	PutToken(ctx context.Context, t auth.Token) error
	GetToken(ctx context.Context, id string) (auth.Token, error)
	ListTokens(ctx context.Context) ([]auth.Token, error)
	// RevokeToken marks a token revoked; ErrNotFound if it does not exist.
	RevokeToken(ctx context.Context, id string, at time.Time) error
	// ProjectSecret returns the project's secret, or ErrNotFound if it has
	// none; it never writes (a store of one project may make its one
	// secret on first use instead).
	ProjectSecret(ctx context.Context) ([]byte, error)
	// CreateProjectSecret makes the project's secret if it has none and
	// returns it: when an operator creates the project (or at an
	// authenticated caller's first spawn in a project older than that),
	// never while a request is being authenticated.
	CreateProjectSecret(ctx context.Context) ([]byte, error)
}

// RotatingSecrets is a TokenStore whose project secret has versions (on
// AWS: each sealed by KMS, a new one made by the operator's rotation).
// Callback tokens name the version they were made under, so a rotation
// never invalidates the token of a spawn already issued. A token without a
// version was made under version "1".
type RotatingSecrets interface {
	// CurrentSecret is the version new callback tokens are made under;
	// ErrNotFound if the project has no secret.
	CurrentSecret(ctx context.Context) (keyID string, secret []byte, err error)
	// SecretVersion is one version; ErrNotFound if there is no such version.
	SecretVersion(ctx context.Context, keyID string) ([]byte, error)
	// RotateSecret makes a new current version; ErrNotFound if the project
	// has no secret yet.
	RotateSecret(ctx context.Context) (keyID string, err error)
}

// FirstSecretVersion is the version of a project's first secret, and of
// every callback token that names none.
const FirstSecretVersion = "1"

// PasskeyCredential is one approver's registered credential. Data is the
// relying party's own record of it (public key, sign count, flags), kept
// as it gives it.
type PasskeyCredential struct {
	ID        string          `json:"credential_id"` // base64url, unpadded
	Approver  string          `json:"approver"`      // the approver token's id
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
}

// PasskeyCeremony is a challenge issued and not yet answered. Key is the
// challenge (base64url): an answer names it, and taking it spends it.
type PasskeyCeremony struct {
	Key         string          `json:"key"`
	Kind        string          `json:"kind"`
	Approver    string          `json:"approver"`
	ApprovalID  string          `json:"approval_id,omitempty"`
	ShownDigest string          `json:"shown_digest,omitempty"`
	Nonce       []byte          `json:"nonce,omitempty"`
	Session     json.RawMessage `json:"session"`
	Expires     time.Time       `json:"expires"`
}

// PasskeyStore keeps a project's passkeys and open ceremonies. A store
// offers it by implementing these methods; one that does not answers
// passkeys-unavailable.
type PasskeyStore interface {
	// PutPasskey stores c, replacing the credential of the same id.
	PutPasskey(ctx context.Context, c PasskeyCredential) error
	// Passkeys returns approver's credentials, oldest first.
	Passkeys(ctx context.Context, approver string) ([]PasskeyCredential, error)
	// PutPasskeyCeremony creates c; ConditionFailed if its key exists.
	PutPasskeyCeremony(ctx context.Context, c PasskeyCeremony) error
	// TakePasskeyCeremony deletes and returns the ceremony of key; of two
	// concurrent takers only one gets it, the other ErrNotFound.
	TakePasskeyCeremony(ctx context.Context, key string) (PasskeyCeremony, error)
}

// SlackLink maps one Slack user (of one workspace) to the approver token
// that made the link.
type SlackLink struct {
	Team     string    `json:"team_id"`
	User     string    `json:"user_id"`
	TokenID  string    `json:"token_id"`
	LinkedAt time.Time `json:"linked_at"`
}

// SlackLinkCode is a one-time link code as stored: its hash only.
type SlackLinkCode struct {
	Hash      string    `json:"hash"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SlackLinkStore keeps Slack links and link codes. Both stores implement
// it beside their TokenStore (internal/storetest: "slack links").
type SlackLinkStore interface {
	// PutSlackLinkCode stores c; ConditionFailed if its hash is stored.
	PutSlackLinkCode(ctx context.Context, c SlackLinkCode) error
	// TakeSlackLinkCode removes the code of hash and returns it: one
	// caller of many racing gets it, the others ErrNotFound.
	TakeSlackLinkCode(ctx context.Context, hash string) (SlackLinkCode, error)
	// PutSlackLink stores l, replacing the user's previous link.
	PutSlackLink(ctx context.Context, l SlackLink) error
	// GetSlackLink returns the user's link, or ErrNotFound.
	GetSlackLink(ctx context.Context, team, user string) (SlackLink, error)
	// PutSlackMessage records where a question's message was posted in a
	// channel, so that its ending updates it in place.
	PutSlackMessage(ctx context.Context, m SlackMessage) error
	// GetSlackMessage returns the question's message in the channel, or
	// ErrNotFound.
	GetSlackMessage(ctx context.Context, channel, approvalID string) (SlackMessage, error)
}

// SlackMessage is where a question's message is: its channel and ts.
type SlackMessage struct {
	ApprovalID string `json:"approval_id"`
	Channel    string `json:"channel"`
	TS         string `json:"ts"`
}
