package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

// Tier escalation (store.ApprovalStore) lives in the same table, under
// the keys listed in the package comment:
//
//   - A session item holds the session and its frame counter c, the last
//     cursor of its frame log. Appending a frame is one TransactWriteItems
//     that updates c from its current value (condition c = :last) and puts
//     the frame under cursor last+1, together with the write the frame
//     belongs to (the question, or the announced mark of an ending). Two
//     appenders that read the same c cannot both commit: the loser re-reads
//     and tries again. Cursors are therefore 1, 2, 3, … without gaps, and
//     cursor order is commit order.
//   - An approval item is conditioned on state = pending when it is
//     resolved: the first answer wins. While pending it sits in the
//     pending_expiry index under gsi1pk = P#<p>#APR#due with its deadline
//     as expires_at; once resolved (if it was asked) under
//     P#<p>#APR#unannounced until its ending frame is appended, with its
//     creation time as expires_at; announced, it leaves the index. Due
//     and unannounced approvals are index ranges: their reads cost what
//     they return, not what is stored.
//   - A call's partition holds its lock (sort key L, holder h: the one
//     open or granted question of the call) and one pointer per approval
//     of the call, so that listing a call's records (which every
//     escalation does) reads that call only.
//   - A question with a reminder (RemindAt) has a reminder item, put with
//     it and in the index under P#<p>#APR#remind by its remind_at, holding
//     the question as asked. Sending the reminder deletes the item,
//     conditioned on its existence and on the question being pending, in
//     the transaction that queues the message: once per question, however
//     many sweepers race. Resolving the question deletes it too.
//   - Frames may carry ttl (SetFrameRetention), which lets DynamoDB delete
//     old frames. A deadline is never decided by TTL: it is the approval's
//     deadline, swept through the index and by the timeout queue.

// Attributes of the approval items, beside doc and st:
//
//	c     a session's last frame cursor (number)
//	ses   an approval's session, call its call id
//	ann   present (1) once an approval's ending frame is appended
//	h     the approval holding a call's lock
//	at    a subscriber's last read (fixed-width time text)

// callLockKey is the sort key of a call's lock item; pointers are keyed by
// approval id (apr:…), which never equals it.
const callLockKey = "L"

// cursorAttempts bounds the re-reads of a contended frame counter. Each
// failed attempt means another frame of the same session committed, so
// the bound is only reached by a session with that many simultaneous
// appenders.
const cursorAttempts = 100

func (s *Store) sessionPK() string              { return s.prefix + "SES" }
func (s *Store) approvalPK() string             { return s.prefix + "APR" }
func (s *Store) callPK(call string) string      { return s.prefix + "CALL#" + call }
func (s *Store) framePK(session string) string  { return s.prefix + "FR#" + session }
func (s *Store) leasePK(session string) string  { return s.prefix + "SUB#" + session }
func (s *Store) dueApprovalsPK() string         { return s.prefix + "APR#due" }
func (s *Store) unannouncedApprovalsPK() string { return s.prefix + "APR#unannounced" }
func (s *Store) reminderPK() string             { return s.prefix + "REM" }
func (s *Store) dueRemindersPK() string         { return s.prefix + "APR#remind" }
func cursorKey(c int64) string                  { return fmt.Sprintf("%012d", c) }

// SetFrameRetention makes every frame this store appends from now on
// carry ttl = its time + d (a question's frame: its deadline + d, so that
// an open question's frame outlives the question), so that DynamoDB's TTL
// deletes it some time after that; zero (the default) keeps frames for
// good. A session read from its start after its early frames are gone
// begins at a later cursor, and the frame-log audit reports the missing
// frames: set it well beyond any session's life.
func (s *Store) SetFrameRetention(d time.Duration) { s.frameRetention = max(d, 0) }

// CreateSession implements store.ApprovalStore: one conditional put.
func (s *Store) CreateSession(ctx context.Context, ses approvals.Session) error {
	doc, err := json.Marshal(ses)
	if err != nil {
		return err
	}
	it := key(s.sessionPK(), ses.ID)
	it["doc"], it["c"] = str(string(doc)), num(0)
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityIndexes}
	// A retry after a lost response finds its own session (frames may
	// have moved its counter since): that is success.
	return s.putOnce(ctx, in, ses.ID, func(ctx context.Context) (bool, error) {
		old, err := s.getItem(ctx, key(s.sessionPK(), ses.ID))
		return err == nil && old != nil && attrString(old, "doc") == string(doc), err
	})
}

