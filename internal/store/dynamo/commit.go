package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// Commit implements store.Store (see the package comment): the items
// of new spawns on entities first, then the history item of a tail the
// commit replaces (flushTail), then the commit itself as one conditional
// PutItem (a spawn issued or resolved on an entity) or one
// TransactWriteItems (everything else).
func (s *Store) Commit(ctx context.Context, tx store.Tx) error {
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
	// A callback's record rides on its resolution's put (ridingKey):
	// written with it, neither deferred nor an item of its own.
	keyInCommit := !p.keyRides && deferKey(tx.Key)
	for _, sp := range p.spawnItems {
		if err := s.putSpawnItem(ctx, sp); err != nil {
			return err
		}
	}
	if p.flush != nil {
		if err := s.flushTail(ctx, p.flush); err != nil {
			return err
		}
	}
	if p.inline != nil && len(outbox) == 0 && !keyInCommit && len(tx.Unchanged) == 0 {
		return s.putOnce(ctx, p.inline, p.inlineOwner, p.inlineLanded)
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
	// Entities the write decided to leave alone must still be as it read
	// them (store.Tx.Unchanged).
	for _, c := range tx.Unchanged {
		p.items = append(p.items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(s.table),
			Key:                       key(s.entityPK(), c.ID),
			ConditionExpression:       aws.String("#v = :v"),
			ExpressionAttributeNames:  map[string]string{"#v": "v"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(c.Version)},
		}})
		p.owners = append(p.owners, c.ID)
	}
	if keyInCommit {
		its, err := s.keyItems(tx.Key)
		if err != nil {
			return err
		}
		p.items = append(p.items, its...)
		p.owners = append(p.owners, keyOwner)
		for range its[1:] {
			p.owners = append(p.owners, "") // a split response's other parts
		}
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
				return &store.ConditionFailed{ID: p.owners[i]}
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
	// inlineLanded says, after a retried put found the item changed,
	// whether an earlier attempt landed all the same.
	inline       *dynamodb.PutItemInput
	inlineOwner  string
	inlineLanded func(context.Context) (bool, error)
	// flush is the history item of the tail the inline put replaces,
	// written first (flushTail).
	flush map[string]types.AttributeValue
	// keyRides: the commit's key (store.Tx.Key) is kept on the inline
	// resolution it commits (ridingKey).
	keyRides bool
	// items is the transaction otherwise; owners names the id each item's
	// condition answers for.
	items  []types.TransactWriteItem
	owners []string
}

