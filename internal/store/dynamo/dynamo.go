// Package dynamo is dont's DynamoDB store: one table shared by every
// project, with the real aws-sdk-go-v2 client. It implements
// service.Store, service.TokenStore, service.ApprovalStore and
// httpapi.IdempotencyStore for one project (New), and httpapi.Backend
// for all of them (NewBackend).
//
// # Table
//
// Primary key pk (string) and sk (string), on-demand, one sparse global
// secondary index pending_expiry (partition gsi1pk, sort expires_at, all
// attributes projected), and TTL on the attribute ttl. The names are the
// ones infra/stack gives the deployed table; CreateTable makes the same
// table for tests and local stand-ins.
//
// Every project-scoped key starts with P#<project>#; the project name is
// escaped so that it cannot forge another project's prefix.
//
//	item                      pk                         sk
//	entity                    P#<p>#E                    <entity id>
//	events of one commit      P#<p>#H#<entity id>        <12-digit entity version>
//	event with no entity      P#<p>#H#<request id>       X#<event id>
//	dependency edge           P#<p>#D#<depends on>       <entity id>
//	spawn                     P#<p>#S                    <spawn id>
//	token (project's list)    P#<p>#T                    <token id>
//	callback secret           P#<p>#M                    secret
//	pending confirmation      P#<p>#C                    <confirmation id>
//	Idempotency-Key record    P#<p>#I#<key>              I
//	token (global)            T#<token id>               T
//	spawn (global)            S#<spawn id>               S
//	session + frame counter   P#<p>#SES                  <session id>
//	approval                  P#<p>#APR                  <approval id>
//	call lock                 P#<p>#CALL#<call id>       L
//	a call's approval         P#<p>#CALL#<call id>       <approval id>
//	frame                     P#<p>#FR#<session id>      <12-digit cursor>
//	subscriber lease          P#<p>#SUB#<session id>     <subscriber>
//
// Entities, spawns, tokens, events, sessions, approvals and frames are
// listed with Query, never Scan. A spawn carries gsi1pk (P#<p>#S) and
// expires_at only while it is pending, so DueSpawns reads the index range
// of pending spawns whose expiry has passed: its cost follows the
// expired, not the stored. Approvals use the same index under their own
// partitions, P#<p>#APR#due (pending, by deadline) and
// P#<p>#APR#unannounced (ended, ending frame not yet appended); see
// approvals.go.
//
// All the events one commit writes about one entity share one item keyed
// by the entity version that commit wrote: an entity's history is ordered
// by commit, as service.Tx requires, and a callback's two events cost one
// write, not two.
//
// The two global items exist because a presented token must lead to its
// project before anything else is known: a bearer token names its token
// id, a callback token its spawn id. A spawn's global item also holds its
// request payload (the prompt, about 1 KB), written once when the spawn is
// issued: the project's spawn item, which is written twice in
// transactions and copied into the index, stays small, one write unit.
//
// # Writes
//
// Commit is one TransactWriteItems: entities conditioned on their version
// (or absence), spawns on absence or on still being pending, event items
// on absence. A TransactionCanceledException whose reasons include
// ConditionalCheckFailed becomes service.ConditionFailed naming the item
// at that index. Conflicts, throttling and server errors are retried with
// capped exponential backoff and full jitter; every attempt of one Commit
// carries the same ClientRequestToken, so a retry of a transaction that
// committed but whose response was lost succeeds without writing again
// (DynamoDB keeps the token for 10 minutes, far longer than the retries).
//
// # Consistency
//
// Every read of the base table is strongly consistent. DueSpawns reads the
// global secondary index, which is eventually consistent: it can miss a
// spawn that has just become pending or return one that was just
// resolved. Both are safe. A missed spawn is found by a later sweep; a
// stale one is re-read with a consistent GetItem by the service before it
// commits a timeout, and the commit is conditioned on the spawn still
// being pending.
package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ledger"
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

	secretMu sync.Mutex
	secret   []byte
}

// New returns the store of project in table. Every key it reads or writes
// is scoped to the project, except the global token and spawn items,
// which it checks belong to the project before using them.
func New(client *dynamodb.Client, table, project string) *Store {
	return &Store{client: client, table: table, project: project, prefix: "P#" + escapeKey(project) + "#", retry: defaultBackoff}
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

// pendingPK is the index partition of this project's pending spawns.
func (s *Store) pendingPK() string { return s.spawnPK() }

func tokenPK(id string) string      { return "T#" + id }
func spawnOwnerPK(id string) string { return "S#" + id }
func versionKey(v int64) string     { return fmt.Sprintf("%012d", v) }
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: str(pk), SortKey: str(sk)}
}

// GetEntity implements service.Store.
func (s *Store) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	var e ledger.Entity
	it, err := s.getItem(ctx, key(s.entityPK(), id))
	if err != nil {
		return e, err
	}
	if it == nil {
		return e, service.ErrNotFound
	}
	return decodeEntity(it)
}

