// Package hooks holds the rules of webhook subscriptions: the event names,
// which subscription hears which event, the message each event becomes
// (the JSON and the Slack payloads), the Standard Webhooks signature, the
// retry schedule and the URL policy (docs/hooks.md). It does no I/O: the
// HTTP client that delivers lives in internal/webhook, the outbox in the
// stores.
package hooks

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
)

// EventType names an event a subscription can hear.
type EventType string

// The events (docs/hooks.md#events).
const (
	ApprovalAsked EventType = "approval.asked"
	ApprovalEnded EventType = "approval.ended"
	// ApprovalReminder is sent once per question that nobody has answered
	// by the person's share of its deadline (approval_remind_at): the
	// second line, subscribed to it, is told.
	ApprovalReminder EventType = "approval.reminder"
	SpawnRequested   EventType = "spawn.requested"
	SpawnResolved    EventType = "spawn.resolved"
	SpawnTimeout     EventType = "spawn.timeout"
	ConfirmationHeld EventType = "confirmation.held"
	// Test is the event `hooks test` sends; no subscription names it.
	Test EventType = "hook.test"
)

// EventTypes are the events a subscription may name, in documentation order.
var EventTypes = []EventType{ApprovalAsked, ApprovalEnded, ApprovalReminder, SpawnRequested, SpawnResolved, SpawnTimeout, ConfirmationHeld}

// Format is how a subscription's messages are encoded.
type Format string

// The formats.
const (
	FormatJSON  Format = "json"
	FormatSlack Format = "slack"
)

// Formats lists the formats.
var Formats = []string{string(FormatJSON), string(FormatSlack)}

// The codes of this package's refusals.
const (
	InvalidURL   errs.Code = "hook-url-refused"
	HookNotFound errs.Code = "hook-not-found"
)

// BusHook is the hook id of a deployment's event bus (EventBridge on
// AWS): a subscription to every event that no one adds or removes; its
// deliveries are published, not posted.
const BusHook = "bus:default"

// Bus is the bus subscription.
func Bus() Hook {
	return Hook{ID: BusHook, URL: "eventbridge:default", Events: EventTypes, Format: FormatJSON}
}

// Hook is a subscription. Its signing secret is kept apart (Secret) and
// shown once, when the hook is added.
type Hook struct {
	ID        string      `json:"hook_id"`
	URL       string      `json:"url"`
	Events    []EventType `json:"events"`
	Format    Format      `json:"format"`
	CreatedAt time.Time   `json:"created_at"`
	CreatedBy string      `json:"created_by,omitempty"`
	RemovedAt *time.Time  `json:"removed_at,omitempty"`
	// Secret is the whsec_ signing secret; it never leaves the store
	// except in the answer to hooks add.
	Secret string `json:"-"`
}

// Hears reports whether the hook receives events of type t.
func (h Hook) Hears(t EventType) bool {
	return h.RemovedAt == nil && slices.Contains(h.Events, t)
}

