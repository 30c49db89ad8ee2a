// Package ledger holds the claim ledger's rules: entities, the status
// lattice, events and the checks on reasons and evidence. It does no I/O.
package ledger

import (
	"time"
)

// Status is a point in the doubt lattice.
type Status string

// The lattice.
const (
	Unverified Status = "unverified" // entry
	Doubted    Status = "doubted"    // after trust --reason
	Verified   Status = "verified"   // after dismiss --evidence
	Locked     Status = "locked"     // terminal
	Ignored    Status = "ignored"    // terminal
	Stale      Status = "stale"      // a dependency was doubted
)

// Statuses lists the lattice, for validation and help.
var Statuses = []Status{Unverified, Doubted, Verified, Locked, Ignored, Stale}

// Valid reports whether s is a status of the lattice.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal statuses accept no transition but reopen (ignored) or none (locked).
func (s Status) Terminal() bool { return s == Locked || s == Ignored }

// EntityKind says whether an entity is a claim or a term.
type EntityKind string

// Entity kinds.
const (
	KindClaim EntityKind = "claim"
	KindTerm  EntityKind = "term"
)

// Valid reports whether k is one of the entity kinds.
func (k EntityKind) Valid() bool { return k == KindClaim || k == KindTerm }

// Entity is a claim or a term.
type Entity struct {
	ID         string     `json:"id"`
	Kind       EntityKind `json:"kind"`
	Statement  string     `json:"statement,omitempty"`
	Curie      string     `json:"curie,omitempty"`
	Definition string     `json:"definition,omitempty"`
	Atoms      []string   `json:"atoms,omitempty"`
	Refs       []string   `json:"refs,omitempty"`
	Confidence *float64   `json:"confidence,omitempty"`
	DependsOn  []string   `json:"depends_on,omitempty"`
	Status     Status     `json:"status"`
	Author     string     `json:"author,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	// Version increases on every write; conditional writes compare it.
	Version int64 `json:"version"`
	// PendingSpawn is the verification spawn under way, if any.
	PendingSpawn string `json:"pending_spawn,omitempty"`
	// LastSpawn is the most recent verification spawn ever issued.
	LastSpawn string `json:"last_spawn,omitempty"`
}

// EventKind names what an event records.
type EventKind string

// Event kinds. Parsers ignore kinds they do not know.
const (
	EvConcluded         EventKind = "concluded"
	EvDefined           EventKind = "defined"
	EvTrusted           EventKind = "trusted"   // recorded by Doubt
	EvDismissed         EventKind = "dismissed" // recorded by Verify
	EvLocked            EventKind = "locked"
	EvIgnored           EventKind = "ignored"
	EvReopened          EventKind = "reopened"
	EvStaleCascaded     EventKind = "stale_cascaded"
	EvSpawnRequested    EventKind = "spawn_requested"
	EvSpawnResolved     EventKind = "spawn_resolved"
	EvSpawnTimeout      EventKind = "spawn_timeout"
	EvSpawnCancelled    EventKind = "spawn_cancelled"
	EvSpawnFailed       EventKind = "spawn_failed"
	EvSpawnHeartbeat    EventKind = "spawn_heartbeat" // a pending spawn's expiry moved forward
	EvAnswered          EventKind = "answered"
	EvApprovalRequested EventKind = "approval_requested"
	EvApprovalResolved  EventKind = "approval_resolved"
)

// EventKinds lists every event kind.
var EventKinds = []EventKind{EvConcluded, EvDefined, EvTrusted, EvDismissed, EvLocked, EvIgnored, EvReopened,
	EvStaleCascaded, EvSpawnRequested, EvSpawnResolved, EvSpawnTimeout, EvSpawnCancelled, EvSpawnFailed,
	EvSpawnHeartbeat, EvAnswered, EvApprovalRequested, EvApprovalResolved}

// Valid reports whether k is a known event kind.
func (k EventKind) Valid() bool {
	for _, v := range EventKinds {
		if k == v {
			return true
		}
	}
	return false
}

// Event is one append-only fact. When it changes an entity's status, From
// and To say how; folding an entity's events gives its status.
type Event struct {
	ID        string    `json:"id"`
	Kind      EventKind `json:"kind"`
	EntityID  string    `json:"entity_id,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	Author    string    `json:"author,omitempty"`
	At        time.Time `json:"at"`
	From      Status    `json:"from,omitempty"`
	To        Status    `json:"to,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Evidence  []string  `json:"evidence,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	Direct    bool      `json:"direct,omitempty"`
	// Detail carries kind-specific facts (timeout timestamps, candidates…).
	Detail map[string]any `json:"detail,omitempty"`
}

// Fold replays events in order and returns the status they imply. An entity
// whose stored status differs from the fold of its events is corrupt.
func Fold(events []Event) Status {
	var s Status
	for _, ev := range events {
		if ev.To != "" {
			s = ev.To
		}
	}
	return s
}
