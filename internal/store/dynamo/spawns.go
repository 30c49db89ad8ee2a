package dynamo

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// GetSpawn implements store.Store. A spawn on no entity is its item. A
// spawn on an entity is its item as issued, pending while its entity's
// item names it (ps), and otherwise as the history item of the commit
// that resolved it recorded it; a spawn item with neither is one a failed
// commit left behind, and does not exist.
func (s *Store) GetSpawn(ctx context.Context, id string) (spawn.Spawn, error) {
	it, err := s.readOnce(ctx, key(s.spawnPK(), id))
	if err != nil {
		return spawn.Spawn{}, err
	}
	if it == nil {
		return spawn.Spawn{}, store.ErrNotFound
	}
	sp, err := decodeSpawn(it)
	if err != nil || sp.EntityID == "" {
		return sp, err
	}
	eit, err := s.readOnce(ctx, key(s.entityPK(), sp.EntityID))
	if err != nil {
		return sp, err
	}
	if eit != nil {
		_, st, err := s.readEntityState(eit)
		if err != nil {
			return sp, err
		}
		if st.pending == id {
			return asPending(sp), nil
		}
		// Resolved inline: the resolution rides on the entity's tail.
		if st.tailSpawn != nil && st.tailSpawn.ID == id {
			done := *st.tailSpawn
			done.Request = sp.Request
			return done, nil
		}
	}
	ended, err := s.resolutions(ctx, sp.EntityID, id)
	if err != nil {
		return sp, err
	}
	done, ok := ended[id]
	if !ok {
		return spawn.Spawn{}, store.ErrNotFound
	}
	done.Request = sp.Request
	return done, nil
}

// PendingSpawn implements store.PendingSpawnStore: the entity's item
// keeps a copy of the spawn pending on it (psd, pendingSpawnDoc), so a
// callback, which names both, reads one item where GetSpawn reads two.
// The read is the one the call makes of the entity anyway (readOnce).
func (s *Store) PendingSpawn(ctx context.Context, entity, id string) (spawn.Spawn, bool, error) {
	it, err := s.readOnce(ctx, key(s.entityPK(), entity))
	if err != nil || it == nil {
		return spawn.Spawn{}, false, err
	}
	_, st, err := s.readEntityState(it)
	if err != nil || st.pending != id || st.pendingSpawn == nil {
		return spawn.Spawn{}, false, err
	}
	return *st.pendingSpawn, true, nil
}

// readEntityState decodes an entity item, remembering the state beside
// it (as readEntity), and returns that state too.
func (s *Store) readEntityState(it map[string]types.AttributeValue) (ledger.Entity, entityState, error) {
	e, st, err := decodeEntity(it)
	if err == nil {
		s.states.put(e.ID, st)
	}
	return e, st, err
}

// asPending is a spawn item's document as a pending spawn.
func asPending(sp spawn.Spawn) spawn.Spawn {
	sp.State, sp.Outcome, sp.ResolvedAt = spawn.Pending, "", nil
	return sp
}

// resolutions reads the spawns that commits on entity resolved, from its
// history items, by id; only, if given, the one with id only.
func (s *Store) resolutions(ctx context.Context, entity, only string) (map[string]spawn.Spawn, error) {
	out := map[string]spawn.Spawn{}
	err := s.eachResolution(ctx, entity, only, func(h historyContent) {
		if h.Spawn != nil {
			out[h.Spawn.ID] = *h.Spawn
		}
	})
	return out, err
}

// eachResolution hands fn each history item of entity that records a
// resolved spawn; only, if given, the one that resolved spawn only.
func (s *Store) eachResolution(ctx context.Context, entity, only string, fn func(historyContent)) error {
	q := s.partitionQuery(s.historyPK(entity))
	if only != "" {
		whereEqual(q, "sid", only)
	} else {
		q.FilterExpression = aws.String("attribute_exists(#sid)")
		q.ExpressionAttributeNames["#sid"] = "sid"
	}
	return s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		h, err := decodeHistoryContent(it)
		if err == nil {
			fn(h)
		}
		return err
	})
}