// ParseEvents reads a comma-separated event list: every name known, at
// least one, no repeats (they are dropped).
func ParseEvents(list []string) ([]EventType, error) {
	var out []EventType
	for _, item := range list {
		for _, name := range strings.Split(item, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			t := EventType(name)
			if !slices.Contains(EventTypes, t) {
				return nil, errs.E(errs.InvalidArgument, "unknown event "+quote(name)).
					Unmet("events are " + joinTypes(EventTypes))
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	if len(out) == 0 {
		return nil, errs.E(errs.InvalidArgument, "--events names no event").Unmet("events are " + joinTypes(EventTypes))
	}
	return out, nil
}

// ParseFormat reads a format; "" is json.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatJSON:
		return FormatJSON, nil
	case FormatSlack:
		return FormatSlack, nil
	}
	return "", errs.E(errs.InvalidArgument, "unknown format "+quote(s)).Unmet("format is json or slack")
}

func joinTypes(ts []EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}

// SecretPrefix starts every signing secret. Signing and verifying are the
// Standard Webhooks library's, at the edge (internal/webhook).
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ and 32 random bytes in
// base64, as Standard Webhooks gives them.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// Message is one announced event: what the outbox holds until every
// subscription that hears it has been delivered to. Its ID is the
// webhook-id of every delivery and retry, to every receiver.
type Message struct {
	ID   string          `json:"id"`
	Type EventType       `json:"type"`
	At   time.Time       `json:"timestamp"`
	Data json.RawMessage `json:"data"`
}

// JSONPayload is the body of a json-format delivery.
type JSONPayload struct {
	Type      EventType       `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

func message(t EventType, at time.Time, data any) (Message, bool) {
	b, err := json.Marshal(data)
	if err != nil {
		return Message{}, false
	}
	return Message{Type: t, At: at.UTC(), Data: b}, true
}

// Identified gives m its id (the webhook-id), if it has none: a store
// calls it once it knows a hook hears m, so that an event nobody hears
// mints no id.
func (m Message) Identified() Message {
	if m.ID == "" {
		m.ID = ids.New(ids.Message, m.At)
	}
	return m
}

// SpawnData is the data of the spawn events.
type SpawnData struct {
	RequestID string    `json:"request_id"`
	EntityID  string    `json:"entity_id,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	Author    string    `json:"author,omitempty"`
	At        time.Time `json:"at"`
}

// OfEvent is the message a committed ledger event announces, if any: a
// spawn requested, resolved (by a callback, an answer, a cancel or a
// provider failure) or timed out.
func OfEvent(ev ledger.Event) (Message, bool) {
	var t EventType
	switch ev.Kind {
	case ledger.EvSpawnRequested:
		t = SpawnRequested
	case ledger.EvSpawnResolved, ledger.EvSpawnCancelled, ledger.EvSpawnFailed, ledger.EvAnswered:
		t = SpawnResolved
	case ledger.EvSpawnTimeout:
		t = SpawnTimeout
	default:
		return Message{}, false
	}
	if ev.RequestID == "" {
		return Message{}, false
	}
	outcome := ev.Outcome
	if outcome == "" && ev.Kind != ledger.EvSpawnRequested {
		outcome = string(ev.Kind)
	}
	return message(t, ev.At, SpawnData{RequestID: ev.RequestID, EntityID: ev.EntityID, Outcome: outcome, Author: ev.Author, At: ev.At.UTC()})
}

// ApprovalData is the data of the approval events.
type ApprovalData struct {
	ApprovalID string            `json:"approval_id"`
	SessionID  string            `json:"session_id"`
	CallID     string            `json:"call_id"`
	FromTier   approvals.Tier    `json:"from_tier,omitempty"`
	ToTier     approvals.Tier    `json:"to_tier"`
	Preview    string            `json:"preview,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Requester  string            `json:"requester,omitempty"`
	Deadline   time.Time         `json:"deadline"`
	RemindAt   *time.Time        `json:"remind_at,omitempty"`
	Verdict    approvals.Verdict `json:"verdict,omitempty"`
	Cause      approvals.Cause   `json:"cause,omitempty"`
	AnsweredBy string            `json:"answered_by,omitempty"`
	// Detail says why, when the ending has a reason (a refusal's).
	Detail     string          `json:"detail,omitempty"`
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
	State      approvals.State `json:"state"`
}

// Approval is the approval d describes: an asked question (only those
// announce themselves).
func (d ApprovalData) Approval() approvals.Approval {
	return approvals.Approval{ID: d.ApprovalID, SessionID: d.SessionID, CallID: d.CallID, From: d.FromTier, To: d.ToTier,
		Preview: d.Preview, Reason: d.Reason, Requester: d.Requester, Asked: true, State: d.State, Deadline: d.Deadline,
		Verdict: d.Verdict, Cause: d.Cause, AnsweredBy: d.AnsweredBy, Detail: d.Detail, ResolvedAt: d.ResolvedAt}
}

func approvalData(a approvals.Approval) ApprovalData {
	return ApprovalData{ApprovalID: a.ID, SessionID: a.SessionID, CallID: a.CallID, FromTier: a.From, ToTier: a.To,
		Preview: a.Preview, Reason: a.Reason, Requester: a.Requester, Deadline: a.Deadline.UTC(), RemindAt: a.RemindAt, Verdict: a.Verdict,
		Cause: a.Cause, AnsweredBy: a.AnsweredBy, Detail: a.Detail, ResolvedAt: a.ResolvedAt, State: a.State}
}

// OfAsked is the message a question announces when it is stored: only
// an asked, pending approval is a question (a request refused before it
// was asked announces nothing).
func OfAsked(a approvals.Approval) (Message, bool) {
	if !a.Asked || a.State != approvals.Pending {
		return Message{}, false
	}
	return message(ApprovalAsked, a.CreatedAt, approvalData(a))
}

// OfReminder is the message of a question's reminder: the question as
// asked, still pending.
func OfReminder(a approvals.Approval, at time.Time) (Message, bool) {
	if !a.Asked || a.State != approvals.Pending || a.RemindAt == nil {
		return Message{}, false
	}
	return message(ApprovalReminder, at, approvalData(a))
}

// OfEnded is the message a question's resolution announces.
func OfEnded(a approvals.Approval) (Message, bool) {
	if !a.Asked || a.State != approvals.Resolved {
		return Message{}, false
	}
	at := a.CreatedAt
	if a.ResolvedAt != nil {
		at = *a.ResolvedAt
	}
	return message(ApprovalEnded, at, approvalData(a))
}

// ConfirmationData is the data of confirmation.held. The call's arguments
// are not sent: they may be long, and a receiver links to them.
type ConfirmationData struct {
	ConfirmationID string    `json:"confirmation_id"`
	Tool           string    `json:"tool"`
	RequestedBy    string    `json:"requested_by,omitempty"`
	RequestedAt    time.Time `json:"requested_at"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// OfHeld is the message a held call announces when it is stored.
func OfHeld(p confirm.Pending) (Message, bool) {
	if p.State != confirm.StatePending {
		return Message{}, false
	}
	return message(ConfirmationHeld, p.RequestedAt, ConfirmationData{ConfirmationID: p.ID, Tool: p.Tool,
		RequestedBy: p.RequestedBy, RequestedAt: p.RequestedAt.UTC(), ExpiresAt: p.ExpiresAt.UTC()})
}

// TestMessage is what `hooks test` sends.
func TestMessage(hookID string, at time.Time) Message {
	m, _ := message(Test, at, map[string]string{"hook_id": hookID})
	return m.Identified()
}

// SlackAppScheme names a hook that dont's Slack app delivers: its
// questions are posted to the channel with chat.postMessage and updated
// in place with chat.update on their ending (docs/approvals.md, "Slack").
const SlackAppScheme = "slack-app"

// SlackAppChannel is the channel of a Slack app hook's URL.
func SlackAppChannel(raw string) (string, bool) {
	ch, ok := strings.CutPrefix(raw, SlackAppScheme+":")
	return ch, ok && slackChannel(ch)
}

// slackChannel reports whether s looks like a Slack conversation id.
func slackChannel(s string) bool {
	if len(s) < 2 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// CheckURL is the URL policy applied when a hook is added (the dial-time
// check of internal/webhook applies the address rules again to every
// address a name resolves to): an absolute https URL, or http to a
// loopback host; no user info; no fragment; at most 2048 bytes. An IP
// literal in a private range is refused here already unless allow says
// it may be dialled.
func CheckURL(raw string, allow AddrPolicy) (*url.URL, error) {
	bad := func(msg, clause string) error {
		return errs.E(InvalidURL, msg).Unmet(clause)
	}
	if len(raw) > 2048 || raw == "" {
		return nil, bad("a --url of 1 to 2048 bytes is required", "url is an https URL")
	}
	if ch, ok := strings.CutPrefix(raw, SlackAppScheme+":"); ok {
		if !slackChannel(ch) {
			return nil, bad("not a Slack channel id: "+quote(ch), "a Slack app hook is slack-app:<channel id>, e.g. slack-app:C0123ABCD")
		}
		return &url.URL{Scheme: SlackAppScheme, Opaque: ch}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, bad("not an absolute URL: "+quote(raw), "url is an https URL")
	}
	if u.User != nil {
		return nil, bad("a hook URL carries no user info", "url has no user:password@")
	}
	if u.Fragment != "" {
		return nil, bad("a hook URL has no fragment", "url has no #fragment")
	}
	host := u.Hostname()
	switch u.Scheme {
	case "https":
	case "http":
		if !IsLoopbackHost(host) {
			return nil, bad("http is allowed only to a loopback host; use https", "url is https (http only to loopback)")
		}
	default:
		return nil, bad("unsupported scheme "+quote(u.Scheme), "url is https (http only to loopback)")
	}
	if addr, ok := literal(host); ok {
		if err := allow.Check(addr); err != nil {
			return nil, err
		}
	}
	return u, nil
}
