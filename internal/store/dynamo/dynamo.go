// Package dynamo is dont's DynamoDB store: one table shared by every
// project, with the real aws-sdk-go-v2 client. It implements
// service.Store, service.TokenStore, service.ApprovalStore and
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
//	pending confirmation      P#<p>#C                    <confirmation id>
//	Idempotency-Key record    P#<p>#I#<key>              I
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
// id) and the index keys gsi1pk (P#<p>#S[#<n>]) and expires_at. ExpiringSpawns
// reads a range of that index (for a sweep, the spawns whose expiry has
// passed): its cost follows what it returns, not what is stored. The spawn's own item under P#<p>#S
// holds it as issued, with its payload (the prompt), written once before
// the commit that issues it; the history item of the commit that resolves
// it records how it ended (sid, and the spawn in h). A spawn item that
// neither its entity nor a history item confirms was left by a failed
// commit, and reads treat it as absent. A guess spawn has no entity: its
// item holds its state and index keys itself. Approvals use the same
// index under their own partitions, P#<p>#APR#due (pending, by deadline)
// and P#<p>#APR#unannounced (ended, ending frame not yet appended); see
// approvals.go.
//
// All the events one commit writes about one entity share one history
// item keyed by the entity version that commit wrote, so an entity's
// history is ordered by commit, as service.Tx requires. One exception
// keeps a spawn's lifecycle to one transaction: the commit that issues a
// spawn is one conditional put of the entity item, its events kept on
// the item (tail) until the entity's next commit — at the latest the
// spawn's resolution — moves them into that commit's history item, keyed
// by the tail's version. Events reads the item's tail after the history.
//
// A bearer token leads to its project through the global token item; a
// callback token names its project itself (auth.CallbackTokenOf).
//
// # Writes
//
// Commit is one TransactWriteItems, except for issuing a spawn on an
// entity (above): entities conditioned on their version (or absence) —
// the entity a spawn's resolution writes also on that spawn being the one
// pending there, so that the spawn's condition and the entity's are one
// item's — spawns on no entity on absence or on still being pending,
// history items on absence; a new term's transaction also puts its
// CURIE's item (which names the term) on absence, so that of two terms of
// one CURIE only the first commits. Terms written before CURIE items
// existed have none: the service's read before a define finds those, as
// they are committed; only defines that have not committed yet can race,
// and each carries its item. A TransactionCanceledException whose reasons
// include ConditionalCheckFailed becomes service.ConditionFailed naming
// the item at that index. Conflicts, throttling and server errors are
// retried with capped exponential backoff and full jitter; every attempt
// of one Commit carries the same ClientRequestToken, so a retry of a
// transaction that committed but whose response was lost succeeds without
// writing again (DynamoDB keeps the token for 10 minutes, far longer than
// the retries). The single puts recognise their own earlier attempt in
// the item a failed condition returns; the put that issues a spawn on an
// entity, whose item another commit may have changed before the retry
// (a move, the spawn's resolution), also by the spawn's id on the entity
// or in its history (issued).
//
// # Consistency
//
// Every read of the base table is strongly consistent, except an
// Idempotency-Key lookup (see Lookup), and the lists a service asks for
// Indexed (service.EntityFilter, service.SpawnFilter: `list --status`,
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
package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
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

// DefaultPendingShards is how many index partitions a project's pending
// spawns are spread over when neither the process's DONT_PENDING_SHARDS
// (EnvPendingShards) nor SetPendingShards says otherwise. Each shard is a
// partition of the pending_expiry index (about 1,000 index writes a
// second, two a lifecycle), and every sweep reads every shard (half a
// read unit each when nothing is due); one partition already outruns the
// project's entity partition, which caps a project first (docs/aws.md,
// "Limits and scale").
const DefaultPendingShards = 1

// EnvPendingShards names the variable that sets the shard count of every
// store a process opens (1 to MaxPendingShards): infra/stack sets it on
// every function from dont:pendingShards, so that the writers and the
// sweepers of one deployment agree.
const EnvPendingShards = "DONT_PENDING_SHARDS"

// ParsePendingShards reads a shard count as EnvPendingShards holds it;
// empty is DefaultPendingShards.
func ParsePendingShards(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultPendingShards, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPendingShards {
		return 0, fmt.Errorf("%s must be a whole number from 1 to %d, got %q", EnvPendingShards, MaxPendingShards, v)
	}
	return n, nil
}

// processShards is the process's shard count: EnvPendingShards, read
// once (the functions check it at init, deployment.ConfigFromEnv; a value
// it refuses never gets this far).
var processShards = sync.OnceValue(func() int {
	n, err := ParsePendingShards(os.Getenv(EnvPendingShards))
	if err != nil {
		return DefaultPendingShards
	}
	return n
})