// GetSession implements store.ApprovalStore.
func (s *Store) GetSession(ctx context.Context, id string) (approvals.Session, error) {
	it, err := s.getItem(ctx, key(s.sessionPK(), id))
	if err != nil {
		return approvals.Session{}, err
	}
	if it == nil {
		return approvals.Session{}, store.ErrNotFound
	}
	return decodeSession(it)
}

// ListSessions implements store.ApprovalStore: one Query over the
// project's sessions, oldest first.
func (s *Store) ListSessions(ctx context.Context) ([]approvals.Session, error) {
	var out []approvals.Session
	err := s.query(ctx, s.partitionQuery(s.sessionPK()), func(it map[string]types.AttributeValue) error {
		ses, err := decodeSession(it)
		out = append(out, ses)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].OpenedAt.Equal(out[j].OpenedAt) {
			return out[i].OpenedAt.Before(out[j].OpenedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func decodeSession(it map[string]types.AttributeValue) (approvals.Session, error) {
	var ses approvals.Session
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &ses); err != nil {
		return ses, fmt.Errorf("dynamo: decode session %s: %w", attrString(it, SortKey), err)
	}
	return ses, nil
}

// approvalItem is the stored approval: in the index while pending (by
// deadline) and while asked, resolved and not announced (by creation).
// Announced is never stored in doc: the attribute ann says it.
func (s *Store) approvalItem(a approvals.Approval) (map[string]types.AttributeValue, error) {
	a.Announced = false
	doc, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	it := key(s.approvalPK(), a.ID)
	it["doc"], it["st"], it["ses"], it["call"] = str(string(doc)), str(string(a.State)), str(a.SessionID), str(a.CallID)
	// shown is the digest of the question's shown fields: the answer's
	// conditional write is conditioned on it (ResolveApproval).
	it[shownAttr] = str(approvals.ShownDigest(a.Shown()))
	if a.FirstApproval != nil {
		it[firstAttr] = str(a.FirstApproval.By)
	}
	switch {
	case a.State == approvals.Pending:
		it[PendingKey], it[ExpiresAtKey] = str(s.dueApprovalsPK()), str(timeText(a.Deadline))
	case a.Asked:
		it[PendingKey], it[ExpiresAtKey] = str(s.unannouncedApprovalsPK()), str(timeText(a.CreatedAt))
	}
	return it, nil
}

func decodeApproval(it map[string]types.AttributeValue) (approvals.Approval, error) {
	var a approvals.Approval
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &a); err != nil {
		return a, fmt.Errorf("dynamo: decode approval %s: %w", attrString(it, SortKey), err)
	}
	_, a.Announced = it["ann"]
	return a, nil
}

// frameItem is a stored frame, with ttl when frames are kept for a while only.
func (s *Store) frameItem(f approvals.Frame) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	it := key(s.framePK(f.SessionID), cursorKey(f.Cursor))
	it["doc"] = str(string(doc))
	if s.frameRetention > 0 {
		from := f.At
		if f.Deadline != nil && f.Deadline.After(from) {
			from = *f.Deadline
		}
		it[TTLAttribute] = epoch(from.Add(s.frameRetention))
	}
	return it, nil
}

func decodeFrame(it map[string]types.AttributeValue) (approvals.Frame, error) {
	var f approvals.Frame
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &f); err != nil {
		return f, fmt.Errorf("dynamo: decode frame %s: %w", attrString(it, SortKey), err)
	}
	return f, nil
}

// writeSet is the items of one transaction and, per item, the id a failed
// condition on it answers for ("" for the frame counter and the frame:
// another appender got there first, so try again).
type writeSet struct {
	items  []types.TransactWriteItem
	owners []string
}

func (w *writeSet) add(owner string, it types.TransactWriteItem) {
	w.items = append(w.items, it)
	w.owners = append(w.owners, owner)
}

