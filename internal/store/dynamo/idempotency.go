package dynamo

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/spawn"
)

// Idempotency-Key records live under P#<p>#I#<key> and carry ttl, so
// DynamoDB deletes them some time after the window; until it does, a
// record older than the window counts as absent.
const (
	// IdempotencyWindow is how long a key's first response is replayed:
	// idempotency.Window, as on every store.
	IdempotencyWindow = idempotency.Window
	// staleClaim is how long a claimed key whose request never finished
	// blocks retries before it may be claimed again (a crashed function).
	staleClaim = idempotency.StaleClaim
	// maxStoredBody is the largest response body remembered: DynamoDB
	// items stop at 400 KB. A larger response is not remembered (the key
	// is released, so a retry runs again); only reads answer that much.
	maxStoredBody = 350 << 10
)

// Claim implements idempotency.Store with one conditional put:
// it succeeds if the key is new, abandoned or past the window, and
// otherwise returns the stored record. Each claim carries a random nonce,
// so that a retry whose first attempt did claim the key (and lost the
// response) recognises its own claim.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, now time.Time) (*idempotency.Record, error) {
	nonce := newRequestToken()
	it := s.idempotencyKey(key)
	it["st"], it["fp"], it["c"], it["n"] = str("claimed"), str(fingerprint), str(timeText(now)), str(nonce)
	it[TTLAttribute] = epoch(now.Add(IdempotencyWindow))
	in := &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR (#st = :claimed AND #c < :stale) OR #c < :expired"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey, "#st": "st", "#c": "c"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":claimed": str("claimed"), ":stale": str(timeText(now.Add(-staleClaim))),
			":expired": str(timeText(now.Add(-IdempotencyWindow))),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes,
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, err
	}
	old := ccf.Item
	if old == nil {
		// Servers that do not return the old item: read it.
		if old, err = s.getItem(ctx, s.idempotencyKey(key)); err != nil {
			return nil, err
		}
		if old == nil {
			return nil, errors.New("dynamo: idempotency record vanished while being claimed")
		}
	}
	if attrString(old, "n") == nonce {
		return nil, nil
	}
	if old, err = s.withParts(ctx, old); err != nil {
		return nil, err
	}
	return storedRecord(old)
}

// storedRecord decodes an Idempotency-Key record.
func storedRecord(it map[string]types.AttributeValue) (*idempotency.Record, error) {
	st := &idempotency.Record{Fingerprint: attrString(it, "fp"), Done: attrString(it, "st") == "done"}
	st.At, _ = time.Parse(timeKey, attrString(it, "c"))
	if v, ok := attrInt(it, "status"); ok {
		st.Status = int(v)
	}
	var err error
	st.Body, err = unpacked(it, "b")
	return st, err
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, status int, body []byte) error {
	if len(body) > maxStoredBody {
		return s.Release(ctx, key)
	}
	name, stored := packed("b", body)
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.idempotencyKey(key),
		UpdateExpression:         aws.String("SET #st = :done, #status = :status, #body = :body"),
		ConditionExpression:      aws.String("#st = :claimed"),
		ExpressionAttributeNames: map[string]string{"#st": "st", "#status": "status", "#body": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":done": str("done"), ":claimed": str("claimed"),
			":status": &types.AttributeValueMemberN{Value: strconv.Itoa(status)},
			":body":   &types.AttributeValueMemberB{Value: stored},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	}
	if len(stored) == 0 {
		// A nil binary is no AttributeValue DynamoDB takes (a Slack
		// request's replay record keeps no body): store none.
		in.UpdateExpression = aws.String("SET #st = :done, #status = :status")
		delete(in.ExpressionAttributeNames, "#body")
		delete(in.ExpressionAttributeValues, ":body")
	}
	return ignoreCondition(s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	}))
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string) error {
	in := &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.idempotencyKey(key),
		ConditionExpression:       aws.String("#st = :claimed"),
		ExpressionAttributeNames:  map[string]string{"#st": "st"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":claimed": str("claimed")},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	return ignoreCondition(s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.DeleteItem(ctx, in, noSDKRetries)
		return err
	}))
}

func (s *Store) idempotencyKey(k string) map[string]types.AttributeValue {
	return key(s.idempotencyPK(k), "I")
}

// ignoreCondition treats a failed condition as done: the record was
// completed or released already (perhaps by this call's own lost attempt).
func ignoreCondition(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return err
}

