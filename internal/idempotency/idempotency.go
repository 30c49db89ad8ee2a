// Package idempotency holds the port through which the HTTP API remembers
// the first response to each Idempotency-Key, so that every store (SQLite,
// DynamoDB) implements it without depending on the transport.
//
// What a store keeps, and for how long:
//
//   - A record lives Window (24 h) on every store: a key older than that is
//     absent (it may be claimed again), and the store deletes it — DynamoDB
//     by its ttl attribute, SQLite a bounded batch on each write.
//   - Read-only tools never reach the store (internal/httpapi): replaying a
//     read would answer stale data, and recording one costs writes.
//   - A response that carries a secret is never stored in replayable form.
//     StoredForm, the one place that knows which responses those are
//     (SecretFields), replaces the secret with Redacted and adds the warning
//     SecretNotReplayed. A replay of the key returns that redacted body with
//     the first response's status, ok and everything else: the secret was
//     shown once, to the first response, and is nowhere at rest. A client
//     that lost it revokes the token and creates another.
//
// When it is written: every keyed call of a tool whose write is one
// commit of the service (tools.Tool.CommitsKey: conclude, define, the
// status changes, answer, spawns cancel, heartbeat and manage; and
// assume, overlook and a callback token's calls) writes its record in
// that commit (Pending, Put, store.Tx.Key): the transport hands the
// Pending to the call as an argument (tools.CallOptions.Key, the service
// method's input), the service hands the result it is about to commit to
// Pending.Prepare, the store adds the record under its own condition (absent, or older than Window; otherwise
// ErrTaken and nothing is applied), and the transport sends exactly the
// bytes it stored. No claim is made before such a call: two requests with
// one key may both run, but only one commit can carry the key, and the
// other applies nothing and answers the first one's response. So a crash
// leaves either nothing (the retry applies the call once) or the write
// with its response (the retry replays it): there is no window in which
// a call is applied but its key unrecorded, on any store. The one
// exception is a record the service's own conditions make redundant
// (Put.MayDefer: an exclusive tool such as assume, or a callback token's
// call): DynamoDB defers those (Put.Deferred), as in the transaction they
// would cost more write units than the lifecycle's budget
// (docs/aws-cost.md); a retry after a crash between the two is refused by
// the service's conditions, never applied twice.
//
// A call whose whole write is one new record — hooks add, tokens create
// (and tokens manage --op create), sessions open, and any gated call held
// for confirmation — is a tool that CommitsKey too: the service hands
// the record's response to Pending.Prepare and the store writes the
// record and the key's Put in one transaction (store.KeyedPuts), under
// both conditions. A response carrying a secret is stored in StoredForm.
//
// Calls whose writes are not one commit of the service (guess, whose
// direct mode calls a provider between its writes; escalate, which waits
// for a person; hooks test, which sends to a receiver; the other
// approvals, hooks, passkeys and confirmations tools; sweeps) claim the
// key before they run and complete it after (Claim, Complete): three
// transactions. A crash after the write and before the completion leaves
// a claim. For a tool whose repeat changes nothing
// (tools.Tool.Idempotent: an approve, a revoke, a hook's removal, a
// sweep) or nothing harmful (tools.Tool.RerunSafe: hooks deliver,
// approvals slack-link) a retry takes the claim over once it is stale
// (StaleClaim) and runs again. escalate (tools.Tool.ResumesKey) takes a
// stale claim over too and resumes: it re-attaches to the question the
// cut run asked, if it asked one. For every other such tool (guess,
// hooks test, the passkeys steps) the transport reads the key first and answers a stale
// claim with OutcomeUnknown — the call may have been applied, so it is
// never run again under that key — and an interrupted call keeps its
// claim instead of releasing it (docs/proof.md, "Idempotency across
// crashes").
package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/spawn"
)

// Window is how long a key's first response is replayed.
const Window = 24 * time.Hour