// entitySpawns are the spawn writes of one commit on one entity.
type entitySpawns struct {
	opens  *spawn.Spawn    // issued, pending
	closes *store.SpawnPut // resolves the spawn pending on the entity
	ended  *spawn.Spawn    // issued already resolved
	moves  *store.SpawnPut // still pending, with a later expiry (a heartbeat)
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
func (s *Store) plan(ctx context.Context, tx store.Tx) (commitPlan, error) {
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
		// Each protocol step maps to its writes (store.SpawnPut.Step).
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

// planInline plans the commit that issues or resolves a spawn on an
// entity as one conditional put of the entity item, the commit's events
// kept on the item (the tail) until the entity's next transaction moves
// them into a history item, or its next inline commit puts them there
// first (flushTail): a spawn's lifecycle writes no transaction. The
// resolution's put is the one write that decides it, conditioned as the
// transaction's entity item was (version, the spawn pending there, its
// expiry); the resolved spawn rides on the tail (tailSpawn).
func (s *Store) planInline(ctx context.Context, tx store.Tx, onEntity map[string]*entitySpawns, p *commitPlan) (bool, error) {
	if len(tx.Entities) != 1 || len(tx.Spawns) != 1 || tx.Entities[0].PrevVersion == 0 {
		return false, nil
	}
	put := tx.Entities[0]
	o := onEntity[put.Entity.ID]
	if o == nil || (o.opens == nil) == (o.closes == nil) || o.moves != nil || o.ended != nil {
		return false, nil
	}
	if len(tx.Events) == 0 {
		return false, nil
	}
	for _, ev := range tx.Events {
		if ev.EntityID != put.Entity.ID {
			return false, nil
		}
	}
	st, err := s.stateOf(ctx, put.Entity.ID, put.PrevVersion)
	if err != nil {
		if o.closes != nil && isCondition(err) {
			err = &store.ConditionFailed{ID: o.closes.Spawn.ID} // as planEntity: the resolution lost
		}
		return false, err
	}
	var next entityState
	cond := &dynamodb.PutItemInput{TableName: aws.String(s.table),
		ConditionExpression:                 aws.String("#v = :v"),
		ExpressionAttributeNames:            map[string]string{"#v": "v"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":v": num(put.PrevVersion)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	if o.opens != nil {
		if st.pending != "" {
			return false, &store.ConditionFailed{ID: o.opens.ID}
		}
		if len(st.tail) > 0 {
			// The tail this put replaces goes into its history item first.
			if p.flush, err = eventsItem(s.historyPK(put.Entity.ID), st.tailKey(put.PrevVersion), st.tail, st.tailSpawn, st.tailRecord); err != nil {
				return false, err
			}
		}
		listed := st.listed // the status the entity is listed under stays
		if listed == "" {
			listed = string(o.opens.PreStatus)
		}
		next = entityState{pending: o.opens.ID, pendingSpawn: o.opens, expires: timeText(o.opens.ExpiresAt), tail: tx.Events, listed: listed}
		issued := *o.opens
		p.inlineOwner = put.Entity.ID
		p.inlineLanded = func(ctx context.Context) (bool, error) { return s.issued(ctx, issued) }
	} else {
		c := o.closes
		if st.pending != c.Spawn.ID || st.expires != timeText(c.Expected()) {
			return false, &store.ConditionFailed{ID: c.Spawn.ID} // resolved or moved already, at this very version
		}
		if st.tailSpawn != nil {
			return false, nil // a tail holds one resolution (none while a spawn is pending)
		}
		next = entityState{tail: append(append([]ledger.Event(nil), st.tail...), tx.Events...), listed: st.listed, tailSpawn: &c.Spawn,
			tailRecord: ridingRecord(tx.Key, c.Spawn.ID)}
		p.keyRides = next.tailRecord != nil
		if len(st.tail) > 0 {
			next.tailVersion = put.PrevVersion
			if st.tailVersion != 0 {
				next.tailVersion = st.tailVersion
			}
		}
		if c.Spawn.Outcome == spawn.TimeoutRestored {
			// The entity's latest spawn timed out: it stays in the index,
			// under P#<p>#TO, until another spawn is issued on it.
			next.timedOut, next.toHistory, next.expires = c.Spawn.ID, next.tailKey(put.Entity.Version), st.expires
		}
		cond.ConditionExpression = aws.String("#v = :v AND #ps = :sid AND #exp = :exp")
		cond.ExpressionAttributeNames["#ps"], cond.ExpressionAttributeNames["#exp"] = "ps", ExpiresAtKey
		cond.ExpressionAttributeValues[":sid"], cond.ExpressionAttributeValues[":exp"] = str(c.Spawn.ID), str(timeText(c.Expected()))
		entity, mark := put.Entity.ID, tx.Events[0].ID
		p.inlineOwner = c.Spawn.ID
		p.inlineLanded = func(ctx context.Context) (bool, error) { return s.hasEvent(ctx, entity, mark) }
	}
	if cond.Item, err = s.entityItem(put.Entity, next); err != nil {
		return false, err
	}
	p.inline = cond
	return true, nil
}

// flushTail puts the history item of a tail before the inline put that
// replaces the tail. Any item already under its key holds that tail: this
// flush's earlier attempt, another commit's flush of the same tail, or
// the transaction that moved it (with events of its own), which the
// inline put then finds it lost to.
func (s *Store) flushTail(ctx context.Context, it map[string]types.AttributeValue) error {
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes}
	return ignoreCondition(s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	}))
}

// hasEvent says whether event id about entity is stored: on the entity's
// tail or in its history. An inline resolution whose put was retried and
// found the entity changed landed if its first event is there.
func (s *Store) hasEvent(ctx context.Context, entity, id string) (bool, error) {
	it, err := s.getItem(ctx, key(s.entityPK(), entity))
	if err != nil || it == nil {
		return false, err
	}
	_, st, err := decodeEntity(it)
	if err != nil {
		return false, err
	}
	for _, ev := range st.tail {
		if ev.ID == id {
			return true, nil
		}
	}
	found := false
	err = s.query(ctx, s.partitionQuery(s.historyPK(entity)), func(it map[string]types.AttributeValue) error {
		evs, _, err := decodeHistory(it)
		for _, ev := range evs {
			found = found || ev.ID == id
		}
		return err
	})
	return found, err
}

// planTransaction plans a commit as one transaction, in the order
// entities (each followed by its history item and, when new, its
// dependency edges), spawns on no entity, events about no entity.
func (s *Store) planTransaction(ctx context.Context, tx store.Tx, written map[string]bool, onEntity map[string]*entitySpawns, p *commitPlan) error {
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
		it, err := eventsItem(s.historyPK(subject), "X#"+ev.ID, []ledger.Event{ev}, nil, nil)
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
func (s *Store) planEntity(ctx context.Context, put store.EntityPut, o *entitySpawns, evs []ledger.Event, add func(string, types.TransactWriteItem)) error {
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
				err = &store.ConditionFailed{ID: owner}
			}
			return err
		}
	}
	next := entityState{pending: stored.pending, pendingSpawn: stored.pendingSpawn, expires: stored.expires, timedOut: stored.timedOut,
		toHistory: stored.toHistory, listed: stored.listed}
	// The stored tail goes into history with this commit's events, under
	// the tail's version; or, when the tail and this commit each resolved
	// a spawn, into an item of its own (a history item records one).
	history := append(append([]ledger.Event(nil), stored.tail...), evs...)
	first := e.Version
	var tailItem map[string]types.AttributeValue
	if len(stored.tail) > 0 {
		first = put.PrevVersion
		if stored.tailVersion != 0 {
			first = stored.tailVersion
		}
		if stored.tailSpawn != nil && o.resolved() != nil {
			var err error
			if tailItem, err = eventsItem(s.historyPK(e.ID), versionKey(first), stored.tail, stored.tailSpawn, stored.tailRecord); err != nil {
				return err
			}
			history, first = evs, e.Version
		}
	}
	resolved, record := o.resolved(), (*ridingKey)(nil)
	if resolved == nil && tailItem == nil {
		resolved, record = stored.tailSpawn, stored.tailRecord
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
	// here, with the expiry the write read (store.SpawnPut).
	pendingHere := func(put store.SpawnPut) error {
		if stored.pending != put.Spawn.ID || stored.expires != timeText(put.Expected()) {
			return &store.ConditionFailed{ID: put.Spawn.ID} // resolved or moved already, at this very version
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
		next.pending, next.pendingSpawn, next.expires, next.timedOut, next.toHistory = "", nil, "", "", ""
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
		next.pendingSpawn, next.expires = &o.moves.Spawn, timeText(o.moves.Spawn.ExpiresAt)
	}
	if o.opens != nil {
		if next.pending != "" {
			return &store.ConditionFailed{ID: o.opens.ID} // one pending spawn per entity
		}
		next.pending, next.pendingSpawn, next.expires = o.opens.ID, o.opens, timeText(o.opens.ExpiresAt)
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
	if tailItem != nil {
		add(e.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: tailItem}})
	}
	if len(history) > 0 || resolved != nil {
		h, err := eventsItem(s.historyPK(e.ID), versionKey(first), history, resolved, record)
		if err != nil {
			return err
		}
		if first == e.Version {
			add(e.ID, putNew(s.table, h))
		} else {
			// The tail's item: its flush (flushTail) may have put it
			// already, with the tail alone; this commit, the one that
			// follows the tail's version, writes it whole.
			add(e.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: h}})
		}
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
		add(store.CurieKey(e.Curie), putNew(s.table, c))
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
	return entityState{}, &store.ConditionFailed{ID: id}
}