// Lookup implements idempotency.Store with an eventually
// consistent read (half a read unit): a retry comes after the client's
// backoff; one that still misses the record runs again, and the call's
// own conditions refuse it as a duplicate. A callback token's key whose
// call resolved its spawn inline is on that resolution (ridingKey): on
// the entity's tail, read as the call itself reads it (once a request,
// readOnce), or in the history item the tail moved into; and a call that
// would resolve a spawn still pending has none (no key item read).
func (s *Store) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	rec, err := s.lookup(ctx, key)
	if err != nil || rec == nil || rec.At.Before(now.Add(-IdempotencyWindow)) {
		return nil, err
	}
	return rec, nil
}

func (s *Store) lookup(ctx context.Context, name string) (*idempotency.Record, error) {
	spawnID, named, tool, scoped := idempotency.SpawnOf(name)
	var resolvedOn string // the entity whose history may hold the spawn's resolution
	if scoped {
		rec, entity, known, err := s.ridingRecordOf(ctx, spawnID, named, tool, name)
		if err != nil || known {
			return rec, err
		}
		resolvedOn = entity
	}
	it, err := s.readItem(ctx, s.idempotencyKey(name), false)
	if err != nil {
		return nil, err
	}
	if it == nil {
		if resolvedOn == "" {
			return nil, nil
		}
		return s.historyRecordOf(ctx, resolvedOn, spawnID, name)
	}
	if it, err = s.withParts(ctx, it); err != nil {
		return nil, err
	}
	return storedRecord(it)
}

// ridingRecordOf is what the entity of spawnID says of the record of
// name, a callback token's call of tool: known, the record (or nil) kept
// on the spawn's inline resolution still on the entity's tail, or none
// for a call that would have resolved the spawn still pending there;
// otherwise entity is the spawn's entity when the spawn is resolved and
// its resolution is no longer on the tail (its history item may keep the
// record). named is the entity the call named: its item is read first,
// and believed only where it names spawnID (pending there, with the copy
// of the spawn that gives its kind, or resolved on its tail); otherwise
// the spawn's item says which entity is its own. Its reads are the ones
// the call itself makes (readOnce): for a callback on its own pending
// spawn's entity, that entity's item alone.
func (s *Store) ridingRecordOf(ctx context.Context, spawnID, named, tool, name string) (rec *idempotency.Record, entity string, known bool, err error) {
	entity, kind := named, spawn.Kind("")
	for {
		if entity != "" {
			eit, err := s.readOnce(ctx, key(s.entityPK(), entity))
			if err != nil {
				return nil, "", false, err
			}
			if eit != nil {
				_, st, err := s.readEntityState(eit)
				if err != nil {
					return nil, "", false, err
				}
				if st.pending == spawnID && kind == "" && st.pendingSpawn != nil {
					kind = st.pendingSpawn.Kind
				}
				switch {
				case st.pending == spawnID && kind != "":
					// A terminal action that committed would have resolved
					// it; any other call (a heartbeat) keeps its record as
					// an item.
					return nil, "", slices.Contains(spawn.CallbackActions(kind), tool), nil
				case st.tailSpawn != nil && st.tailSpawn.ID == spawnID:
					if st.tailRecord != nil && st.tailRecord.Name == name {
						return st.tailRecord.record(), "", true, nil
					}
					return nil, "", false, nil
				}
			}
		}
		if kind != "" {
			// The spawn's own entity: resolved, and no longer on its tail.
			return nil, entity, false, nil
		}
		it, err := s.readOnce(ctx, key(s.spawnPK(), spawnID))
		if err != nil || it == nil {
			return nil, "", false, err
		}
		sp, err := decodeSpawn(it)
		if err != nil || sp.EntityID == "" || sp.Kind == "" {
			return nil, "", false, err
		}
		entity, kind = sp.EntityID, sp.Kind // the loop ends on its next pass
	}
}

// historyRecordOf is the record of name kept with spawnID's resolution in
// entity's history, or nil.
func (s *Store) historyRecordOf(ctx context.Context, entity, spawnID, name string) (*idempotency.Record, error) {
	var rec *idempotency.Record
	err := s.eachResolution(ctx, entity, spawnID, func(h historyContent) {
		if h.Key != nil && h.Key.Name == name {
			rec = h.Key.record()
		}
	})
	return rec, err
}

// Remember implements idempotency.Store with one conditional put:
// the first response stored (or one past the window) stays.
func (s *Store) Remember(ctx context.Context, key, fingerprint string, status int, body []byte, now time.Time) error {
	if len(body) > maxStoredBody {
		return nil
	}
	it := s.idempotencyKey(key)
	name, stored := packed("b", body)
	it["st"], it["fp"], it["c"] = str("done"), str(fingerprint), str(timeText(now))
	it["status"], it[name] = &types.AttributeValueMemberN{Value: strconv.Itoa(status)}, &types.AttributeValueMemberB{Value: stored}
	it[TTLAttribute] = epoch(now.Add(IdempotencyWindow))
	in := &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: it,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #c < :expired"),
		ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey, "#c": "c"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":expired": str(timeText(now.Add(-IdempotencyWindow)))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	return ignoreCondition(s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	}))
}