// ListSpawns implements store.Store: one Query over the project's spawn
// items; then, for spawns on entities, their entities' items (which are
// pending) and the history of those with spawns that are not (how they
// ended). Ordered by issue time, then id.
//
// An Indexed filter for the pending spawns, or for the timed-out ones,
// reads the pending_expiry index instead (listPending, listTimedOut): its
// cost follows what it returns.
func (s *Store) ListSpawns(ctx context.Context, f store.SpawnFilter) ([]spawn.Spawn, error) {
	paged := f.After != "" || f.Limit > 0
	switch {
	case f.Indexed && f.State == spawn.Pending:
		return pageOfSpawns(s.listPending(ctx, f.EntityID))(f, paged)
	case f.Indexed && f.Outcome == spawn.TimeoutRestored && f.State != spawn.Pending:
		return pageOfSpawns(s.listTimedOut(ctx, f.EntityID))(f, paged)
	}
	q := s.partitionQuery(s.spawnPK())
	whereEqual(q, "ent", f.EntityID)
	if !paged {
		out, _, err := s.spawnItems(ctx, q, f, 0)
		sortByIssue(out)
		return out, err
	}
	// A page: the partition from After in id order, read on while the
	// items it reads are dropped (not of f.State, left by a failed commit).
	seekAfter(q, f.After)
	out := []spawn.Spawn{}
	for {
		got, more, err := s.spawnItems(ctx, q, f, f.Limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if f.Limit > 0 && len(out) >= f.Limit {
			return out[:f.Limit], nil
		}
		if !more {
			return out, nil
		}
	}
}

// pageOfSpawns pages a listing an index answered whole.
func pageOfSpawns(list []spawn.Spawn, err error) func(store.SpawnFilter, bool) ([]spawn.Spawn, error) {
	return func(f store.SpawnFilter, paged bool) ([]spawn.Spawn, error) {
		if err != nil || !paged {
			return list, err
		}
		return store.PageOf(list, func(sp spawn.Spawn) string { return sp.ID }, f.After, f.Limit), nil
	}
}

// spawnItems reads up to limit items (0: to the end) of the spawn
// partition query q, from its ExclusiveStartKey on, and returns the
// spawns of f among them as they stand: a spawn on an entity is pending
// if its entity's item says so, and otherwise as its entity's history
// says it ended. more says whether the partition has items after those
// read (q then starts after them).
func (s *Store) spawnItems(ctx context.Context, q *dynamodb.QueryInput, f store.SpawnFilter, limit int) (out []spawn.Spawn, more bool, err error) {
	var items []spawn.Spawn
	decode := func(it map[string]types.AttributeValue) (spawn.Spawn, error) { return decodeSpawn(it) }
	if limit > 0 {
		items, more, err = queryPageUpTo(ctx, s, q, limit, decode)
	} else {
		err = s.query(ctx, q, func(it map[string]types.AttributeValue) error {
			sp, err := decodeSpawn(it)
			items = append(items, sp)
			return err
		})
	}
	if err != nil {
		return nil, false, err
	}
	onEntity, err := s.entityStatesOf(ctx, items)
	if err != nil {
		return nil, false, err
	}
	ended := map[string]map[string]spawn.Spawn{}
	out = []spawn.Spawn{}
	for _, sp := range items {
		if sp.EntityID != "" {
			st := onEntity[sp.EntityID]
			if st.pending == sp.ID {
				sp = asPending(sp)
			} else if st.tailSpawn != nil && st.tailSpawn.ID == sp.ID {
				done := *st.tailSpawn
				done.Request = sp.Request
				sp = done
			} else {
				if _, read := ended[sp.EntityID]; !read {
					if ended[sp.EntityID], err = s.resolutions(ctx, sp.EntityID, ""); err != nil {
						return nil, false, err
					}
				}
				done, ok := ended[sp.EntityID][sp.ID]
				if !ok {
					continue // left by a failed commit
				}
				done.Request = sp.Request
				sp = done
			}
		}
		if f.State == "" || sp.State == f.State {
			out = append(out, sp)
		}
	}
	return out, more, nil
}

func sortByIssue(out []spawn.Spawn) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].IssuedAt.Equal(out[j].IssuedAt) {
			return out[i].IssuedAt.Before(out[j].IssuedAt)
		}
		return out[i].ID < out[j].ID
	})
}