// MaxPendingShards bounds SetPendingShards: a sweep queries every shard.
const MaxPendingShards = 64

// SetPendingShards sets how many index partitions this store spreads the
// project's pending spawns over (1 to MaxPendingShards). A spawn's shard
// follows from its id, so every writer and sweeper of one deployment
// must use the same count; it may be raised at any time (items stay in
// the shard they were written to, which every sweep still reads), and
// lowered only once no pending spawn is left in the shards it drops.
func (s *Store) SetPendingShards(n int) error {
	if n < 1 || n > MaxPendingShards {
		return fmt.Errorf("dynamo: pending shards %d: want 1 to %d", n, MaxPendingShards)
	}
	s.shards = n
	return nil
}

// PendingShards is the number of index partitions the store sweeps.
func (s *Store) PendingShards() int { return max(s.shards, 1) }

// pendingShard is the shard of spawn id: FNV-1a of the id, modulo the
// shard count, so that the write that puts a spawn in the index and a
// later sweep agree without reading anything.
func (s *Store) pendingShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(s.PendingShards()))
}

// pendingPK is the index partition of this project's pending spawn id:
// shard 0 is P#<p>#S, the key of every pending spawn before the index
// was sharded (so that those are still swept), shard n > 0 P#<p>#S#<n>.
func (s *Store) pendingPK(id string) string { return s.pendingShardPK(s.pendingShard(id)) }

func (s *Store) pendingShardPK(n int) string {
	if n == 0 {
		return s.spawnPK()
	}
	return s.spawnPK() + "#" + strconv.Itoa(n)
}

func tokenPK(id string) string  { return "T#" + id }
func versionKey(v int64) string { return fmt.Sprintf("%012d", v) }
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: str(pk), SortKey: str(sk)}
}

// GetEntity implements service.Store.
func (s *Store) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	var e ledger.Entity
	it, err := s.readOnce(ctx, key(s.entityPK(), id))
	if err != nil {
		return e, err
	}
	if it == nil {
		return e, service.ErrNotFound
	}
	return s.readEntity(it)
}

// readEntity decodes an entity item and remembers the state beside it.
func (s *Store) readEntity(it map[string]types.AttributeValue) (ledger.Entity, error) {
	e, st, err := decodeEntity(it)
	if err == nil {
		s.states.put(e.ID, st)
	}
	return e, err
}

// ListEntities implements service.Store. Terms are read through their
// CURIE items (one consistent Query of P#<p>#CURIE, then the terms it
// names), so that a term's CURIE check at define reads the project's
// terms, not its ledger; an Indexed status filter reads the sparse
// entity_status index and then the entities it names, consistently
// (dropping any whose status has changed since); everything else is one
// Query over the project's entities. Ordered by id.
func (s *Store) ListEntities(ctx context.Context, f service.EntityFilter) ([]ledger.Entity, error) {
	var whole []ledger.Entity
	var err error
	switch {
	case f.Kind == ledger.KindTerm:
		whole, err = s.listTerms(ctx, f.Status)
	case f.Indexed && f.Status != "":
		whole, err = s.listByStatus(ctx, f)
	default:
		q := s.partitionQuery(s.entityPK())
		whereEqual(q, "st", string(f.Status), "kind", string(f.Kind))
		seekAfter(q, f.After)
		var out []ledger.Entity
		decode := func(it map[string]types.AttributeValue) (ledger.Entity, error) { return s.readEntity(it) }
		if f.Limit <= 0 {
			err = s.query(ctx, q, func(it map[string]types.AttributeValue) error {
				e, err := decode(it)
				out = append(out, e)
				return err
			})
			return out, err
		}
		// A filter drops items after DynamoDB's Limit counted them: read
		// on until the page is full or the partition ends.
		for more := true; more && len(out) < f.Limit && err == nil; {
			var got []ledger.Entity
			got, more, err = queryPageUpTo(ctx, s, q, f.Limit-len(out), decode)
			out = append(out, got...)
		}
		return out[:min(len(out), f.Limit)], err
	}
	if err != nil || f.After == "" && f.Limit <= 0 {
		return whole, err
	}
	// An index answered the filter whole (its cost follows the status's
	// size): the page is cut from it.
	return service.PageOf(whole, func(e ledger.Entity) string { return e.ID }, f.After, f.Limit), nil
}

// seekAfter makes the partition query q start after the sort key after
// (none: from the start).
func seekAfter(q *dynamodb.QueryInput, after string) {
	if after == "" {
		return
	}
	q.KeyConditionExpression = aws.String(aws.ToString(q.KeyConditionExpression) + " AND #sk > :after")
	q.ExpressionAttributeNames["#sk"] = SortKey
	q.ExpressionAttributeValues[":after"] = str(after)
}

