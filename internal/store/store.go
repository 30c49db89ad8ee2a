// Package store is the persistence port of the service: the interfaces a
// store implements and every type they take and return (writes, filters,
// pages, sentinel errors). Both sides import it — the use-case layer
// (internal/service) and the adapters beneath it (internal/store/sqlite,
// internal/store/dynamo) — so no store imports the service
// (internal/repocheck; docs/design.md §3). internal/storetest is the
// conformance suite every store passes.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Store is the persistence port the service needs. Reads are plain; every
// write goes through Commit, which applies a Tx all-or-nothing and only if
// each of its conditions still holds. SQLite and DynamoDB both implement it;
// storetest is the conformance suite.
type Store interface {
	GetEntity(ctx context.Context, id string) (ledger.Entity, error)
	ListEntities(ctx context.Context, f EntityFilter) ([]ledger.Entity, error)
	Dependents(ctx context.Context, id string) ([]ledger.Entity, error)
	Events(ctx context.Context, entityID string) ([]ledger.Event, error)
	GetSpawn(ctx context.Context, id string) (spawn.Spawn, error)
	ListSpawns(ctx context.Context, f SpawnFilter) ([]spawn.Spawn, error)
	// ExpiringSpawns returns up to limit pending spawns with after <
	// expires_at <= until, earliest expiry first: the due ones (after
	// zero, until now) for a sweep, the next slice of the future for a
	// scheduler's horizon. Its cost must grow with the number returned,
	// not the number stored. It may be eventually consistent (DynamoDB's
	// global index): it can miss a spawn just issued and return one just
	// resolved, so callers re-read a spawn before acting on it.
	ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error)
	Commit(ctx context.Context, tx Tx) error
}

// DocStore is a Store that can hand over an entity's document as it keeps
// it: for a document this version wrote, JSON that is byte for byte the
// entity's encoding as data (envelope.MarshalData;
// TestShowSendsTheStoredDocumentAsTheEntitysEncoding), given text that is
// valid UTF-8 as every transport makes it (encoding/json writes a bad byte
// as the escape \ufffd, which decodes to the character). One an earlier
// version wrote keeps json.Marshal's HTML escapes (the same JSON value),
// and one a later version wrote is sent with whatever fields it has.
// service.Ledger.ShowStored uses it so that `show` neither decodes nor encodes
// the entity (the SQLite store).
type DocStore interface {
	EntityDoc(ctx context.Context, id string) (json.RawMessage, error)
}

// PendingSpawnStore is a Store that keeps the spawn pending on an entity
// with the entity (DynamoDB): a caller that knows both ids — a callback
// names its spawn and its entity — reads the spawn with the entity's one
// read instead of two. PendingSpawn is spawnID as entityID's record has it
// while the spawn is pending there, without its request (Request nil: use
// it for what the spawn's state decides, never to show or rewrite the
// request); found is false when that record does not say (the spawn is
// not pending on that entity, or its record keeps no copy), and GetSpawn
// answers.
type PendingSpawnStore interface {
	PendingSpawn(ctx context.Context, entityID, spawnID string) (sp spawn.Spawn, found bool, err error)
}

// EntityFilter narrows ListEntities; zero values match everything.
type EntityFilter struct {
	Status ledger.Status
	Kind   ledger.EntityKind
	// Indexed lets the store answer a Status filter from an eventually
	// consistent secondary index (DynamoDB's), whose cost follows what it
	// returns: an entity whose status changed in the last moments may be
	// missing. The entities returned are read consistently.
	Indexed bool
	// After and Limit page the listing (Page): only entities whose id
	// sorts after After, then in id order, at most Limit of them (0: all).
	// With either set the order is by id.
	After string
	Limit int
}

// SpawnFilter narrows ListSpawns; results are ordered by issued_at, oldest
// first, or, when After or Limit pages them, by id (a ULID of the issue
// time: the same order but for spawns issued within one millisecond).
type SpawnFilter struct {
	State    spawn.State
	EntityID string
	// Outcome narrows resolved spawns to one outcome; a store may return
	// others too (callers filter again).
	Outcome spawn.Outcome
	// Indexed lets the store answer State Pending, or Outcome
	// TimeoutRestored (then only spawns that are still their entity's
	// latest), from an eventually consistent secondary index whose cost
	// follows what it returns: a spawn issued or timed out in the last
	// moments may be missing.
	Indexed bool
	// After and Limit page the listing as EntityFilter's do: only spawns
	// whose id sorts after After, at most Limit of them (0: all), in id
	// order.
	After string
	Limit int
}