// listPending lists the pending spawns (of entity, if given) from every
// shard of the pending_expiry index, then reads the spawn items of those
// on entities (the index entry is the entity's item): eventually
// consistent, and O(pending).
func (s *Store) listPending(ctx context.Context, entity string) ([]spawn.Spawn, error) {
	var entries []spawn.Spawn
	err := s.eachShard(ctx, func(ctx context.Context, pk string) ([]spawn.Spawn, error) {
		var got []spawn.Spawn
		err := s.query(ctx, s.indexPartition(pk), func(it map[string]types.AttributeValue) error {
			sp, err := decodeDue(it)
			got = append(got, sp)
			return err
		})
		return got, err
	}, func(got []spawn.Spawn) { entries = append(entries, got...) })
	if err != nil {
		return nil, err
	}
	out := []spawn.Spawn{}
	var keys []map[string]types.AttributeValue
	expires := map[string]time.Time{}
	for _, sp := range entries {
		switch {
		case entity != "" && sp.EntityID != entity:
		case sp.EntityID == "":
			out = append(out, sp) // a guess spawn's entry is its item
		default:
			keys = append(keys, key(s.spawnPK(), sp.ID))
			expires[sp.ID] = sp.ExpiresAt
		}
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		sp, err := decodeSpawn(it)
		if err != nil {
			return nil, err
		}
		sp = asPending(sp)
		sp.ExpiresAt = expires[sp.ID]
		out = append(out, sp)
	}
	sortByIssue(out)
	return out, nil
}

// listTimedOut lists the spawns whose timeout is still their entity's
// latest spawn, and the timed-out guess spawns (of entity, if given):
// the index partition P#<p>#TO, then, for spawns on entities, the
// history items that recorded the timeouts and the spawns' items (their
// payloads). Eventually consistent, and O(listed).
func (s *Store) listTimedOut(ctx context.Context, entity string) ([]spawn.Spawn, error) {
	out := []spawn.Spawn{}
	var keys []map[string]types.AttributeValue
	payloadOf := map[string]bool{}
	ended, payloads := map[string]spawn.Spawn{}, map[string][]byte{}
	err := s.query(ctx, s.indexPartition(s.timedOutPK()), func(it map[string]types.AttributeValue) error {
		sid := attrString(it, "to")
		if sid == "" {
			sp, err := decodeSpawn(it)
			if err == nil && (entity == "" || sp.EntityID == entity) && sp.Outcome == spawn.TimeoutRestored {
				out = append(out, sp)
			}
			return err
		}
		eid, toh := attrString(it, SortKey), attrString(it, "toh")
		if (entity != "" && eid != entity) || toh == "" {
			return nil
		}
		payloadOf[sid] = true
		// A timeout committed inline is on the entry's tail (the index
		// projects the whole item) until its history item is written.
		if _, st, err := decodeEntity(it); err != nil {
			return err
		} else if st.tailSpawn != nil && st.tailSpawn.ID == sid {
			if st.tailSpawn.Outcome == spawn.TimeoutRestored {
				ended[sid] = *st.tailSpawn
			}
			keys = append(keys, key(s.spawnPK(), sid))
			return nil
		}
		keys = append(keys, key(s.historyPK(eid), toh), key(s.spawnPK(), sid))
		return nil
	})
	if err != nil {
		return nil, err
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if attrString(it, PartitionKey) == s.spawnPK() {
			sp, err := decodeSpawn(it)
			if err != nil {
				return nil, err
			}
			payloads[sp.ID] = sp.Request
			continue
		}
		_, sp, err := decodeHistory(it)
		if err != nil {
			return nil, err
		}
		if sp != nil && payloadOf[sp.ID] && sp.Outcome == spawn.TimeoutRestored {
			ended[sp.ID] = *sp
		}
	}
	for id, sp := range ended {
		sp.Request = payloads[id]
		out = append(out, sp)
	}
	sortByIssue(out)
	return out, nil
}

// indexPartition reads one whole partition of the pending_expiry index.
func (s *Store) indexPartition(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(PendingExpiryIndex),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": PendingKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(pk)},
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
}

