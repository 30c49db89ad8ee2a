package dynamo

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// GetEntity implements store.Store.
func (s *Store) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	var e ledger.Entity
	it, err := s.readOnce(ctx, key(s.entityPK(), id))
	if err != nil {
		return e, err
	}
	if it == nil {
		return e, store.ErrNotFound
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

// ListEntities implements store.Store. Terms are read through their
// CURIE items (one consistent Query of P#<p>#CURIE, then the terms it
// names), so that a term's CURIE check at define reads the project's
// terms, not its ledger; an Indexed status filter reads the sparse
// entity_status index and then the entities it names, consistently
// (dropping any whose status has changed since); everything else is one
// Query over the project's entities. Ordered by id.
func (s *Store) ListEntities(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error) {
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
	return store.PageOf(whole, func(e ledger.Entity) string { return e.ID }, f.After, f.Limit), nil
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
func (s *Store) listByStatus(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error) {
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

// Dependents implements store.Store: the dependency edges of id, then
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

// Events implements store.Store: the entity's history partition in sort
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