// Store keeps the first response to each Idempotency-Key, for Window.
type Store interface {
	// Claim reserves key for a request whose body hashes to fingerprint. If
	// the key is already known (and younger than Window) it returns the
	// stored record instead.
	Claim(ctx context.Context, key, fingerprint string, now time.Time) (existing *Record, err error)
	// Complete stores the response of the claimed key.
	Complete(ctx context.Context, key string, status int, body []byte) error
	// Release forgets a claimed key whose request did not finish.
	Release(ctx context.Context, key string) error
	// Lookup returns the finished record of key, or nil (also for a record
	// older than Window): for calls that need no claim, because the service
	// applies them at most once by its own conditions (see internal/httpapi).
	// It may read a replica.
	Lookup(ctx context.Context, key string, now time.Time) (*Record, error)
	// Remember stores the response of an unclaimed key unless a response
	// younger than Window is stored already: the first to finish is
	// remembered.
	Remember(ctx context.Context, key, fingerprint string, status int, body []byte, now time.Time) error
}

// Scope is what a key's stored name begins with: the principal that
// sent it (a bearer token's id, or the spawn id a callback token is for)
// and the tool, so that one key means one call of one caller. A callback
// token's call names its spawn's entity too (entityID, the call's own
// argument, so unverified: a store trusts it only where the entity's
// record names the spawn), where a store that keeps the call's record
// with the entity looks first (SpawnOf).
func Scope(tokenID, spawnID, entityID, tool string) string {
	if spawnID != "" && ids.Kind(entityID) != "" {
		return tokenID + spawnID + "@" + entityID + "/" + tool
	}
	return tokenID + spawnID + "/" + tool
}

// SpawnOf is the spawn whose callback token a key stored as name came
// with (Scope), the entity the call named (unverified; "" if none) and
// the tool it called, if it came with one. A callback token answers one
// spawn, which is resolved once, so a store may keep the record of the
// call that resolved it on that resolution rather than as an item of its
// own (DynamoDB: docs/aws-cost.md), and find it there by these ids.
func SpawnOf(name string) (spawnID, entityID, tool string, ok bool) {
	head, rest, ok := strings.Cut(name, "/")
	if !ok {
		return "", "", "", false
	}
	spawnID, entityID, _ = strings.Cut(head, "@")
	if ids.Kind(spawnID) != ids.Spawn {
		return "", "", "", false
	}
	tool, _, ok = strings.Cut(rest, "/")
	return spawnID, entityID, tool, ok
}

// Record is a remembered request.
type Record struct {
	Fingerprint string
	Done        bool
	Status      int
	Body        []byte
	// At is when the key was claimed (or its response remembered); the
	// zero time if the store did not say.
	At time.Time
}

// StaleClaim is how long a claimed key whose request never finished
// blocks retries before a store lets Claim take it over (a crashed
// server). A transport that must not apply a call twice reads the key
// first (Lookup) and refuses a stale claim instead (OutcomeUnknown).
const StaleClaim = time.Minute

// OutcomeUnknown reports a claimed key whose request did not finish and
// was claimed at least StaleClaim before now: it may have been applied,
// and its response was not kept.
func (r *Record) OutcomeUnknown(now time.Time) bool {
	return r != nil && !r.Done && !r.At.IsZero() && !r.At.After(now.Add(-StaleClaim))
}

// SecretFields names, per envelope_kind, the fields of data that carry a
// secret shown once: a bearer token's (tokens.create, tokens.manage --op
// create, and confirmations.confirm of a held create all answer a "token"
// envelope with data.token). A spawn request's callback.token is not one:
// it is derived again from the project secret, which the same store keeps,
// and spawns.show returns it on demand, so storing it exposes nothing more
// and a retried assume still gets a usable token.
var SecretFields = map[string][]string{
	"token": {"token"},
	// hooks.add answers a "hook" envelope with the signing secret.
	"hook": {"secret"},
	// approvals.slack-link answers the one-time code that links whoever
	// sends it to the approver token (its store keeps only a hash); the
	// code also appears in data.command and the hints, and every
	// occurrence is redacted.
	"slack_link_code": {"code"},
}

// SecretNotReplayed is the warning code of a replayed response whose
// secret was not stored.
const SecretNotReplayed = envelope.WarnSecretNotReplayed

// Redacted stands where a secret was in a stored response.
const Redacted = "[redacted]"