// CreateApproval implements store.ApprovalStore. The approval, its
// pointer in the call's partition, the call's lock (for a pending or
// granted record) and, for a question, the frame counter and the
// question frame are one TransactWriteItems.
func (s *Store) CreateApproval(ctx context.Context, a approvals.Approval, question *approvals.Frame) error {
	it, err := s.approvalItem(a)
	if err != nil {
		return err
	}
	outbox, err := s.outbox(ctx, askedMessages(a))
	if err != nil {
		return err
	}
	var rem map[string]types.AttributeValue
	if a.Asked && a.State == approvals.Pending && a.RemindAt != nil {
		rem = key(s.reminderPK(), a.ID)
		rem["doc"] = it["doc"]
		rem[PendingKey], rem[ExpiresAtKey] = str(s.dueRemindersPK()), str(timeText(*a.RemindAt))
	}
	build := func(context.Context) (writeSet, error) {
		var w writeSet
		w.addOutbox(outbox)
		w.add(a.ID, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}})
		pointer := key(s.callPK(a.CallID), a.ID)
		pointer["ses"] = str(a.SessionID)
		w.add("", types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: pointer}})
		if rem != nil {
			w.add("", types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: rem}})
		}
		if a.State == approvals.Pending || a.Verdict == approvals.Approved {
			w.add(a.CallID, types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table),
				Key:                       key(s.callPK(a.CallID), callLockKey),
				UpdateExpression:          aws.String("SET #h = :id"),
				ConditionExpression:       aws.String("attribute_not_exists(#h)"),
				ExpressionAttributeNames:  map[string]string{"#h": "h"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(a.ID)}}})
		}
		return w, nil
	}
	if question == nil {
		// No frame, so no counter: the session only has to exist, and
		// sessions are never deleted.
		ses, err := s.getItem(ctx, key(s.sessionPK(), a.SessionID))
		if err != nil {
			return err
		}
		if ses == nil {
			return store.ErrNotFound
		}
		w, err := build(ctx)
		if err != nil {
			return err
		}
		return s.commitSet(ctx, w)
	}
	f := *question
	f.SessionID = a.SessionID
	if err := s.announced(ctx, outbox, s.appendFrame(ctx, &f, build)); err != nil {
		return err
	}
	question.Cursor = f.Cursor
	return nil
}

// appendFrame commits the writes build returns together with frame f
// under its session's next cursor, re-reading the counter (and calling
// build again, which re-reads what it checks) until no other frame of the
// session commits in between. ErrNotFound if the session does not exist.
func (s *Store) appendFrame(ctx context.Context, f *approvals.Frame, build func(context.Context) (writeSet, error)) error {
	for attempt := 0; ; attempt++ {
		w, err := build(ctx)
		if err != nil {
			return err
		}
		ses, err := s.getItem(ctx, key(s.sessionPK(), f.SessionID))
		if err != nil {
			return err
		}
		if ses == nil {
			return store.ErrNotFound
		}
		last, _ := attrInt(ses, "c")
		f.Cursor = last + 1
		fr, err := s.frameItem(*f)
		if err != nil {
			return err
		}
		w.add("", types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table),
			Key:                       key(s.sessionPK(), f.SessionID),
			UpdateExpression:          aws.String("SET #c = :next"),
			ConditionExpression:       aws.String("#c = :last"),
			ExpressionAttributeNames:  map[string]string{"#c": "c"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":last": num(last), ":next": num(last + 1)}}})
		w.add("", putNew(s.table, fr))
		err = s.commitSet(ctx, w)
		if !errors.Is(err, errCounterMoved) {
			return err
		}
		if attempt+1 >= cursorAttempts {
			return fmt.Errorf("dynamo: session %s: another frame committed first on each of %d attempts", f.SessionID, cursorAttempts)
		}
		if err := contention.sleep(ctx, attempt); err != nil {
			return err
		}
	}
}

// contention spaces the retries of appenders that lost the counter to
// each other: short, jittered, capped.
var contention = backoff{base: 2 * time.Millisecond, cap: 50 * time.Millisecond}

// errCounterMoved says a transaction failed only on items without an
// owner: the frame counter moved (another frame committed first).
var errCounterMoved = errors.New("dynamo: the frame counter moved")