// ListEntities implements service.Store: one Query over the project's
// entities, ordered by id.
func (s *Store) ListEntities(ctx context.Context, f service.EntityFilter) ([]ledger.Entity, error) {
	q := s.partitionQuery(s.entityPK())
	whereEqual(q, "st", string(f.Status), "kind", f.Kind)
	var out []ledger.Entity
	err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		e, err := decodeEntity(it)
		out = append(out, e)
		return err
	})
	return out, err
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
		e, err := decodeEntity(it)
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
// with, which is commit order.
func (s *Store) Events(ctx context.Context, entityID string) ([]ledger.Event, error) {
	var out []ledger.Event
	err := s.query(ctx, s.partitionQuery(s.historyPK(entityID)), func(it map[string]types.AttributeValue) error {
		var evs []ledger.Event
		if err := json.Unmarshal([]byte(attrString(it, "evs")), &evs); err != nil {
			return fmt.Errorf("dynamo: decode events %s: %w", attrString(it, SortKey), err)
		}
		out = append(out, evs...)
		return nil
	})
	return out, err
}

// GetSpawn implements service.Store: the spawn and its global item (for
// the payload) in one strongly consistent BatchGetItem.
func (s *Store) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	items, err := s.batchGet(ctx, []map[string]types.AttributeValue{key(s.spawnPK(), id), key(spawnOwnerPK(id), "S")})
	if err != nil {
		return spawn.Spawn{}, err
	}
	var sp spawn.Spawn
	var owner map[string]types.AttributeValue
	found := false
	for _, it := range items {
		if attrString(it, PartitionKey) == s.spawnPK() {
			if sp, err = decodeSpawn(it); err != nil {
				return sp, err
			}
			found = true
		} else {
			owner = it
		}
	}
	if !found {
		return spawn.Spawn{}, service.ErrNotFound
	}
	return sp, s.setPayload(&sp, owner)
}

// setPayload copies the payload of a spawn's global item, if it belongs
// to this project.
func (s *Store) setPayload(sp *spawn.Spawn, owner map[string]types.AttributeValue) error {
	if owner == nil || attrString(owner, "project") != s.project {
		return nil
	}
	var err error
	if sp.Request, err = payload(owner); err != nil {
		return fmt.Errorf("dynamo: decode spawn %s payload: %w", sp.ID, err)
	}
	return nil
}