// StoredForm is the form of a response body to store under its key: body
// itself unless it carries a secret (SecretFields); then a copy in which
// every occurrence of the secret is Redacted, with the warning
// SecretNotReplayed, to be replayed as it is.
//
// A spawn request's forbidden_tools, every tool of the registry that the
// request does not allow, is stored as null and derived again by
// ReplayForm: it is long, and kept it would make a remembered assume
// cost a second write unit on DynamoDB (docs/aws-cost.md).
func StoredForm(body []byte) []byte {
	body = withoutDerived(body)
	if k, ok := topKind(body); ok && len(SecretFields[k]) == 0 {
		return body // no secret: spared decoding the whole response
	}
	var env envelope.Envelope
	if json.Unmarshal(body, &env) != nil {
		return body
	}
	fields := SecretFields[env.Kind]
	if len(fields) == 0 {
		return body
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(env.Data, &data) != nil {
		return body
	}
	var secrets, names []string
	for _, f := range fields {
		var s string
		if json.Unmarshal(data[f], &s) == nil && s != "" && s != Redacted {
			secrets, names = append(secrets, s), append(names, "data."+f)
		}
	}
	if len(secrets) == 0 {
		return body
	}
	var id string
	_ = json.Unmarshal(data["id"], &id)
	msg := "this replays the first response to this Idempotency-Key without its secret (" + strings.Join(names, ", ") +
		"): a secret is shown once and never stored"
	if id != "" {
		msg += "; if it was lost, revoke " + id + " and create another"
	}
	env.Warnings = append(env.Warnings, envelope.Warning{Code: SecretNotReplayed, Message: msg})
	out := envelope.Marshal(env)
	for _, s := range secrets {
		out = bytes.ReplaceAll(out, jsonText(s), jsonText(Redacted))
	}
	return out
}

// kindKey is how envelope.Marshal writes envelope_kind, ahead of data.
var kindKey = []byte(`"envelope_kind":"`)

// topKind reads the envelope_kind of an envelope as envelope.Marshal
// writes it: the first `"envelope_kind":"` is the envelope's own (it
// comes before data, and inside a JSON string the quote after the key
// would be escaped), and a plain value ends at the next quote. ok is
// false for anything else, which is decoded in full.
func topKind(body []byte) (string, bool) {
	i := bytes.Index(body, kindKey)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(kindKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

const (
	forbiddenList   = `"forbidden_tools":[`
	forbiddenStored = `"forbidden_tools":null`
)

// withoutDerived stores a spawn request's forbidden_tools as null.
func withoutDerived(body []byte) []byte {
	i := bytes.Index(body, []byte(forbiddenList))
	if i < 0 {
		return body
	}
	end := bytes.IndexByte(body[i:], ']')
	if end < 0 {
		return body
	}
	out := append([]byte{}, body[:i]...)
	out = append(out, forbiddenStored...)
	return append(out, body[i+end+1:]...)
}

// ReplayForm is a stored body as it is sent again: a spawn request's
// forbidden_tools derived from its allowed_tools and tools (the tool
// registry's names, as the service that made it was given them), byte for
// byte as the first response had it.
func ReplayForm(stored []byte, tools []string) []byte {
	i := bytes.Index(stored, []byte(forbiddenStored))
	if i < 0 {
		return stored
	}
	var env struct {
		Data struct {
			Context struct {
				AllowedTools []string `json:"allowed_tools"`
			} `json:"context"`
		} `json:"data"`
	}
	if json.Unmarshal(stored, &env) != nil {
		return stored
	}
	list, err := envelope.MarshalData(spawn.ForbiddenTools(env.Data.Context.AllowedTools, tools))
	if err != nil {
		return stored
	}
	out := append([]byte{}, stored[:i]...)
	out = append(out, `"forbidden_tools":`...)
	out = append(out, list...)
	return append(out, stored[i+len(forbiddenStored):]...)
}

// jsonText is s as it appears inside a JSON string, without the quotes.
func jsonText(s string) []byte {
	b, _ := envelope.MarshalData(s)
	return b[1 : len(b)-1]
}

// Put is a key's first response written in the same commit as the call
// that made it (store.Tx.Key): the store adds it only if no record of
// the key younger than Window exists, and otherwise fails the whole
// commit with ErrTaken, applying nothing. Body is in StoredForm.
type Put struct {
	Name, Fingerprint string
	Status            int
	Body              []byte
	At                time.Time
	// MayDefer: the service's own conditions apply the call at most once
	// (an exclusive tool, a callback token's call), so a store may write
	// the record after the commit instead (Deferred). Without it the
	// record is an item of the call's commit on every store: nothing else
	// keeps a retry after a crash from applying the call again.
	MayDefer bool
	// Deferred is set by a store that does not add the record to the
	// call's transaction (DynamoDB: its cost): the commit applies the call
	// alone, and the response is remembered after it.
	Deferred bool
}

// ErrTaken is the failure of a commit whose Put found its key already
// recorded: a concurrent request with the same key committed first.
var ErrTaken = errors.New("idempotency: the key was recorded by another request")

// Pending is a keyed call whose response is to be written in the commit
// that applies it, handed to the call explicitly (tools.CallOptions.Key,
// then the service method's input, then its executor). The transport
// sets Name, Fingerprint, Encode and MayDefer, internal/tools sets
// Respond; the service, about to commit the call's writes, hands its
// result to Prepare and commits the Put it returns in the same
// transaction; the transport then sends exactly the bytes that were
// committed (Sent).
type Pending struct {
	Name, Fingerprint string
	// Respond makes the status and body a transport sends for a call's
	// result (the service's typed value and its warnings); ok false: this
	// result has no such response, and the call is remembered after its
	// commit as before. internal/tools sets it, presenting the result as
	// the tool does and handing that to Encode.
	Respond func(result any, warns []envelope.Warning) (status int, body []byte, ok bool)
	// Encode is the transport's: the status and body it sends for a
	// presented result (a tools.Output).
	Encode func(out any) (status int, body []byte, ok bool)
	// Clock dates the record as the transport's Lookup and Claim are
	// dated (nil: time.Now).
	Clock func() time.Time
	// MayDefer is Put.MayDefer for this call.
	MayDefer bool

	status int
	body   []byte
	sent   bool
	taken  bool
}

// Prepare is the Put of result's response, made before the commit, or
// nil when there is none (no Pending, a response already committed, a
// result Respond does not answer, or a body over limit: the size the
// store writes with a commit, BodyLimit; limit <= 0: any size).
func (p *Pending) Prepare(result any, warns []envelope.Warning, limit int) *Put {
	if p == nil || p.sent || p.Respond == nil {
		return nil
	}
	status, body, ok := p.Respond(result, warns)
	if !ok || status/100 != 2 || limit > 0 && len(body) > limit {
		return nil
	}
	p.status, p.body = status, body
	now := time.Now()
	if p.Clock != nil {
		now = p.Clock()
	}
	return &Put{Name: p.Name, Fingerprint: p.Fingerprint, Status: status, Body: StoredForm(body), At: now, MayDefer: p.MayDefer}
}

// Committed records the outcome of the commit that carried put: on
// success the prepared response is the one to send; ErrTaken marks the
// key as recorded by another request.
func (p *Pending) Committed(put *Put, err error) {
	if p == nil || put == nil {
		return
	}
	switch {
	case err == nil && !put.Deferred:
		p.sent = true
	case errors.Is(err, ErrTaken):
		p.taken = true
	}
}

// Sent is the response committed with the call, if one was.
func (p *Pending) Sent() (status int, body []byte, ok bool) {
	if p == nil || !p.sent {
		return 0, nil, false
	}
	return p.status, p.body, true
}

// Taken reports a commit refused because another request recorded the
// key first: the transport reads the key again to answer.
func (p *Pending) Taken() bool { return p != nil && p.taken }

// MaxBody is the largest response body written with its call on a store
// that has a bound (BodyLimit). DynamoDB stores one over 350 KiB in
// several items of the call's transaction (400 KB an item, 4 MB a
// transaction; its entity items stop at 400 KB, so no response it can
// answer reaches this); a larger one would be remembered after the
// commit. SQLite has no item limit and writes any response with its
// commit (UnboundedBodies).
const MaxBody = 2 << 20

// UnboundedBodies is a store that writes a keyed response of any size in
// the commit that applies its call (SQLite: a row has no practical
// limit), so a response over MaxBody is kept with its commit too.
type UnboundedBodies interface{ KeepsAnyBodyWithItsCommit() }

// BodyLimit is the largest response st writes with a commit: none (0)
// for UnboundedBodies, else MaxBody.
func BodyLimit(st any) int {
	if _, ok := st.(UnboundedBodies); ok {
		return 0
	}
	return MaxBody
}