// commitSet writes w in one transaction (one ClientRequestToken for all
// its retries). A failed condition on an owned item is a ConditionFailed
// naming the first such item's owner.
func (s *Store) commitSet(ctx context.Context, w writeSet) error {
	err := s.transact(ctx, w.items...)
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return err
	}
	moved := false
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) != "ConditionalCheckFailed" || i >= len(w.owners) {
			continue
		}
		if w.owners[i] != "" {
			return &store.ConditionFailed{ID: w.owners[i]}
		}
		moved = true
	}
	if moved {
		return errCounterMoved
	}
	return err
}

// GetApproval implements store.ApprovalStore.
func (s *Store) GetApproval(ctx context.Context, id string) (approvals.Approval, error) {
	it, err := s.getItem(ctx, key(s.approvalPK(), id))
	if err != nil {
		return approvals.Approval{}, err
	}
	if it == nil {
		return approvals.Approval{}, store.ErrNotFound
	}
	return decodeApproval(it)
}

// ListApprovals implements store.ApprovalStore, in creation order. A
// call's records (what every escalation reads) come from the call's own
// partition of pointers; everything else from one Query over the
// project's approvals.
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]approvals.Approval, error) {
	var out []approvals.Approval
	keep := func(a approvals.Approval) {
		if (f.SessionID == "" || a.SessionID == f.SessionID) && (f.CallID == "" || a.CallID == f.CallID) && (f.State == "" || a.State == f.State) {
			out = append(out, a)
		}
	}
	if f.CallID != "" {
		q := s.partitionQuery(s.callPK(f.CallID))
		q.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :apr)")
		q.ExpressionAttributeNames["#sk"] = SortKey
		q.ExpressionAttributeValues[":apr"] = str(ids.Approval + ":")
		var keys []map[string]types.AttributeValue
		if err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
			keys = append(keys, key(s.approvalPK(), attrString(it, SortKey)))
			return nil
		}); err != nil {
			return nil, err
		}
		items, err := s.batchGet(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			a, err := decodeApproval(it)
			if err != nil {
				return nil, err
			}
			keep(a)
		}
	} else {
		q := s.partitionQuery(s.approvalPK())
		whereEqual(q, "ses", f.SessionID, "st", string(f.State))
		if err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
			a, err := decodeApproval(it)
			if err == nil {
				keep(a)
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	sortApprovals(out)
	return out, nil
}

func sortApprovals(as []approvals.Approval) {
	sort.SliceStable(as, func(i, j int) bool {
		if !as[i].CreatedAt.Equal(as[j].CreatedAt) {
			return as[i].CreatedAt.Before(as[j].CreatedAt)
		}
		return as[i].ID < as[j].ID
	})
}

// ResolveApproval implements store.ApprovalStore: the resolved record
// replaces the stored one only while that is pending (the first answer
// wins), and an ending other than an approval frees the call's lock in
// the same transaction.
func (s *Store) ResolveApproval(ctx context.Context, a approvals.Approval) error {
	it, err := s.approvalItem(a)
	if err != nil {
		return err
	}
	var w writeSet
	w.add(a.ID, types.TransactWriteItem{Put: s.putIfPending(it, a)})
	outbox, err := s.outbox(ctx, endedMessages(a))
	if err != nil {
		return err
	}
	w.addOutbox(outbox)
	if a.State != approvals.Pending && a.Verdict != approvals.Approved {
		w.add(lockOwner, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table),
			Key:                       key(s.callPK(a.CallID), callLockKey),
			ConditionExpression:       aws.String("#h = :id"),
			ExpressionAttributeNames:  map[string]string{"#h": "h"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(a.ID)}}})
	}
	if a.State != approvals.Pending && a.RemindAt != nil {
		w.add("", types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(s.reminderPK(), a.ID)}})
	}
	err = s.announced(ctx, outbox, s.commitSet(ctx, w))
	if store.FailedOn(err, lockOwner) {
		return fmt.Errorf("dynamo: the lock of call %q is not held by pending approval %s", a.CallID, a.ID)
	}
	return err
}

// shownAttr is the attribute of an approval item holding its shown digest.
const shownAttr = "shown"

// firstAttr is the attribute of a two-person question's first approver.
const firstAttr = "fa"

