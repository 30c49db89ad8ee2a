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
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
)

// Webhooks (docs/hooks.md). The outbox is a delivery item per hook that
// hears an event, put in the same TransactWriteItems as the event (the
// inline put that issues a spawn becomes a transaction when something
// hears spawn.requested); it carries its message, so a worker reads one
// item per delivery.
//
//	item                 pk                         sk
//	hook                 P#<p>#M                    hook#<hook id>      doc, sec (the signing secret), rm
//	delivery (outbox)    P#<p>#HD#<hook id>         <message id>        doc, msg, st; pending: gsi1pk P#<p>#HD#due, expires_at = next attempt
//	attempt (the log)    P#<p>#HA#<hook id>         <at>#<message id>#<n>  doc
//
// The hooks live in the project's meta partition beside its settings and
// secret, so that the one Query a rebuilt store makes of that partition
// (meta.go) also fills its hook cache: a quiet project's commits read no
// hooks of their own. Hooks added before that layout were under
// P#<p>#HOOK (legacyHookPK); Reindex moves them (docs/aws.md).
func (s *Store) hookKey(id string) map[string]types.AttributeValue {
	return key(s.metaPK(), hookSortPrefix+id)
}
func (s *Store) legacyHookPK() string          { return s.prefix + "HOOK" }
func (s *Store) deliveryPK(hook string) string { return s.prefix + "HD#" + hook }
func (s *Store) attemptPK(hook string) string  { return s.prefix + "HA#" + hook }
func (s *Store) dueDeliveriesPK() string       { return s.prefix + "HD#due" }

var _ store.HookStore = (*Store)(nil)

// SetOnAnnounce sets f to run after each write that queued deliveries
// commits (the API function sends a delivery message: docs/aws.md).
func (s *Store) SetOnAnnounce(f func(ctx context.Context)) { s.onAnnounce = f }

// announced runs the OnAnnounce callback after a committed write whose
// outbox was not empty.
func (s *Store) announced(ctx context.Context, outbox []types.TransactWriteItem, err error) error {
	if err == nil && len(outbox) > 0 && s.onAnnounce != nil {
		s.onAnnounce(ctx)
	}
	return err
}

// SetEventBus makes every announced event queue a delivery to the
// deployment's event bus (hooks.BusHook) as well as to the project's hooks.
func (s *Store) SetEventBus(on bool) { s.eventBus = on }

func (s *Store) hookItem(h hooks.Hook) (map[string]types.AttributeValue, error) {
	secret := h.Secret
	doc, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	it := s.hookKey(h.ID)
	it["doc"], it["sec"] = str(string(doc)), str(secret)
	if h.RemovedAt != nil {
		it["rm"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return it, nil
}

func decodeHook(it map[string]types.AttributeValue) (hooks.Hook, error) {
	var h hooks.Hook
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &h); err != nil {
		return h, fmt.Errorf("dynamo: decode hook %s: %w", strings.TrimPrefix(attrString(it, SortKey), hookSortPrefix), err)
	}
	h.Secret = attrString(it, "sec")
	return h, nil
}

func (s *Store) deliveryItem(d hooks.Delivery, m hooks.Message) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	msg, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	it := key(s.deliveryPK(d.HookID), d.MessageID)
	it["doc"], it["msg"], it["st"] = str(string(doc)), str(string(msg)), str(string(d.State))
	if d.State == hooks.StatePending {
		it[PendingKey], it[ExpiresAtKey] = str(s.dueDeliveriesPK()), str(timeText(d.NextAt))
	}
	return it, nil
}

func decodeDueDelivery(it map[string]types.AttributeValue) (store.DueDelivery, error) {
	var due store.DueDelivery
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &due.Delivery); err != nil {
		return due, fmt.Errorf("dynamo: decode delivery: %w", err)
	}
	if err := json.Unmarshal([]byte(attrString(it, "msg")), &due.Message); err != nil {
		return due, fmt.Errorf("dynamo: decode message: %w", err)
	}
	return due, nil
}