// Tx is one atomic, conditional write. An event about an entity is always
// committed together with a write of that entity; an entity's history is
// ordered by the versions its events were written with. A term's CURIE
// names one term: a Tx that creates a term whose CURIE another term holds
// fails with a ConditionFailed on CurieKey(curie), whatever races.
type Tx struct {
	Entities []EntityPut
	Spawns   []SpawnPut
	Events   []ledger.Event
	// Key, when set, is the first response to the call's Idempotency-Key,
	// written in this same transaction under its own condition (see
	// idempotency.Put): the key not recorded, or recorded longer ago than
	// the window. If that condition fails the commit applies nothing and
	// fails with idempotency.ErrTaken.
	Key *idempotency.Put
	// Unchanged are entities the write read and decided to leave alone
	// (a doubt's dependents that did not go stale): the commit applies
	// nothing unless each is still at the version read, so a decision on
	// what they were cannot commit after they moved (ConditionFailed on
	// the entity).
	Unchanged []EntityCheck
}

// EntityCheck is an entity that must still be at Version when a Tx
// commits.
type EntityCheck struct {
	ID      string
	Version int64
}

// EntityPut writes an entity if its stored version is still PrevVersion
// (0: it must not exist yet).
type EntityPut struct {
	Entity      ledger.Entity
	PrevVersion int64
}

// SpawnPut creates a spawn (Create) or replaces one that must still be
// pending, with the expiry the write read: PrevExpiresAt, or, when that is
// zero, Spawn.ExpiresAt (a resolution keeps the expiry it read; a
// heartbeat, which moves it, names the one it moved). The expiry is in the
// condition so that a resolver that read a spawn before a heartbeat moved
// it cannot commit on what it read (a timeout of a spawn no longer due).
// A spawn on an entity is written together with a write of that entity
// (as its events are), and at most one spawn is pending on an entity: a
// store may keep a spawn's state on its entity.
//
// Step is the protocol step that writes it (spawn.Apply's Transition):
// a store maps each step to its own writes, never the shape of a Tx to
// a step — an issue creates the spawn, a heartbeat moves its expiry, and
// every other step resolves it.
type SpawnPut struct {
	Spawn         spawn.Spawn
	Create        bool
	PrevExpiresAt time.Time
	Step          spawn.StepKind
}

// Expected is the stored expiry a replace is conditioned on.
func (p SpawnPut) Expected() time.Time {
	if p.PrevExpiresAt.IsZero() {
		return p.Spawn.ExpiresAt
	}
	return p.PrevExpiresAt
}

// ConditionFailed is returned by Commit when a condition did not hold;
// nothing was written. ID names the item whose condition failed.
type ConditionFailed struct {
	ID string
}

func (c *ConditionFailed) Error() string { return fmt.Sprintf("condition failed on %s", c.ID) }

// CurieKey is the ID of the ConditionFailed a store returns when a new
// term's CURIE is held by another term. Entity ids never look like it.
func CurieKey(curie string) string { return "curie#" + curie }

// FailedOn reports whether err is a ConditionFailed on id.
func FailedOn(err error, id string) bool {
	var c *ConditionFailed
	return errors.As(err, &c) && c.ID == id
}

// ErrNotFound is what stores return for a missing item (wrapped or bare).
var ErrNotFound = errors.New("not found")

// ErrConflict is a store's answer to a conditional write that lost to a
// concurrent one (a rotation of the project's secret made elsewhere):
// nothing was written; read again and retry.
var ErrConflict = errors.New("conflict")

// PageOf returns the items whose key sorts after after, in key order, at
// most limit of them (0: all): for a store whose index answers a filter
// whole, and for the service, which cuts what a store returned.
func PageOf[T any](items []T, key func(T) string, after string, limit int) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		if key(it) > after {
			out = append(out, it)
		}
	}
	slices.SortStableFunc(out, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// SweepBatch bounds one page of a full sweep (`dont sweep`, the timers,
// the ticker, the AWS sweeper).
const SweepBatch = 100