// putIfPending puts item it only while the stored question is pending and
// is the version decidedOn was decided on: the same shown fields and the
// same first approval (or none). An item written before the digest was
// stored has none: its fields were written once and never changed.
func (s *Store) putIfPending(it map[string]types.AttributeValue, decidedOn approvals.Approval) *types.Put {
	cond := "#st = :pending AND (attribute_not_exists(#sh) OR #sh = :shown)"
	values := map[string]types.AttributeValue{":pending": str(string(approvals.Pending)),
		":shown": str(approvals.ShownDigest(decidedOn.Shown()))}
	if decidedOn.FirstApproval == nil {
		cond += " AND attribute_not_exists(#fa)"
	} else {
		cond += " AND #fa = :fa"
		values[":fa"] = str(decidedOn.FirstApproval.By)
	}
	return &types.Put{TableName: aws.String(s.table), Item: it, ConditionExpression: aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#st": "st", "#sh": shownAttr, "#fa": firstAttr},
		ExpressionAttributeValues: values}
}

// RecordFirstApproval implements store.ApprovalStore: one conditional
// Put of the still-pending question with its first approval, conditioned
// on it being pending, the question shown, and having no first approval.
func (s *Store) RecordFirstApproval(ctx context.Context, a approvals.Approval) error {
	if a.State != approvals.Pending || a.FirstApproval == nil {
		return fmt.Errorf("dynamo: %s is not a first approval", a.ID)
	}
	it, err := s.approvalItem(a)
	if err != nil {
		return err
	}
	decidedOn := a
	decidedOn.FirstApproval = nil
	var w writeSet
	w.add(a.ID, types.TransactWriteItem{Put: s.putIfPending(it, decidedOn)})
	return s.commitSet(ctx, w)
}

// lockOwner marks the lock release of ResolveApproval: held by the pending
// approval it resolves, so its condition fails only on damaged data.
const lockOwner = "\x00call-lock"

// AnnounceEnding implements store.ApprovalStore: the announced mark
// (conditioned on the approval being resolved and not yet announced), the
// frame counter and the ending frame are one transaction, so a request
// gets at most one ending frame however many announcers race.
func (s *Store) AnnounceEnding(ctx context.Context, f approvals.Frame) (approvals.Frame, error) {
	build := func(ctx context.Context) (writeSet, error) {
		var w writeSet
		it, err := s.getItem(ctx, key(s.approvalPK(), f.RequestID))
		if err != nil {
			return w, err
		}
		if it == nil {
			return w, store.ErrNotFound
		}
		a, err := decodeApproval(it)
		if err != nil {
			return w, err
		}
		if a.SessionID != f.SessionID || a.State != approvals.Resolved || !a.Asked || a.Announced {
			return w, &store.ConditionFailed{ID: f.RequestID}
		}
		w.add(f.RequestID, types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table),
			Key:                       key(s.approvalPK(), f.RequestID),
			UpdateExpression:          aws.String("SET #ann = :one REMOVE #g, #e"),
			ConditionExpression:       aws.String("#st = :resolved AND attribute_not_exists(#ann)"),
			ExpressionAttributeNames:  map[string]string{"#ann": "ann", "#st": "st", "#g": PendingKey, "#e": ExpiresAtKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":resolved": str(string(approvals.Resolved))}}})
		return w, nil
	}
	err := s.appendFrame(ctx, &f, build)
	return f, err
}