// queryPageUpTo reads q, from its ExclusiveStartKey on, until at least
// limit items were evaluated or the results end, and decodes the items
// that pass its filter. DynamoDB's Limit counts the items a page
// evaluates before its filter, and a page also stops at 1 MB, so fewer
// may come back: an unfiltered query asks for what is missing, a
// filtered one reads whole pages (up to 1 MB each, without a Limit) until
// limit items passed. It may return more than limit; the caller keeps
// the first. more says whether results remain; q then starts after the
// items read.
func queryPageUpTo[T any](ctx context.Context, s *Store, q *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) (out []T, more bool, err error) {
	filtered := q.FilterExpression != nil
	for evaluated := 0; evaluated < limit && (!filtered || len(out) < limit); {
		q.Limit = nil
		if !filtered {
			q.Limit = aws.Int32(int32(min(limit-evaluated, 1000)))
		}
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return out, false, err
		}
		evaluated += int(page.ScannedCount)
		for _, it := range page.Items {
			v, err := decode(it)
			if err != nil {
				return out, false, err
			}
			out = append(out, v)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, false, nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
		if filtered {
			evaluated = 0 // only what passed counts
		} else if page.ScannedCount == 0 {
			break // a page cut short before any item; read on next time
		}
	}
	return out, true, nil
}