// outbox returns the delivery puts announcing msgs, one per live hook
// that hears each: the project's hooks read with one Query when there is
// something to announce, or, with a hook cache (SetHookCache), the list
// such a Query read less than the cache's age ago.
func (s *Store) outbox(ctx context.Context, msgs []hooks.Message) ([]types.TransactWriteItem, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	live, err := s.liveHooks(ctx)
	if err != nil {
		return nil, err
	}
	if s.eventBus {
		live = append(live, hooks.Bus())
	}
	var out []types.TransactWriteItem
	for _, m := range msgs {
		for _, h := range live {
			if !h.Hears(m.Type) {
				continue
			}
			m = m.Identified()
			it, err := s.deliveryItem(hooks.Delivery{MessageID: m.ID, HookID: h.ID, Type: m.Type, State: hooks.StatePending, CreatedAt: m.At, NextAt: m.At}, m)
			if err != nil {
				return nil, err
			}
			out = append(out, putNew(s.table, it))
		}
	}
	return out, nil
}

func eventMessages(evs []ledger.Event) []hooks.Message {
	var out []hooks.Message
	for _, ev := range evs {
		if m, ok := hooks.OfEvent(ev); ok {
			out = append(out, m)
		}
	}
	return out
}

func one(m hooks.Message, ok bool) []hooks.Message {
	if !ok {
		return nil
	}
	return []hooks.Message{m}
}

func askedMessages(a approvals.Approval) []hooks.Message { return one(hooks.OfAsked(a)) }
func endedMessages(a approvals.Approval) []hooks.Message { return one(hooks.OfEnded(a)) }
func heldMessages(p confirm.Pending) []hooks.Message     { return one(hooks.OfHeld(p)) }
func (w *writeSet) addOutbox(items []types.TransactWriteItem) {
	for _, it := range items {
		w.add("", it)
	}
}

// PutHook implements store.HookStore. With a hook cache it returns only
// once every cache that could predate the hook has expired (the cache's
// age after the write), so that every event committed after it returns,
// on any instance, is heard (SetHookCache).
func (s *Store) PutHook(ctx context.Context, h hooks.Hook) error {
	return s.PutHookKeyed(ctx, h, nil)
}

// SetHookCache lets the commits of this store announce to a list of the
// project's hooks read at most ttl ago instead of reading it each time
// (a Query, a read unit, per commit, even in projects without hooks). It
// stays correct across warm instances, each with its own cache, without
// any marker to read: a cache is dated from before its Query was sent and
// used for ttl at most, and PutHook waits ttl after its write before it
// returns, so that by then every cache in use anywhere was read after the
// hook was written. A hook is therefore heard by every event committed
// once its add returned, as without a cache (events committed while the
// add is under way may be heard or not, as before); this store's own
// cache is dropped at once. A removed hook may still be announced to for
// ttl by other instances; its worker fails such a delivery, finding it
// removed. now and sleep are the clock and the wait (nil: the wall clock,
// a timer); ttl 0 reads the hooks on every commit (the default).
func (s *Store) SetHookCache(ttl time.Duration, now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) {
	s.hookCache.mu.Lock()
	defer s.hookCache.mu.Unlock()
	// A list already read stays: it is dated, and used only within ttl of
	// its date (a function sets the cache after its settings' Query, which
	// read the hooks, meta.go). One dated by another clock does not.
	if now != nil {
		s.hookCache.valid = false
	}
	s.hookCache.ttl, s.hookCache.now, s.hookCache.sleep = ttl, now, sleep
}

// hookCache is a store's list of its project's hooks, dated from before
// the Query that read it.
type hookCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	valid bool
	at    time.Time
	hooks []hooks.Hook
	// gen counts this store's hook writes: a list read across one is not kept.
	gen int
}