// Frames implements store.ApprovalStore: one Query of the session's
// frame partition from the cursor after `after`.
func (s *Store) Frames(ctx context.Context, sessionID string, after int64, limit int) ([]approvals.Frame, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := s.partitionQuery(s.framePK(sessionID))
	q.KeyConditionExpression = aws.String("#pk = :pk AND #sk > :after")
	q.ExpressionAttributeNames["#sk"] = SortKey
	q.ExpressionAttributeValues[":after"] = str(cursorKey(max(after, 0)))
	out, err := queryUpTo(ctx, s, q, limit, decodeFrame)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TouchSubscriber implements store.ApprovalStore: one conditional
// update that only ever moves the subscriber's last read forwards.
func (s *Store) TouchSubscriber(ctx context.Context, sessionID, subscriber string, at time.Time) error {
	in := &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(s.leasePK(sessionID), subscriber),
		UpdateExpression:          aws.String("SET #at = :at"),
		ConditionExpression:       aws.String("attribute_not_exists(#at) OR #at < :at"),
		ExpressionAttributeNames:  map[string]string{"#at": "at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(timeText(at))},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // a later read is already recorded
	}
	return err
}

// LastRead implements store.ApprovalStore: the latest of the session's
// subscribers' reads (one Query of a partition of a few items).
func (s *Store) LastRead(ctx context.Context, sessionID string) (time.Time, error) {
	var last string
	err := s.query(ctx, s.partitionQuery(s.leasePK(sessionID)), func(it map[string]types.AttributeValue) error {
		last = max(last, attrString(it, "at"))
		return nil
	})
	if err != nil || last == "" {
		return time.Time{}, err
	}
	return time.Parse(timeKey, last)
}

// DueApprovals implements store.ApprovalStore by reading the index range
// gsi1pk = P#<p>#APR#due AND expires_at <= now, earliest deadline first:
// only pending approvals are in that partition, so the read is O(due).
// Like ExpiringSpawns it reads an eventually consistent index; the service
// resolves each one with a write conditioned on it still being pending.
func (s *Store) DueApprovals(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error) {
	return s.indexedApprovals(ctx, s.dueApprovalsPK(), timeText(now), limit)
}

// DueReminders implements store.ApprovalStore by reading the index
// range gsi1pk = P#<p>#APR#remind AND expires_at <= now: only unsent
// reminders are there, so the read is O(due). The index lags; SendReminder
// is conditioned on what it reads.
func (s *Store) DueReminders(ctx context.Context, now time.Time, limit int) ([]approvals.Approval, error) {
	return s.indexedApprovals(ctx, s.dueRemindersPK(), timeText(now), limit)
}

// SendReminder implements store.ApprovalStore: the reminder item's
// delete (conditioned on its existence), a check that the question is
// pending and the message's outbox items are one TransactWriteItems.
func (s *Store) SendReminder(ctx context.Context, a approvals.Approval, at time.Time) error {
	m, ok := hooks.OfReminder(a, at)
	var msgs []hooks.Message
	if ok {
		msgs = []hooks.Message{m}
	}
	outbox, err := s.outbox(ctx, msgs)
	if err != nil {
		return err
	}
	var w writeSet
	w.add(a.ID, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(s.reminderPK(), a.ID),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}})
	w.add(a.ID, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table), Key: key(s.approvalPK(), a.ID),
		ConditionExpression:       aws.String("#st = :pending"),
		ExpressionAttributeNames:  map[string]string{"#st": "st"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pending": str(string(approvals.Pending))}}})
	w.addOutbox(outbox)
	return s.announced(ctx, outbox, s.commitSet(ctx, w))
}

// Unannounced implements store.ApprovalStore through the index
// partition of asked, resolved approvals whose ending frame is missing,
// oldest first. It is empty except between a verdict and its announce,
// or after an announce failed. What the index returns is re-read
// strongly consistent, so an ending announced a moment ago is left out.
func (s *Store) Unannounced(ctx context.Context, limit int) ([]approvals.Approval, error) {
	listed, err := s.indexedApprovals(ctx, s.unannouncedApprovalsPK(), "", limit)
	if err != nil || len(listed) == 0 {
		return nil, err
	}
	keys := make([]map[string]types.AttributeValue, len(listed))
	for i, a := range listed {
		keys[i] = key(s.approvalPK(), a.ID)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	current := map[string]approvals.Approval{}
	for _, it := range items {
		a, err := decodeApproval(it)
		if err != nil {
			return nil, err
		}
		current[a.ID] = a
	}
	var out []approvals.Approval
	for _, a := range listed {
		if cur, ok := current[a.ID]; ok && approvals.NeedsAnnouncement(cur) {
			out = append(out, cur)
		}
	}
	return out, nil
}

// indexedApprovals reads up to limit approvals of one index partition in
// expires_at order, up to and including until ("" for no bound).
func (s *Store) indexedApprovals(ctx context.Context, partition, until string, limit int) ([]approvals.Approval, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(PendingExpiryIndex),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": PendingKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(partition)},
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes,
	}
	if until != "" {
		q.KeyConditionExpression = aws.String("#p = :p AND #exp <= :until")
		q.ExpressionAttributeNames["#exp"] = ExpiresAtKey
		q.ExpressionAttributeValues[":until"] = str(until)
	}
	return queryUpTo(ctx, s, q, limit, decodeApproval)
}

var _ store.ApprovalStore = (*Store)(nil)