// listTerms reads the project's terms through their CURIE items: every
// term has a CURIE (Define requires one) and its item names the term.
func (s *Store) listTerms(ctx context.Context, status ledger.Status) ([]ledger.Entity, error) {
	var keys []map[string]types.AttributeValue
	err := s.query(ctx, s.partitionQuery(s.curiePK()), func(it map[string]types.AttributeValue) error {
		if id := attrString(it, "ent"); id != "" {
			keys = append(keys, key(s.entityPK(), id))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.readEntities(ctx, keys, func(e ledger.Entity) bool {
		return e.Kind == ledger.KindTerm && (status == "" || e.Status == status)
	})
}

// listByStatus reads the entity_status index (keys only) for f.Status and
// then the entities it names. An unverified entity with a spawn pending
// on it is listed in that index under the status it had before the spawn
// (entityState.listed): for f.Status unverified the entities of the
// pending index's entries are read too.
func (s *Store) listByStatus(ctx context.Context, f service.EntityFilter) ([]ledger.Entity, error) {
	q := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(EntityStatusIndex),
		KeyConditionExpression:    aws.String("#pk = :pk AND #es = :es"),
		ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey, "#es": StatusKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(s.entityPK()), ":es": str(string(f.Status))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, key(s.entityPK(), id))
		}
	}
	err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		add(attrString(it, SortKey))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.Status == ledger.Unverified {
		err := s.eachShard(ctx, func(ctx context.Context, pk string) ([]spawn.Spawn, error) {
			var got []spawn.Spawn
			err := s.query(ctx, s.indexPartition(pk), func(it map[string]types.AttributeValue) error {
				if attrString(it, "ps") != "" {
					got = append(got, spawn.Spawn{EntityID: attrString(it, SortKey)})
				}
				return nil
			})
			return got, err
		}, func(got []spawn.Spawn) {
			for _, sp := range got {
				add(sp.EntityID)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return s.readEntities(ctx, keys, func(e ledger.Entity) bool {
		return e.Status == f.Status && (f.Kind == "" || e.Kind == f.Kind)
	})
}

// readEntities reads the entity items of keys consistently and returns
// those keep accepts, ordered by id.
func (s *Store) readEntities(ctx context.Context, keys []map[string]types.AttributeValue, keep func(ledger.Entity) bool) ([]ledger.Entity, error) {
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := []ledger.Entity{}
	for _, it := range items {
		e, err := s.readEntity(it)
		if err != nil {
			return nil, err
		}
		if keep(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Dependents implements service.Store: the dependency edges of id, then
// the entities they name, ordered by id.
func (s *Store) Dependents(ctx context.Context, id string) ([]ledger.Entity, error) {
	var keys []map[string]types.AttributeValue
	err := s.query(ctx, s.partitionQuery(s.edgePK(id)), func(it map[string]types.AttributeValue) error {
		keys = append(keys, key(s.entityPK(), attrString(it, SortKey)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.Entity, 0, len(items))
	for _, it := range items {
		e, err := s.readEntity(it)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Events implements service.Store: the entity's history partition in sort
// key order, which is the order of the versions the events were written
// with, which is commit order; then the events of an inline commit, which
// is always the latest. The entity is read first: a commit that moves
// its tail into history between the two reads shows the tail twice, and
// the second copy is dropped by event id.
func (s *Store) Events(ctx context.Context, entityID string) ([]ledger.Event, error) {
	var tail []ledger.Event
	it, err := s.readOnce(ctx, key(s.entityPK(), entityID))
	if err != nil {
		return nil, err
	}
	if it != nil {
		_, st, err := decodeEntity(it)
		if err != nil {
			return nil, err
		}
		tail = st.tail
	}
	var out []ledger.Event
	seen := map[string]bool{}
	err = s.query(ctx, s.partitionQuery(s.historyPK(entityID)), func(it map[string]types.AttributeValue) error {
		evs, _, err := decodeHistory(it)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			seen[ev.ID] = true
		}
		out = append(out, evs...)
		return nil
	})
	for _, ev := range tail {
		if !seen[ev.ID] {
			out = append(out, ev)
		}
	}
	return out, err
}

// Commit implements service.Store (see the package comment): the items
// of new spawns on entities first, then the commit itself as one
// conditional PutItem (a spawn issued on an entity) or one
// TransactWriteItems (everything else).
func (s *Store) Commit(ctx context.Context, tx service.Tx) error {
	p, err := s.plan(ctx, tx)
	if err != nil {
		return err
	}
	if err := s.checkPlan(p); err != nil {
		return err
	}
	// The outbox (docs/hooks.md): a delivery per hook that hears one of
	// this commit's events, in the same transaction.
	outbox, err := s.outbox(ctx, eventMessages(tx.Events))
	if err != nil {
		return err
	}
	keyInCommit := deferKey(tx.Key)
	for _, sp := range p.spawnItems {
		if err := s.putSpawnItem(ctx, sp); err != nil {
			return err
		}
	}
	if p.inline != nil && len(outbox) == 0 && !keyInCommit {
		return s.putOnce(ctx, p.inline, p.inlineOwner, func(ctx context.Context) (bool, error) { return s.issued(ctx, p.inlineSpawn) })
	}
	if p.inline != nil {
		// Announced: the inline put becomes the first item of a transaction.
		in := p.inline
		p.items = []types.TransactWriteItem{{Put: &types.Put{TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}}}
		p.owners = []string{p.inlineOwner}
	}
	for _, it := range outbox {
		p.items = append(p.items, it)
		p.owners = append(p.owners, "")
	}
	if keyInCommit {
		it, err := s.keyItem(tx.Key)
		if err != nil {
			return err
		}
		p.items = append(p.items, it)
		p.owners = append(p.owners, keyOwner)
	}
	if len(p.items) > maxTransactItems {
		return fmt.Errorf("dynamo: a commit of %d items exceeds DynamoDB's %d per transaction", len(p.items), maxTransactItems)
	}
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:          p.items,
		ClientRequestToken:     aws.String(newRequestToken()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	err = s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.TransactWriteItems(ctx, in, noSDKRetries)
		return err
	})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" && i < len(p.owners) {
				if p.owners[i] == keyOwner {
					return idempotency.ErrTaken
				}
				return &service.ConditionFailed{ID: p.owners[i]}
			}
		}
	}
	return s.announced(ctx, outbox, err)
}

// commitPlan is how one Tx is written.
type commitPlan struct {
	// spawnItems are spawns issued on entities: their items are written
	// once, before the commit (see putSpawnItem).
	spawnItems []spawn.Spawn
	// inline, when set, is the whole commit: one conditional put of one
	// entity item; inlineOwner is the id its condition answers for, and
	// inlineSpawn the spawn it issues.
	inline      *dynamodb.PutItemInput
	inlineOwner string
	inlineSpawn spawn.Spawn
	// items is the transaction otherwise; owners names the id each item's
	// condition answers for.
	items  []types.TransactWriteItem
	owners []string
}

// entitySpawns are the spawn writes of one commit on one entity.
type entitySpawns struct {
	opens  *spawn.Spawn      // issued, pending
	closes *service.SpawnPut // resolves the spawn pending on the entity
	ended  *spawn.Spawn      // issued already resolved
	moves  *service.SpawnPut // still pending, with a later expiry (a heartbeat)
}

func (o entitySpawns) resolved() *spawn.Spawn {
	if o.closes != nil {
		return &o.closes.Spawn
	}
	return o.ended
}

// plan turns a Tx into writes. A spawn on an entity lives on that
// entity's item while pending (ps, and the index keys), so a spawn write
// must come with a write of its entity, like an event; the service always
// does both in one commit.
func (s *Store) plan(ctx context.Context, tx service.Tx) (commitPlan, error) {
	var p commitPlan
	written := map[string]bool{}
	for _, put := range tx.Entities {
		written[put.Entity.ID] = true
	}
	onEntity := map[string]*entitySpawns{}
	for _, put := range tx.Spawns {
		sp := put.Spawn
		if sp.EntityID == "" {
			continue
		}
		if !written[sp.EntityID] {
			return p, fmt.Errorf("dynamo: spawn %s of %s is not committed with a write of that entity", sp.ID, sp.EntityID)
		}
		o := onEntity[sp.EntityID]
		if o == nil {
			o = &entitySpawns{}
			onEntity[sp.EntityID] = o
		}
		// Each protocol step maps to its writes (service.SpawnPut.Step).
		switch put.Step {
		case spawn.StepIssue:
			if !put.Create {
				return p, fmt.Errorf("dynamo: the issue of %s does not create it", sp.ID)
			}
			if sp.State != spawn.Pending && o.ended == nil {
				o.ended = &sp // issued already resolved
				break
			}
			if sp.State == spawn.Pending && o.opens == nil {
				o.opens = &sp
				break
			}
			return p, fmt.Errorf("dynamo: two spawns issued on %s in one commit", sp.EntityID)
		case spawn.StepHeartbeat:
			if put.Create || sp.State != spawn.Pending || o.moves != nil || o.closes != nil || o.opens != nil {
				return p, fmt.Errorf("dynamo: a heartbeat of %s moves a pending spawn's expiry, alone on its entity", sp.ID)
			}
			o.moves = &put
		case spawn.StepCallback, spawn.StepAnswer, spawn.StepCancel, spawn.StepTimeout, spawn.StepFail:
			if put.Create || sp.State == spawn.Pending || o.closes != nil {
				return p, fmt.Errorf("dynamo: %s of %s resolves the spawn pending on %s, once", put.Step, sp.ID, sp.EntityID)
			}
			o.closes = &put
		default:
			return p, fmt.Errorf("dynamo: the write of spawn %s names no protocol step (%q)", sp.ID, put.Step)
		}
		if put.Create {
			p.spawnItems = append(p.spawnItems, sp)
		}
	}
	if ok, err := s.planInline(ctx, tx, onEntity, &p); ok || err != nil {
		return p, err
	}
	return p, s.planTransaction(ctx, tx, written, onEntity, &p)
}

// planInline plans the commit that issues a spawn on an entity as one
// conditional put of the entity item, its events kept on the item (the
// tail) until the entity's next commit moves them into a history item in
// its own transaction. The spawn's resolution is that next commit at the
// latest, so a spawn lifecycle writes one transaction, not two.
func (s *Store) planInline(ctx context.Context, tx service.Tx, onEntity map[string]*entitySpawns, p *commitPlan) (bool, error) {
	if len(tx.Entities) != 1 || len(tx.Spawns) != 1 || tx.Entities[0].PrevVersion == 0 {
		return false, nil
	}
	put := tx.Entities[0]
	o := onEntity[put.Entity.ID]
	if o == nil || o.opens == nil {
		return false, nil
	}
	for _, ev := range tx.Events {
		if ev.EntityID != put.Entity.ID {
			return false, nil
		}
	}
	st, err := s.stateOf(ctx, put.Entity.ID, put.PrevVersion)
	if err != nil || len(st.tail) > 0 {
		return false, err
	}
	if st.pending != "" {
		return false, &service.ConditionFailed{ID: o.opens.ID}
	}
	listed := st.listed // the status the entity is listed under stays
	if listed == "" {
		listed = string(o.opens.PreStatus)
	}
	it, err := s.entityItem(put.Entity, entityState{pending: o.opens.ID, expires: timeText(o.opens.ExpiresAt), tail: tx.Events, listed: listed})
	if err != nil {
		return false, err
	}
	p.inline = &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:                 aws.String("#v = :v"),
		ExpressionAttributeNames:            map[string]string{"#v": "v"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":v": num(put.PrevVersion)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	p.inlineOwner, p.inlineSpawn = put.Entity.ID, *o.opens
	return true, nil
}

// planTransaction plans a commit as one transaction, in the order
// entities (each followed by its history item and, when new, its
// dependency edges), spawns on no entity, events about no entity.
func (s *Store) planTransaction(ctx context.Context, tx service.Tx, written map[string]bool, onEntity map[string]*entitySpawns, p *commitPlan) error {
	add := func(owner string, it types.TransactWriteItem) {
		p.items = append(p.items, it)
		p.owners = append(p.owners, owner)
	}
	about := map[string][]ledger.Event{}
	var loose []ledger.Event
	for _, ev := range tx.Events {
		switch {
		case ev.EntityID == "":
			loose = append(loose, ev)
		case !written[ev.EntityID]:
			return fmt.Errorf("dynamo: event %s about %s is not committed with a write of that entity", ev.ID, ev.EntityID)
		default:
			about[ev.EntityID] = append(about[ev.EntityID], ev)
		}
	}
	for _, put := range tx.Entities {
		if err := s.planEntity(ctx, put, onEntity[put.Entity.ID], about[put.Entity.ID], add); err != nil {
			return err
		}
	}
	for _, put := range tx.Spawns {
		if put.Spawn.EntityID != "" {
			continue
		}
		it, err := s.spawnItem(put.Spawn)
		if err != nil {
			return err
		}
		if put.Create {
			add(put.Spawn.ID, putNew(s.table, it))
			continue
		}
		add(put.Spawn.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
			ConditionExpression:       aws.String("#st = :pending AND #exp = :exp"),
			ExpressionAttributeNames:  map[string]string{"#st": "st", "#exp": ExpiresAtKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pending": str(string(spawn.Pending)), ":exp": str(timeText(put.Expected()))}}})
	}
	for _, ev := range loose {
		subject := ev.RequestID
		if subject == "" {
			subject = ev.ID
		}
		it, err := eventsItem(s.historyPK(subject), "X#"+ev.ID, []ledger.Event{ev}, nil)
		if err != nil {
			return err
		}
		add(ev.ID, putNew(s.table, it))
	}
	if len(p.items) == 0 {
		return errors.New("dynamo: empty transaction")
	}
	if len(p.items) > maxTransactItems {
		return tooManyItems(len(p.items))
	}
	return nil
}

// planEntity adds one entity's writes to a transaction: its item,
// conditioned on its version (and, when the commit resolves the spawn
// pending on it, on that spawn still being the one pending: the spawn's
// condition and the entity's in one item), then its history item — the
// stored tail and this commit's events, keyed by the version of the first
// of them, with the spawn this commit resolved — then, for a new term, its
// CURIE's item, and for a new entity its dependency edges.
func (s *Store) planEntity(ctx context.Context, put service.EntityPut, o *entitySpawns, evs []ledger.Event, add func(string, types.TransactWriteItem)) error {
	e := put.Entity
	if o == nil {
		o = &entitySpawns{}
	}
	owner := e.ID
	if o.closes != nil {
		owner = o.closes.Spawn.ID
	}
	if o.moves != nil {
		owner = o.moves.Spawn.ID
	}
	var stored entityState
	if put.PrevVersion > 0 {
		var err error
		if stored, err = s.stateOf(ctx, e.ID, put.PrevVersion); err != nil {
			if isCondition(err) {
				err = &service.ConditionFailed{ID: owner}
			}
			return err
		}
	}
	next := entityState{pending: stored.pending, expires: stored.expires, timedOut: stored.timedOut, toHistory: stored.toHistory,
		listed: stored.listed}
	history := append(append([]ledger.Event(nil), stored.tail...), evs...)
	first := e.Version
	if len(stored.tail) > 0 {
		first = put.PrevVersion
	}
	cond := &types.Put{TableName: aws.String(s.table)}
	if put.PrevVersion == 0 {
		cond.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		cond.ExpressionAttributeNames = map[string]string{"#pk": PartitionKey}
	} else {
		cond.ConditionExpression = aws.String("#v = :v")
		cond.ExpressionAttributeNames = map[string]string{"#v": "v"}
		cond.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(put.PrevVersion)}
	}
	// A resolution or a heartbeat: the spawn must still be the one pending
	// here, with the expiry the write read (service.SpawnPut).
	pendingHere := func(put service.SpawnPut) error {
		if stored.pending != put.Spawn.ID || stored.expires != timeText(put.Expected()) {
			return &service.ConditionFailed{ID: put.Spawn.ID} // resolved or moved already, at this very version
		}
		cond.ConditionExpression = aws.String("#v = :v AND #ps = :sid AND #exp = :exp")
		cond.ExpressionAttributeNames["#ps"], cond.ExpressionAttributeNames["#exp"] = "ps", ExpiresAtKey
		cond.ExpressionAttributeValues[":sid"], cond.ExpressionAttributeValues[":exp"] = str(put.Spawn.ID), str(timeText(put.Expected()))
		return nil
	}
	if o.closes != nil {
		if err := pendingHere(*o.closes); err != nil {
			return err
		}
		next.pending, next.expires, next.timedOut, next.toHistory = "", "", "", ""
		if o.closes.Spawn.Outcome == spawn.TimeoutRestored {
			// The entity's latest spawn timed out: it stays in the index,
			// under P#<p>#TO, until another spawn is issued on it.
			next.timedOut, next.toHistory, next.expires = o.closes.Spawn.ID, versionKey(first), stored.expires
		}
	}
	if o.moves != nil {
		// A heartbeat: its index key moves to the new expiry, and its item
		// (as issued, but for the expiry and the payload's) is rewritten in
		// the same transaction, so that reads of the pending spawn see it.
		if err := pendingHere(*o.moves); err != nil {
			return err
		}
		next.expires = timeText(o.moves.Spawn.ExpiresAt)
	}
	if o.opens != nil {
		if next.pending != "" {
			return &service.ConditionFailed{ID: o.opens.ID} // one pending spawn per entity
		}
		next.pending, next.expires = o.opens.ID, timeText(o.opens.ExpiresAt)
		next.timedOut, next.toHistory = "", ""
	}
	if o.ended != nil && o.opens == nil && o.closes == nil {
		// A spawn issued already resolved is the entity's latest now.
		next.timedOut, next.toHistory = "", ""
		if next.pending == "" {
			next.expires = ""
		}
	}
	it, err := s.entityItem(e, next)
	if err != nil {
		return err
	}
	cond.Item = it
	add(owner, types.TransactWriteItem{Put: cond})
	if len(history) > 0 || o.resolved() != nil {
		h, err := eventsItem(s.historyPK(e.ID), versionKey(first), history, o.resolved())
		if err != nil {
			return err
		}
		add(e.ID, putNew(s.table, h))
	}
	if o.moves != nil {
		sit, err := s.spawnItem(o.moves.Spawn)
		if err != nil {
			return err
		}
		add(o.moves.Spawn.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: sit,
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}})
	}
	if put.PrevVersion == 0 && e.Kind == ledger.KindTerm && e.Curie != "" {
		c := key(s.curiePK(), curieSortKey(e.Curie))
		c["ent"] = str(e.ID)
		add(service.CurieKey(e.Curie), putNew(s.table, c))
	}
	if put.PrevVersion == 0 {
		seen := map[string]bool{}
		for _, d := range e.DependsOn {
			if !seen[d] { // one operation per item in a transaction
				seen[d] = true
				add(e.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: key(s.edgePK(d), e.ID)}})
			}
		}
	}
	return nil
}

// stateOf is the stored state beside entity id at version: remembered
// from the read the caller just made, or read again. A different version
// stored means the commit's condition cannot hold.
func (s *Store) stateOf(ctx context.Context, id string, version int64) (entityState, error) {
	if st, ok := s.states.get(id, version); ok {
		return st, nil
	}
	it, err := s.getItem(ctx, key(s.entityPK(), id))
	if err != nil {
		return entityState{}, err
	}
	if it != nil {
		if _, err := s.readEntity(it); err != nil {
			return entityState{}, err
		}
		if st, ok := s.states.get(id, version); ok {
			return st, nil
		}
	}
	return entityState{}, &service.ConditionFailed{ID: id}
}

// putSpawnItem writes the item of a spawn issued on an entity before the
// commit that issues it. It is conditional on absence, so that it never
// overwrites another spawn; finding its own item (a retry after a lost
// response, or an earlier commit of the same spawn that failed) is fine,
// and the commit decides. An item left by a failed commit names a spawn
// its entity never had: reads treat it as absent.
func (s *Store) putSpawnItem(ctx context.Context, sp spawn.Spawn) error {
	it, err := s.spawnItem(sp)
	if err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	return s.putOnce(ctx, in, sp.ID, nil)
}

// putOnce runs a conditional PutItem. A failed condition is a
// ConditionFailed on owner, unless the stored item is exactly the one
// being written: then an earlier attempt, whose response was lost, wrote
// it, and the put has succeeded. An item that later writes changed no
// longer matches; when the put was retried, landed says (if given)
// whether an earlier attempt landed all the same.
func (s *Store) putOnce(ctx context.Context, in *dynamodb.PutItemInput, owner string, landed func(context.Context) (bool, error)) error {
	attempts := 0
	err := s.write(ctx, func(ctx context.Context) error {
		attempts++
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	old := ccf.Item
	if old == nil {
		// Servers that do not return the old item: read it.
		if old, err = s.getItem(ctx, key(attrString(in.Item, PartitionKey), attrString(in.Item, SortKey))); err != nil {
			return err
		}
	}
	if sameItem(old, in.Item) {
		return nil
	}
	if attempts > 1 && landed != nil {
		ok, err := landed(ctx)
		if err != nil || ok {
			return err
		}
	}
	return &service.ConditionFailed{ID: owner}
}

// issued says whether the commit that issues sp on its entity landed.
// Only that commit names sp (a new id) on the entity, and only a commit
// that resolves sp clears it, writing a history item that records sp in
// the same transaction: so sp was issued if the entity names it or, read
// after the entity, a history item does. Later commits on the entity (a
// move, the spawn's resolution) are why the entity's item is no longer
// the one the issue wrote.
func (s *Store) issued(ctx context.Context, sp spawn.Spawn) (bool, error) {
	it, err := s.getItem(ctx, key(s.entityPK(), sp.EntityID))
	if err != nil || it == nil {
		return false, err
	}
	if attrString(it, "ps") == sp.ID {
		return true, nil
	}
	ended, err := s.resolutions(ctx, sp.EntityID, sp.ID)
	_, ok := ended[sp.ID]
	return ok, err
}

func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if valueKey(v) != valueKey(b[k]) {
			return false
		}
	}
	return true
}

// valueKey is a comparable form of the scalar values these items hold.
func valueKey(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	}
	return fmt.Sprintf("?%T", v)
}

// getItem reads one item with a strongly consistent read; nil if absent.
func (s *Store) getItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	return s.readItem(ctx, k, true)
}

// readItem reads one item, strongly consistent or not; nil if absent. An
// empty key names no item (DynamoDB refuses it with a ValidationException,
// e.g. the entity of Events(""), the entity-less events): nil, unread.
func (s *Store) readItem(ctx context.Context, k map[string]types.AttributeValue, consistent bool) (map[string]types.AttributeValue, error) {
	if attrString(k, PartitionKey) == "" || attrString(k, SortKey) == "" {
		return nil, nil
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: k, ConsistentRead: aws.Bool(consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	var out *dynamodb.GetItemOutput
	err := s.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.GetItem(ctx, in, noSDKRetries)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// readOnce is getItem for the items one request reads repeatedly — a
// token, an entity, a spawn — while it authenticates, checks a callback's
// powers and applies it: within one request (see readmemo) such an item
// is read once, until the store's next write. Polls (an approval's
// verdict, frames) use getItem: they wait for other requests' writes.
func (s *Store) readOnce(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	memo := readmemo.From(ctx)
	name := s.table + "\x00" + attrString(k, PartitionKey) + "\x00" + attrString(k, SortKey)
	if v, ok := memo.Get(name); ok {
		return v.(map[string]types.AttributeValue), nil
	}
	it, err := s.getItem(ctx, k)
	if err == nil {
		memo.Put(name, it)
	}
	return it, err
}

// write runs one write request (with retries): the request's remembered
// reads are forgotten, whatever the outcome.
func (s *Store) write(ctx context.Context, call func(context.Context) error) error {
	defer readmemo.From(ctx).Forget()
	return s.do(ctx, call)
}

// partitionQuery reads a whole partition, strongly consistent, in sort
// key order.
func (s *Store) partitionQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
}

// query runs q page by page and hands each item to fn.
func (s *Store) query(ctx context.Context, q *dynamodb.QueryInput, fn func(map[string]types.AttributeValue) error) error {
	for {
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// whereEqual filters q on attribute = value for each (attribute, value)
// pair whose value is not empty, joined with AND.
func whereEqual(q *dynamodb.QueryInput, pairs ...string) {
	var filters []string
	for i := 0; i+1 < len(pairs); i += 2 {
		attr, value := pairs[i], pairs[i+1]
		if value == "" {
			continue
		}
		filters = append(filters, "#"+attr+" = :"+attr)
		q.ExpressionAttributeNames["#"+attr] = attr
		q.ExpressionAttributeValues[":"+attr] = str(value)
	}
	if len(filters) > 0 {
		q.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
}

// queryUpTo pages through q until it has decoded limit items or the
// results end.
func queryUpTo[T any](ctx context.Context, s *Store, q *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	var out []T
	for {
		q.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return out, err
		}
		for _, it := range page.Items {
			v, err := decode(it)
			if err != nil {
				return out, err
			}
			out = append(out, v)
		}
		if len(out) >= limit || len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		q.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (s *Store) queryPage(ctx context.Context, q *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	var out *dynamodb.QueryOutput
	err := s.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.Query(ctx, q, noSDKRetries)
		return err
	})
	return out, err
}

// batchGet reads keys with strongly consistent reads, 100 per request,
// retrying unprocessed keys. Missing items are skipped.
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(keys) > 0 {
		n := min(len(keys), 100)
		pending := keys[:n]
		keys = keys[n:]
		for attempt := 0; len(pending) > 0; attempt++ {
			in := &dynamodb.BatchGetItemInput{
				RequestItems:           map[string]types.KeysAndAttributes{s.table: {Keys: pending, ConsistentRead: aws.Bool(true)}},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
			}
			var res *dynamodb.BatchGetItemOutput
			err := s.do(ctx, func(ctx context.Context) error {
				var err error
				res, err = s.client.BatchGetItem(ctx, in, noSDKRetries)
				return err
			})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[s.table]...)
			pending = res.UnprocessedKeys[s.table].Keys
			if len(pending) > 0 {
				if attempt+1 >= s.retry.attempts {
					return nil, errors.New("dynamo: BatchGetItem left keys unprocessed after every retry")
				}
				if err := s.retry.sleep(ctx, attempt); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

var (
	_ service.Store      = (*Store)(nil)
	_ service.TokenStore = (*Store)(nil)
)

func putNew(table string, it map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}}
}

func isCondition(err error) bool {
	var c *service.ConditionFailed
	return errors.As(err, &c)
}