func (c *hookCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// drop forgets the cached list (this store wrote a hook).
func (c *hookCache) drop() {
	c.mu.Lock()
	c.valid = false
	c.gen++
	c.mu.Unlock()
}

// written drops the cache and waits out every other instance's.
func (c *hookCache) written(ctx context.Context) error {
	c.drop()
	c.mu.Lock()
	ttl, sleep := c.ttl, c.sleep
	c.mu.Unlock()
	if ttl <= 0 {
		return nil
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	return sleep(ctx, ttl)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// liveHooks is the project's hooks for an outbox: read, or cached.
func (s *Store) liveHooks(ctx context.Context) ([]hooks.Hook, error) {
	c := &s.hookCache
	c.mu.Lock()
	ttl := c.ttl
	if ttl > 0 && c.valid && c.clock().Sub(c.at) < ttl {
		out := c.hooks
		c.mu.Unlock()
		return out, nil
	}
	started, gen := c.clock(), c.gen
	c.mu.Unlock()
	list, err := s.ListHooks(ctx)
	if err == nil {
		c.keep(started, gen, list)
	}
	return list, err
}

// before dates a read of the hooks: the clock and this store's hook
// writes before it was sent.
func (c *hookCache) before() (time.Time, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock(), c.gen
}

// keep caches list, read by a Query sent at started after gen of this
// store's hook writes, unless the store wrote a hook since or keeps a
// later read. Only a store with a cache uses it (liveHooks).
func (c *hookCache) keep(started time.Time, gen int, list []hooks.Hook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen && (!c.valid || started.After(c.at)) {
		c.valid, c.at, c.hooks = true, started, list
	}
}

// GetHook implements store.HookStore.
func (s *Store) GetHook(ctx context.Context, id string) (hooks.Hook, error) {
	it, err := s.getItem(ctx, s.hookKey(id))
	if err != nil {
		return hooks.Hook{}, err
	}
	if it == nil {
		return hooks.Hook{}, store.ErrNotFound
	}
	return decodeHook(it)
}

// ListHooks implements store.HookStore: the hook items of the meta
// partition.
func (s *Store) ListHooks(ctx context.Context) ([]hooks.Hook, error) {
	q := s.partitionQuery(s.metaPK())
	q.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :hook)")
	q.ExpressionAttributeNames["#sk"] = SortKey
	q.ExpressionAttributeValues[":hook"] = str(hookSortPrefix)
	var out []hooks.Hook
	err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		h, err := decodeHook(it)
		out = append(out, h)
		return err
	})
	return out, err
}

// hooksOf decodes the hook items among items of the meta partition.
func hooksOf(items map[string]map[string]types.AttributeValue) ([]hooks.Hook, error) {
	var out []hooks.Hook
	for sk, it := range items {
		if !strings.HasPrefix(sk, hookSortPrefix) {
			continue
		}
		h, err := decodeHook(it)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RemoveHook implements store.HookStore: the hook is marked removed
// (conditioned on it not being so), then its pending deliveries are
// failed one by one; one a crash leaves pending is failed by the worker,
// which finds its hook removed.
func (s *Store) RemoveHook(ctx context.Context, id string, at time.Time) error {
	h, err := s.GetHook(ctx, id)
	if err != nil {
		return err
	}
	if h.RemovedAt != nil {
		return store.ErrNotFound
	}
	h.RemovedAt = &at
	it, err := s.hookItem(h)
	if err != nil {
		return err
	}
	err = s.transact(ctx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
		ConditionExpression:      aws.String("attribute_exists(#pk) AND attribute_not_exists(#rm)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey, "#rm": "rm"}}})
	if isCancelled(err) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	s.hookCache.drop() // this instance stops announcing to it at once
	q := s.partitionQuery(s.deliveryPK(id))
	whereEqual(q, "st", string(hooks.StatePending))
	var pending []store.DueDelivery
	if err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		d, err := decodeDueDelivery(it)
		pending = append(pending, d)
		return err
	}); err != nil {
		return err
	}
	for _, d := range pending {
		d.Delivery.State, d.Delivery.LastError = hooks.StateFailed, "the hook was removed"
		it, err := s.deliveryItem(d.Delivery, d.Message)
		if err != nil {
			return err
		}
		s.keepFor(it, d.Delivery.State == hooks.StatePending, at)
		if err := s.transact(ctx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}}); err != nil {
			return err
		}
	}
	return nil
}

