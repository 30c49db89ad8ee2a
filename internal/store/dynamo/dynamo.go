// Package dynamo is dont's DynamoDB store: one table shared by every
// project, with the real aws-sdk-go-v2 client. It implements
// store.Store, store.TokenStore, store.ApprovalStore and
// idempotency.Store for one project (New). Routing a presented token to
// its project is the functions' backend (functions/internal/deployment),
// which reads the global token items with TokenProject.
//
// # Table
//
// Primary key pk (string) and sk (string), on-demand, two sparse global
// secondary indexes — pending_expiry (partition gsi1pk, sort expires_at,
// all attributes projected) and entity_status (partition pk, sort es,
// keys only) — and TTL on the attribute ttl. The names are the ones
// infra/stack gives the deployed table; CreateTable makes the same table
// for tests and local stand-ins.
//
// Every project-scoped key starts with P#<project>#; the project name is
// escaped so that it cannot forge another project's prefix.
//
//	item                      pk                         sk
//	entity (+ pending spawn)  P#<p>#E                    <entity id>
//	history of one commit     P#<p>#H#<entity id>        <12-digit entity version>
//	event with no entity      P#<p>#H#<request id>       X#<event id>
//	dependency edge           P#<p>#D#<depends on>       <entity id>
//	a term's CURIE            P#<p>#CURIE                <curie> (see curieSortKey)
//	spawn (as issued)         P#<p>#S                    <spawn id>
//	token (project's list)    P#<p>#T                    <token id>
//	callback secret           P#<p>#M                    secret (k1…kN, current; secrets.go)
//	project settings          P#<p>#M                    settings
//	scheduled horizon         P#<p>#M                    horizon (scheduled_until; horizon.go)
//	webhook                   P#<p>#M                    hook#<hook id> (hooks.go; read with the settings)
//	pending confirmation      P#<p>#C                    <confirmation id>
//	Idempotency-Key record    P#<p>#I#<key>              I (a callback's terminal
//	                                                     action's rides on its
//	                                                     resolution: ridingKey)
//	token (global)            T#<token id>               T
//	session + frame counter   P#<p>#SES                  <session id>
//	approval                  P#<p>#APR                  <approval id>
//	unsent reminder           P#<p>#REM                  <approval id>
//	call lock                 P#<p>#CALL#<call id>       L
//	a call's approval         P#<p>#CALL#<call id>       <approval id>
//	frame                     P#<p>#FR#<session id>      <12-digit cursor>
//	subscriber lease          P#<p>#SUB#<session id>     <subscriber>
//
// and in the indexes:
//
//	index entry                    partition                 sort
//	pending spawn on an entity,    P#<p>#S (shard 0),        expires_at
//	  pending guess spawn          P#<p>#S#<n> (shard n)
//	entity whose latest spawn      P#<p>#TO                  expires_at
//	  timed out; timed-out guess
//	pending approval               P#<p>#APR#due             expires_at
//	ended, unannounced approval    P#<p>#APR#unannounced     expires_at
//	unsent reminder                P#<p>#APR#remind          expires_at (its remind_at)
//	entity (entity_status)         P#<p>#E                   es (its status)
//
// A pending spawn's shard is FNV-1a of its id modulo the deployment's
// shard count (SetPendingShards, DONT_PENDING_SHARDS; default 1), so
// the write that puts it in the index and every later sweep agree
// without a read; sweeps query every shard at once. Shard 0 is the key
// every pending spawn had before sharding, so those are still swept.
//
// Entities, spawns, tokens, events, sessions, approvals and frames are
// listed with Query, never Scan. The lists a person runs on a long
// ledger read what they return: `list --status` the entity_status index
// (and, for unverified, the pending entries: an entity under review is
// listed there under the status it had, so that a lifecycle writes no
// entry of that index), `spawns --pending` the pending shards,
// `spawns --timed-out` P#<p>#TO, and a term's CURIE check the CURIE items
// (ListEntities of kind term), each followed by a BatchGetItem of the
// items named.
//
// # Spawns live on their entities
//
// A verification spawn (assume, overlook) is pending on exactly one
// entity, and an entity has at most one pending (docs/design.md §5.3), so the
// spawn's state lives on the entity's item while it is pending: ps (its
// id), psd (a copy of the spawn without its request, so that a callback,
// which names its entity, reads that item alone: PendingSpawn) and the
// index keys gsi1pk (P#<p>#S[#<n>]) and expires_at. ExpiringSpawns
// reads a range of that index (for a sweep, the spawns whose expiry has
// passed): its cost follows what it returns, not what is stored. The spawn's own item under P#<p>#S
// holds it as issued, with its payload (the prompt), written once before
// the commit that issues it; the commit that resolves it records how it
// ended on the entity's tail, and the history item the tail moves into
// then holds it (sid, and the spawn in h). A spawn item that neither its
// entity (pending, or on its tail) nor a history item confirms was left
// by a failed commit, and reads treat it as absent. A guess spawn has no entity: its
// item holds its state and index keys itself. Approvals use the same
// index under their own partitions, P#<p>#APR#due (pending, by deadline)
// and P#<p>#APR#unannounced (ended, ending frame not yet appended); see
// approvals.go.
//
// All the events one commit writes about one entity share one history
// item keyed by the entity version that commit wrote, so an entity's
// history is ordered by commit, as store.Tx requires. One exception
// keeps a spawn's lifecycle free of transactions: the commits that issue
// and resolve a spawn are each one conditional put of the entity item,
// their events kept on the item (tail, at the version of its first
// commit, tv) with the spawn the resolution resolved (a history item's
// form), until the entity's next transaction moves them into its history
// item under the tail's version, or its next inline commit puts that
// item first (flushTail, idempotent: any item under that key holds the
// tail). The resolution's put is the one write that decides it; a crash
// after it leaves the history complete on the item. Events reads the
// item's tail after the history, dropping events already there.
//
// A bearer token leads to its project through the global token item; a
// callback token names its project itself (auth.CallbackTokenOf).
//
// # Writes
//
// Commit is one TransactWriteItems, except for issuing or resolving a
// spawn on an entity (above): entities conditioned on their version (or absence) —
// the entity a spawn's resolution writes also on that spawn being the one
// pending there, so that the spawn's condition and the entity's are one
// item's — spawns on no entity on absence or on still being pending,
// history items on absence; a new term's transaction also puts its
// CURIE's item (which names the term) on absence, so that of two terms of
// one CURIE only the first commits. Terms written before CURIE items
// existed have none: the service's read before a define finds those, as
// they are committed; only defines that have not committed yet can race,
// and each carries its item. A TransactionCanceledException whose reasons
// include ConditionalCheckFailed becomes store.ConditionFailed naming
// the item at that index. Conflicts, throttling and server errors are
// retried with capped exponential backoff and full jitter; every attempt
// of one Commit carries the same ClientRequestToken, so a retry of a
// transaction that committed but whose response was lost succeeds without
// writing again (DynamoDB keeps the token for 10 minutes, far longer than
// the retries). The single puts recognise their own earlier attempt in
// the item a failed condition returns; the put that issues a spawn on an
// entity, whose item another commit may have changed before the retry
// (a move, the spawn's resolution), also by the spawn's id on the entity
// or in its history (issued), and the put that resolves one by its first
// event on the entity's tail or in its history (hasEvent).
//
// # Consistency
//
// Every read of the base table is strongly consistent, except an
// Idempotency-Key lookup (see Lookup), and the lists a service asks for
// Indexed (store.EntityFilter, store.SpawnFilter: `list --status`,
// `spawns --pending|--timed-out`), which read an index and then,
// consistently, what it names; they can miss what changed in the last
// moments. ExpiringSpawns reads the
// global secondary index, which is eventually consistent: it can miss a
// spawn that has just become pending or return one that was just
// resolved. Both are safe. A missed spawn is found by a later sweep; a
// stale one is re-read with a consistent GetItem by the service before it
// commits a timeout, and the commit is conditioned on the spawn still
// being pending. Within one request (internal/readmemo) a token, entity or
// spawn item is read once, until the request's first write: a commit
// built on that read is conditioned on what it read, so a stale one fails
// and its retry reads afresh.
//
// # Files
//
// One file per job: dynamo.go the Store and its keys; shards.go the
// pending_expiry shards; entities.go the ledger's reads; spawns.go the
// spawns' reads; commit.go Commit and its plan; puts.go the single puts
// that recognise their own retry; requests.go the table's requests
// (reads, queries and their pages, batch gets, the write wrapper);
// items.go the item encodings, dict.go the dictionary they compress
// against; meta.go the one read of a project's settings and secret;
// limits.go DynamoDB's size limits;
// retry.go the backoff; table.go CreateTable; and one file for each other
// port: tokens.go, secrets.go, settings.go, horizon.go, idempotency.go,
// approvals.go, confirmations.go, hooks.go, passkeys.go, slack.go,
// reindex.go.
package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store"
)