// deferKey marks a call's response (store.Tx.Key) Deferred when the
// service's own conditions apply the call once (Put.MayDefer: assume,
// overlook, a callback token's call) and it does not ride on the
// resolution the commit makes (ridingKey): then it is not an item of the
// call's commit. As one it would cost 2 write units and turn an assume's
// single conditional put into a transaction: 13 write units a keyed
// lifecycle instead of 10, over the cost goal (docs/aws-cost.md). The
// transport remembers it after the commit, one conditional put of 1 unit;
// a function that dies between the two leaves its retry to the service's
// own conditions, which apply an exclusive call once (docs/design.md §12).
// Every other key is written in the commit (keyItem): it reports whether
// the commit must carry it.
func deferKey(k *idempotency.Put) (inCommit bool) {
	if k == nil {
		return false
	}
	if k.MayDefer {
		k.Deferred = true
		return false
	}
	return true
}

// keyOwner names the key item among a commit's conditions: a failed
// condition on it is idempotency.ErrTaken.
const keyOwner = "idempotency#key"

// keyItems is a call's response as items of its commit: the record,
// added only if the key is absent or past the window (as Remember), so
// that the commit applies the call together with its response or not at
// all. A stored body over maxStoredBody (an item stops at 400 KB) is
// split: the record holds its first part and the count of parts ("np"),
// and items I#1, I#2, … the others, plain puts in the same transaction
// (which stops at 4 MB: idempotency.MaxBody keeps a response well
// inside it). The record's first item answers for the key's condition.
func (s *Store) keyItems(k *idempotency.Put) ([]types.TransactWriteItem, error) {
	name, stored := packed("b", k.Body)
	if len(stored) > maxKeyParts*maxStoredBody {
		return nil, errors.New("dynamo: an idempotent response of more than " + strconv.Itoa(maxKeyParts*maxStoredBody>>10) + " KiB stored cannot ride its commit")
	}
	var parts [][]byte
	for len(stored) > maxStoredBody {
		parts, stored = append(parts, stored[:maxStoredBody]), stored[maxStoredBody:]
	}
	parts = append(parts, stored)
	pk := s.idempotencyPK(k.Name)
	ttl := epoch(k.At.Add(IdempotencyWindow))
	it := key(pk, "I")
	it["st"], it["fp"], it["c"] = str("done"), str(k.Fingerprint), str(timeText(k.At))
	it["status"], it[name] = &types.AttributeValueMemberN{Value: strconv.Itoa(k.Status)}, &types.AttributeValueMemberB{Value: parts[0]}
	it[TTLAttribute] = ttl
	if len(parts) > 1 {
		it["np"] = num(int64(len(parts)))
	}
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(s.table), Item: it,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #c < :expired"),
		ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey, "#c": "c"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":expired": str(timeText(k.At.Add(-IdempotencyWindow)))},
	}}}
	for i, part := range parts[1:] {
		pit := key(pk, keyPartSK(i+1))
		pit[name], pit[TTLAttribute] = &types.AttributeValueMemberB{Value: part}, ttl
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: pit}})
	}
	return items, nil
}

// maxKeyParts bounds the items one response is stored in.
const maxKeyParts = 8

// keyPartSK is the sort key of part i (from 1) of a split response.
func keyPartSK(i int) string { return "I#" + strconv.Itoa(i) }

// withParts is the record it with the other parts of a split response
// (keyItems) read back, strongly consistent, and joined under the
// record's own attribute: storedRecord decodes it as one item.
func (s *Store) withParts(ctx context.Context, it map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	n, _ := attrInt(it, "np")
	if n < 2 {
		return it, nil
	}
	var name string
	for _, cand := range []string{"b" + dictionarySuffix, "bz", "b"} {
		if attrBytes(it, cand) != nil {
			name = cand
			break
		}
	}
	body := append([]byte{}, attrBytes(it, name)...)
	pk := attrString(it, PartitionKey)
	for i := 1; i < int(n); i++ {
		part, err := s.getItem(ctx, key(pk, keyPartSK(i)))
		if err != nil {
			return nil, err
		}
		if part == nil || attrBytes(part, name) == nil {
			return nil, errors.New("dynamo: a part of a stored response is missing")
		}
		body = append(body, attrBytes(part, name)...)
	}
	joined := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		joined[k] = v
	}
	joined[name] = &types.AttributeValueMemberB{Value: body}
	return joined, nil
}

var _ idempotency.Store = (*Store)(nil)