// Enqueue implements store.HookStore.
func (s *Store) Enqueue(ctx context.Context, m hooks.Message, hookIDs []string) error {
	m = m.Identified()
	var items []types.TransactWriteItem
	for _, id := range hookIDs {
		it, err := s.deliveryItem(hooks.Delivery{MessageID: m.ID, HookID: id, Type: m.Type, State: hooks.StatePending, CreatedAt: m.At, NextAt: m.At}, m)
		if err != nil {
			return err
		}
		items = append(items, putNew(s.table, it))
	}
	if len(items) == 0 {
		return nil
	}
	return s.transact(ctx, items...)
}

// ClaimDue implements store.HookStore: a range of the pending-expiry
// index (its cost follows what is due), then one conditional update per
// delivery moving its next attempt to now+lease; a delivery another
// worker claimed first (its expires_at moved) is skipped. The index is
// eventually consistent: a delivery it misses is claimed by a later pass.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DueDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(PendingExpiryIndex),
		KeyConditionExpression:    aws.String("#p = :p AND #exp <= :until"),
		ExpressionAttributeNames:  map[string]string{"#p": PendingKey, "#exp": ExpiresAtKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(s.dueDeliveriesPK()), ":until": str(timeText(now))},
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	type seen struct {
		due store.DueDelivery
		exp string
	}
	found, err := queryUpTo(ctx, s, q, limit, func(it map[string]types.AttributeValue) (seen, error) {
		d, err := decodeDueDelivery(it)
		return seen{d, attrString(it, ExpiresAtKey)}, err
	})
	if err != nil {
		return nil, err
	}
	var out []store.DueDelivery
	for _, f := range found {
		d := f.due.Delivery
		err := s.write(ctx, func(ctx context.Context) error {
			_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
				Key:                       key(s.deliveryPK(d.HookID), d.MessageID),
				UpdateExpression:          aws.String("SET #exp = :lease"),
				ConditionExpression:       aws.String("#exp = :seen AND #st = :pending"),
				ExpressionAttributeNames:  map[string]string{"#exp": ExpiresAtKey, "#st": "st"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":lease": str(timeText(now.Add(lease))), ":seen": str(f.exp), ":pending": str(string(hooks.StatePending))},
				ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes}, noSDKRetries)
			return err
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue // another worker claimed it, or it is done
		}
		if err != nil {
			return out, err
		}
		out = append(out, f.due)
	}
	return out, nil
}

// RecordAttempt implements store.HookStore: the attempt and the
// delivery after it in one transaction.
func (s *Store) RecordAttempt(ctx context.Context, a hooks.Attempt, d hooks.Delivery) error {
	cur, err := s.getItem(ctx, key(s.deliveryPK(d.HookID), d.MessageID))
	if err != nil {
		return err
	}
	if cur == nil {
		return store.ErrNotFound
	}
	due, err := decodeDueDelivery(cur)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	att := key(s.attemptPK(a.HookID), attemptSK(a))
	att["doc"] = str(string(doc))
	s.keepFor(att, false, a.At)
	it, err := s.deliveryItem(d, due.Message)
	if err != nil {
		return err
	}
	s.keepFor(it, d.State == hooks.StatePending, a.At)
	return s.transact(ctx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: att}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}})
}

// SetDeliveryRetention makes every delivery this store finishes
// (delivered or failed) and every attempt it logs from now on carry ttl =
// that time + d, so that DynamoDB's TTL deletes them some time after;
// a pending delivery never carries ttl. Zero (the default) keeps them for
// good (settings.DeliveryRetention).
func (s *Store) SetDeliveryRetention(d time.Duration) { s.deliveryRetention = max(d, 0) }