// Names shared with infra/stack: the deployed table must use the same.
const (
	PartitionKey       = "pk"
	SortKey            = "sk"
	PendingExpiryIndex = "pending_expiry"
	PendingKey         = "gsi1pk"
	ExpiresAtKey       = "expires_at"
	TTLAttribute       = "ttl"
	// EntityStatusIndex is the sparse index of entities by status: only
	// entity items carry its sort key StatusKey, and it projects only the
	// keys (a list reads the entities it names from the table).
	EntityStatusIndex = "entity_status"
	StatusKey         = "es"
)

// timeKey is fixed-width so that text order is time order.
const timeKey = "2006-01-02T15:04:05.000000000Z"

func timeText(t time.Time) string { return t.UTC().Format(timeKey) }

// maxTransactItems is DynamoDB's limit on one TransactWriteItems.
const maxTransactItems = 100

// Store is one project's view of the table.
type Store struct {
	client  *dynamodb.Client
	table   string
	project string
	prefix  string
	retry   backoff
	// frameRetention is how long approval frames are kept (0: for good).
	frameRetention time.Duration
	// deliveryRetention is how long finished deliveries and the delivery
	// log's attempts are kept (0: for good; SetDeliveryRetention).
	deliveryRetention time.Duration
	// eventBus: announced events are queued for the event bus too (SetEventBus).
	eventBus bool
	// onAnnounce runs after a write that queued deliveries (SetOnAnnounce).
	onAnnounce func(ctx context.Context)

	secretMu sync.Mutex
	// secrets caches the project's secret versions, opened, by key id,
	// and current the version new tokens are made under.
	secrets map[string][]byte
	current string
	// sealer seals the secret versions at rest (KMS on AWS); nil keeps
	// them as written.
	sealer Sealer
	// secretClock stamps when a version stopped being current (SetSecretClock).
	secretClock func() time.Time

	// hookCache keeps the project's hooks for the commits' outbox (SetHookCache).
	hookCache hookCache

	states entityStates
	// meta keeps the settings or secret item a rebuilt store's first read
	// of the other found (meta.go).
	meta metaPreload
	// shards is the number of pending_expiry partitions (SetPendingShards).
	shards int
}