// entityStatesOf reads the entities of spawns: the spawn pending on each,
// and the one its tail resolved.
func (s *Store) entityStatesOf(ctx context.Context, spawns []spawn.Spawn) (map[string]entityState, error) {
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, sp := range spawns {
		if sp.EntityID != "" && !seen[sp.EntityID] {
			seen[sp.EntityID] = true
			keys = append(keys, key(s.entityPK(), sp.EntityID))
		}
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entityState, len(items))
	for _, it := range items {
		_, st, err := decodeEntity(it)
		if err != nil {
			return nil, err
		}
		out[attrString(it, SortKey)] = st
	}
	return out, nil
}

// ExpiringSpawns implements store.Store by reading, in parallel, every
// shard of the sparse index range gsi1pk = P#<p>#S[#<n>] AND expires_at
// BETWEEN after+1ns AND until, earliest first, at most limit items from
// each, and merging them by expiry into the earliest limit: only entities
// with a pending spawn and pending spawns on no entity are in the index,
// so the read is O(returned) plus half a read unit per shard. The index
// is eventually consistent (see the package comment); the service re-reads
// each spawn (GetSpawn) before resolving it. An entity's entry yields the
// spawn's id, entity and expiry, which is all a sweep needs.
func (s *Store) ExpiringSpawns(ctx context.Context, after, until time.Time, limit int) ([]spawn.Spawn, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []spawn.Spawn
	err := s.eachShard(ctx, func(ctx context.Context, pk string) ([]spawn.Spawn, error) {
		return queryUpTo(ctx, s, s.pendingRange(pk, timeText(after.Add(time.Nanosecond)), timeText(until)), limit, decodeDue)
	}, func(got []spawn.Spawn) { out = append(out, got...) })
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].ExpiresAt.Equal(out[j].ExpiresAt) {
			return out[i].ExpiresAt.Before(out[j].ExpiresAt)
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(len(out), limit)], nil
}

// pendingRange is the index query of one shard's entries expiring in
// [from, until] (texts of timeKey).
func (s *Store) pendingRange(pk, from, until string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(PendingExpiryIndex),
		KeyConditionExpression:   aws.String("#p = :p AND #exp BETWEEN :after AND :until"),
		ExpressionAttributeNames: map[string]string{"#p": PendingKey, "#exp": ExpiresAtKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": str(pk), ":after": str(from), ":until": str(until),
		},
		ScanIndexForward:       aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
}

// eachShard runs read on every shard of the project's pending spawns at
// once and hands each shard's result to add, one at a time; the first
// error wins.
func (s *Store) eachShard(ctx context.Context, read func(context.Context, string) ([]spawn.Spawn, error), add func([]spawn.Spawn)) error {
	n := s.PendingShards()
	if n == 1 {
		got, err := read(ctx, s.pendingShardPK(0))
		if err == nil {
			add(got)
		}
		return err
	}
	type result struct {
		got []spawn.Spawn
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].got, results[i].err = read(ctx, s.pendingShardPK(i))
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		add(r.got)
	}
	return nil
}

func decodeDue(it map[string]types.AttributeValue) (spawn.Spawn, error) {
	ps := attrString(it, "ps")
	if ps == "" {
		return decodeSpawn(it)
	}
	expires, err := time.Parse(timeKey, attrString(it, ExpiresAtKey))
	if err != nil || ids.Kind(ps) != ids.Spawn {
		return spawn.Spawn{}, errors.New("dynamo: malformed pending index entry " + attrString(it, SortKey))
	}
	return spawn.Spawn{ID: ps, EntityID: attrString(it, SortKey), State: spawn.Pending, ExpiresAt: expires}, nil
}

// entityStates remembers, by entity id, the state beside the entity of the
// entity items this store read last: a commit needs the stored tail and
// pending spawn of the version it replaces, and has usually just read
// them. A version names one state, so a remembered state is used only
// for exactly the version a commit expects.
type entityStates struct {
	mu sync.Mutex
	m  map[string]entityState
}

// maxRememberedEntities bounds the memory; forgetting costs a read.
const maxRememberedEntities = 4096

func (k *entityStates) put(id string, st entityState) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxRememberedEntities {
		k.m = map[string]entityState{}
	}
	k.m[id] = st
}

func (k *entityStates) get(id string, version int64) (entityState, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, ok := k.m[id]
	return st, ok && st.version == version
}