// keepFor gives a delivery or attempt item its ttl under the delivery
// retention, counted from at; none while pending.
func (s *Store) keepFor(it map[string]types.AttributeValue, pending bool, at time.Time) {
	if s.deliveryRetention > 0 && !pending {
		it[TTLAttribute] = epoch(at.Add(s.deliveryRetention))
	}
}

func decodeAttempt(it map[string]types.AttributeValue) (hooks.Attempt, error) {
	var a hooks.Attempt
	err := json.Unmarshal([]byte(attrString(it, "doc")), &a)
	return a, err
}

// attemptSK is an attempt's sort key in its hook's log partition: the
// log's order, by the attempt's time.
func attemptSK(a hooks.Attempt) string {
	return fmt.Sprintf("%s#%s#%06d", timeText(a.At), a.MessageID, a.N)
}

// validAttemptSK says whether sk has an attempt's sort key's form.
func validAttemptSK(sk string) bool {
	parts := strings.Split(sk, "#")
	if len(parts) != 3 || ids.Kind(parts[1]) != ids.Message || len(parts[2]) != 6 {
		return false
	}
	_, err := time.Parse(timeKey, parts[0])
	return err == nil
}

// seekBefore makes the partition query q, read newest first, start
// before the sort key before (none: from the newest).
func seekBefore(q *dynamodb.QueryInput, before string) {
	q.ScanIndexForward = aws.Bool(false)
	if before == "" {
		return
	}
	q.KeyConditionExpression = aws.String(aws.ToString(q.KeyConditionExpression) + " AND #sk < :before")
	q.ExpressionAttributeNames["#sk"] = SortKey
	q.ExpressionAttributeValues[":before"] = str(before)
}

// Deliveries implements store.HookStore: a Query of each partition,
// newest first, from the position's sort key down; an attempt's
// position is its sort key.
func (s *Store) Deliveries(ctx context.Context, hookID string, f store.DeliveryFilter) (store.DeliveryPage, error) {
	var pg store.DeliveryPage
	if f.AttemptsBefore != "" && !validAttemptSK(f.AttemptsBefore) {
		return pg, store.ErrInvalidPosition
	}
	if f.Deliveries > 0 {
		q := s.partitionQuery(s.deliveryPK(hookID))
		seekBefore(q, f.DeliveriesBefore)
		ds, err := queryUpTo(ctx, s, q, f.Deliveries, func(it map[string]types.AttributeValue) (hooks.Delivery, error) {
			d, err := decodeDueDelivery(it)
			return d.Delivery, err
		})
		if err != nil {
			return pg, err
		}
		pg.Deliveries = ds
	}
	if f.Attempts > 0 {
		q := s.partitionQuery(s.attemptPK(hookID))
		seekBefore(q, f.AttemptsBefore)
		as, err := queryUpTo(ctx, s, q, f.Attempts, func(it map[string]types.AttributeValue) (attemptAt, error) {
			a, err := decodeAttempt(it)
			return attemptAt{a, attrString(it, SortKey)}, err
		})
		if err != nil {
			return pg, err
		}
		for _, a := range as {
			pg.Attempts = append(pg.Attempts, a.attempt)
			pg.Positions = append(pg.Positions, a.sk)
		}
	}
	return pg, nil
}

// attemptAt is an attempt with its sort key.
type attemptAt struct {
	attempt hooks.Attempt
	sk      string
}

// LastAttempt implements store.HookStore.
func (s *Store) LastAttempt(ctx context.Context, hookID string) (hooks.Attempt, bool, error) {
	q := s.partitionQuery(s.attemptPK(hookID))
	q.ScanIndexForward = aws.Bool(false)
	as, err := queryUpTo(ctx, s, q, 1, decodeAttempt)
	if err != nil || len(as) == 0 {
		return hooks.Attempt{}, false, err
	}
	return as[0], true, nil
}