// New returns the store of project in table. Every key it reads or writes
// is scoped to the project, except the global token and spawn items,
// which it checks belong to the project before using them.
func New(client *dynamodb.Client, table, project string) *Store {
	return &Store{client: client, table: table, project: project, prefix: "P#" + escapeKey(project) + "#", retry: defaultBackoff,
		shards: processShards()}
}

// Project is the project this store reads and writes.
func (s *Store) Project() string { return s.project }

// escapeKey keeps a name from adding key separators.
func escapeKey(name string) string {
	return strings.NewReplacer("%", "%25", "#", "%23").Replace(name)
}

func (s *Store) entityPK() string                { return s.prefix + "E" }
func (s *Store) historyPK(subject string) string { return s.prefix + "H#" + subject }
func (s *Store) edgePK(dependsOn string) string  { return s.prefix + "D#" + dependsOn }
func (s *Store) spawnPK() string                 { return s.prefix + "S" }
func (s *Store) tokenListPK() string             { return s.prefix + "T" }
func (s *Store) metaPK() string                  { return s.prefix + "M" }
func (s *Store) idempotencyPK(key string) string { return s.prefix + "I#" + key }
func (s *Store) curiePK() string                 { return s.prefix + "CURIE" }

// timedOutPK is the pending_expiry partition of the spawns whose timeout
// is still their entity's latest spawn (and of timed-out guess spawns):
// what `spawns --timed-out` lists.
func (s *Store) timedOutPK() string { return s.prefix + "TO" }

// maxCurieKey keeps a CURIE's sort key within DynamoDB's 1024 bytes.
const maxCurieKey = 512

// curieSortKey is a CURIE's sort key: the CURIE, or, past maxCurieKey
// bytes, "#" and its SHA-256 in hex (a CURIE never starts with "#").
func curieSortKey(curie string) string {
	if len(curie) <= maxCurieKey {
		return curie
	}
	sum := sha256.Sum256([]byte(curie))
	return "#" + hex.EncodeToString(sum[:])
}

func tokenPK(id string) string  { return "T#" + id }
func versionKey(v int64) string { return fmt.Sprintf("%012d", v) }
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: str(pk), SortKey: str(sk)}
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.TokenStore = (*Store)(nil)
)