// fillPayloads reads the global items of spawns for their payloads.
func (s *Store) fillPayloads(ctx context.Context, spawns []spawn.Spawn) error {
	if len(spawns) == 0 {
		return nil
	}
	keys := make([]map[string]types.AttributeValue, len(spawns))
	for i, sp := range spawns {
		keys[i] = key(spawnOwnerPK(sp.ID), "S")
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	owners := make(map[string]map[string]types.AttributeValue, len(items))
	for _, it := range items {
		owners[strings.TrimPrefix(attrString(it, PartitionKey), "S#")] = it
	}
	for i := range spawns {
		if err := s.setPayload(&spawns[i], owners[spawns[i].ID]); err != nil {
			return err
		}
	}
	return nil
}

// ListSpawns implements service.Store: one Query over the project's
// spawns, ordered by issue time, then id.
func (s *Store) ListSpawns(ctx context.Context, f service.SpawnFilter) ([]spawn.Spawn, error) {
	q := s.partitionQuery(s.spawnPK())
	whereEqual(q, "st", f.State, "ent", f.EntityID)
	var out []spawn.Spawn
	err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		sp, err := decodeSpawn(it)
		out = append(out, sp)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.fillPayloads(ctx, out); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].IssuedAt.Equal(out[j].IssuedAt) {
			return out[i].IssuedAt.Before(out[j].IssuedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// DueSpawns implements service.Store by reading the sparse index range
// gsi1pk = P#<p>#S AND expires_at <= now, earliest first, at most limit
// items: only pending spawns are in the index, so the read is O(due).
// The index is eventually consistent (see the package comment); the
// service re-reads each spawn (GetSpawn) before resolving it. The spawns
// come without their request payload, which lives in their global items
// and which a sweep never needs.
func (s *Store) DueSpawns(ctx context.Context, now time.Time, limit int) ([]spawn.Spawn, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(PendingExpiryIndex),
		KeyConditionExpression:   aws.String("#p = :p AND #exp <= :now"),
		ExpressionAttributeNames: map[string]string{"#p": PendingKey, "#exp": ExpiresAtKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": str(s.pendingPK()), ":now": str(timeText(now)),
		},
		ScanIndexForward:       aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	return queryUpTo(ctx, s, q, limit, decodeSpawn)
}

// Commit implements service.Store: the whole Tx is one TransactWriteItems
// (see the package comment). Created spawns first get their global item
// (project and payload) with a put of its own: it is not part of any
// state the service reads without the spawn, so one left behind by a
// failed commit is harmless: it routes a callback token to a project
// where the spawn does not exist.
func (s *Store) Commit(ctx context.Context, tx service.Tx) error {
	items, owners, indexUnits, err := s.transactItems(tx)
	if err != nil {
		return err
	}
	for _, p := range tx.Spawns {
		if p.Create {
			if err := s.putSpawnOwner(ctx, p.Spawn); err != nil {
				return err
			}
		}
	}
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ClientRequestToken:     aws.String(newRequestToken()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	ctx = withIndexWrites(ctx, indexUnits)
	err = s.do(ctx, func(ctx context.Context) error {
		_, err := s.client.TransactWriteItems(ctx, in, noSDKRetries)
		return err
	})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" && i < len(owners) {
				return &service.ConditionFailed{ID: owners[i]}
			}
		}
	}
	return err
}

// transactItems turns a Tx into transaction items, in the order entities,
// spawns, events, and names the id each item answers for. indexUnits are
// the index writes the counter cannot see in the request: spawns leaving
// (or rewritten in) the pending index.
func (s *Store) transactItems(tx service.Tx) (items []types.TransactWriteItem, owners []string, indexUnits float64, err error) {
	add := func(owner string, it types.TransactWriteItem) {
		items = append(items, it)
		owners = append(owners, owner)
	}
	versions := map[string]int64{}
	for _, p := range tx.Entities {
		it, err := s.entityItem(p.Entity)
		if err != nil {
			return nil, nil, 0, err
		}
		put := &types.Put{TableName: aws.String(s.table), Item: it}
		if p.PrevVersion == 0 {
			put.ConditionExpression = aws.String("attribute_not_exists(#pk)")
			put.ExpressionAttributeNames = map[string]string{"#pk": PartitionKey}
		} else {
			put.ConditionExpression = aws.String("#v = :v")
			put.ExpressionAttributeNames = map[string]string{"#v": "v"}
			put.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(p.PrevVersion)}
		}
		add(p.Entity.ID, types.TransactWriteItem{Put: put})
		versions[p.Entity.ID] = p.Entity.Version
		if p.PrevVersion == 0 {
			seen := map[string]bool{}
			for _, d := range p.Entity.DependsOn {
				if !seen[d] { // one operation per item in a transaction
					seen[d] = true
					add(p.Entity.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: key(s.edgePK(d), p.Entity.ID)}})
				}
			}
		}
	}
	for _, p := range tx.Spawns {
		it, err := s.spawnItem(p.Spawn)
		if err != nil {
			return nil, nil, 0, err
		}
		if p.Create {
			add(p.Spawn.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}})
			continue
		}
		// The stored spawn was pending, so it is in the index: this write
		// removes its index entry (or rewrites it, if it stays pending).
		indexUnits += writeUnits(itemSize(it))
		add(p.Spawn.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
			ConditionExpression:       aws.String("#st = :pending"),
			ExpressionAttributeNames:  map[string]string{"#st": "st"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pending": str(spawn.Pending)}}})
	}
	// One item per entity per commit, keyed by the version it wrote.
	byEntity := map[string][]ledger.Event{}
	var order []string
	for _, ev := range tx.Events {
		if ev.EntityID == "" {
			subject := ev.RequestID
			if subject == "" {
				subject = ev.ID
			}
			it, err := eventsItem(s.historyPK(subject), "X#"+ev.ID, []ledger.Event{ev})
			if err != nil {
				return nil, nil, 0, err
			}
			add(ev.ID, putNew(s.table, it))
			continue
		}
		if _, ok := versions[ev.EntityID]; !ok {
			return nil, nil, 0, fmt.Errorf("dynamo: event %s about %s is not committed with a write of that entity", ev.ID, ev.EntityID)
		}
		if _, seen := byEntity[ev.EntityID]; !seen {
			order = append(order, ev.EntityID)
		}
		byEntity[ev.EntityID] = append(byEntity[ev.EntityID], ev)
	}
	for _, id := range order {
		it, err := eventsItem(s.historyPK(id), versionKey(versions[id]), byEntity[id])
		if err != nil {
			return nil, nil, 0, err
		}
		add(id, putNew(s.table, it))
	}
	if len(items) == 0 {
		return nil, nil, 0, errors.New("dynamo: empty transaction")
	}
	if len(items) > maxTransactItems {
		return nil, nil, 0, fmt.Errorf("dynamo: a commit of %d items exceeds DynamoDB's %d per transaction", len(items), maxTransactItems)
	}
	return items, owners, indexUnits, nil
}

func putNew(table string, it map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}}
}

// putSpawnOwner writes a new spawn's global item (project and payload)
// before the transaction that creates the spawn. It is conditional on
// absence, so that it never overwrites another spawn's payload; finding
// its own item (a retry after a lost response, or an earlier commit of
// the same spawn that failed) is fine, and the transaction decides.
func (s *Store) putSpawnOwner(ctx context.Context, sp spawn.Spawn) error {
	it := s.ownerItem(sp)
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	err := s.do(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	old := ccf.Item
	if old == nil {
		if old, err = s.getItem(ctx, key(spawnOwnerPK(sp.ID), "S")); err != nil {
			return err
		}
	}
	if !sameItem(old, it) {
		return &service.ConditionFailed{ID: sp.ID}
	}
	return nil
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
	in := &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: k, ConsistentRead: aws.Bool(true),
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
