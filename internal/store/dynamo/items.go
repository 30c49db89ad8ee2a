package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Attributes beside the keys. Short names: DynamoDB bills attribute names
// as part of every item's size.
//
//	doc   the JSON document (entity, spawn); docz: an entity's, gzip-compressed
//	v     entity version (number; conditions compare it)
//	st    entity status or spawn state
//	kind  entity kind
//	ps    the id of the spawn pending on an entity
//	psd   that spawn's document as issued, without what the entity item
//	      says already (its id, entity, state and expiry) or its request;
//	      psd1: the same, compressed (dict.go; pendingSpawnDoc)
//	tail  an entity's events of an inline commit (JSON array), or tailz
//	ent   a spawn's entity id, or the term that holds a CURIE item's CURIE
//	project  the project of a global token
//	req   a spawn's request payload, or reqz: the same, gzip-compressed
//	h     a history item: {"evs": one commit's events about one entity,
//	      "sp": the spawn it resolved}, or hz: the same, gzip-compressed
//	      (and "key": the record of the callback token's call that
//	      resolved it, ridingKey)
//	sid   the id of the spawn a history item's commit resolved
//	es    the status the entity_status index lists an entity under (its
//	      sort key): st, but while a spawn is pending on an unverified
//	      entity the status it had before (see entityState.listed); st
//	      itself is not indexed, since other items use it too
//	to    the id of the spawn whose timeout is an entity's latest spawn,
//	      while it is (the entity is then in the pending_expiry index
//	      under P#<p>#TO); toh: the sort key of that timeout's history item

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func attrString(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrBytes(it map[string]types.AttributeValue, name string) []byte {
	if v, ok := it[name].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func attrInt(it map[string]types.AttributeValue, name string) (int64, bool) {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// entityState is what an entity item holds beside the entity itself: the
// spawn pending on it (at most one, docs/design.md §5.3) with its expiry, and
// the events of an inline commit that no history item holds yet.
type entityState struct {
	version int64
	pending string // ps: the id of the spawn pending on the entity
	// pendingSpawn is that spawn as issued (psd), without its request: a
	// callback names its entity, so the entity's item alone answers it
	// (Store.PendingSpawn). Nil on items written before it was kept, or
	// by code that did not keep it: then the spawn's item answers.
	pendingSpawn *spawn.Spawn
	// expires is expires_at (the index sort key): while a spawn is
	// pending its expiry, while the entity's latest spawn is one that
	// timed out (timedOut) that spawn's.
	expires string
	// tail is the events of the inline commits since the entity's last
	// transaction, which no history item is sure to hold yet: written at
	// tailVersion (0: the entity's own version), and moved into the
	// history item of that version by the entity's next transaction, or
	// put there (flushTail) before the next inline commit replaces it.
	// tailSpawn is the spawn an inline resolution among them resolved.
	tail        []ledger.Event
	tailVersion int64
	tailSpawn   *spawn.Spawn
	// tailRecord is the Idempotency-Key record of the callback token's
	// call that resolved tailSpawn, kept with its resolution (ridingKey).
	tailRecord *ridingKey
	// timedOut (to) is the entity's latest spawn when that spawn timed
	// out and no other spawn was issued on the entity since; toHistory
	// (toh) the sort key of the history item that recorded the timeout.
	timedOut, toHistory string
	// listed (es) is the status the entity_status index lists the entity
	// under: its status, except while a spawn is pending on it and it is
	// unverified (as a pending spawn leaves it, spawn.UnderReview), when it
	// keeps the one it had, so that a spawn's lifecycle writes no entry
	// of that index; ListEntities finds those through the pending index.
	listed string
}

// listedStatus is the entity_status sort key of e stored with st.
func listedStatus(e ledger.Entity, st entityState) string {
	if st.pending != "" && e.Status == ledger.Unverified {
		return st.listed
	}
	return string(e.Status)
}

// entityItem is an entity's item in state st (version aside).
func (s *Store) entityItem(e ledger.Entity, st entityState) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	it := key(s.entityPK(), e.ID)
	it["v"], it["st"], it["kind"] = num(e.Version), str(string(e.Status)), str(string(e.Kind))
	if es := listedStatus(e, st); es != "" {
		it[StatusKey] = str(es)
	}
	packText(it, "doc", doc)
	switch {
	case st.pending != "":
		it["ps"], it[PendingKey], it[ExpiresAtKey] = str(st.pending), str(s.pendingPK(st.pending)), str(st.expires)
		if st.pendingSpawn != nil && st.pendingSpawn.ID == st.pending {
			if err := pendingSpawnDoc(it, *st.pendingSpawn); err != nil {
				return nil, err
			}
		}
	case st.timedOut != "":
		it["to"], it["toh"], it[PendingKey], it[ExpiresAtKey] = str(st.timedOut), str(st.toHistory), str(s.timedOutPK()), str(st.expires)
	}
	if len(st.tail) > 0 {
		// A tail with a resolved spawn has a history item's form.
		var tail []byte
		var err error
		if st.tailSpawn != nil {
			tail, err = historyDoc(st.tail, st.tailSpawn, st.tailRecord)
		} else {
			tail, err = json.Marshal(st.tail)
		}
		if err != nil {
			return nil, err
		}
		packText(it, "tail", tail)
		if st.tailVersion != 0 && st.tailVersion != e.Version {
			it["tv"] = num(st.tailVersion)
		}
	}
	return it, nil
}

// tailKey is the sort key of the history item the tail of an entity at
// version belongs in.
func (st entityState) tailKey(version int64) string {
	if st.tailVersion != 0 {
		return versionKey(st.tailVersion)
	}
	return versionKey(version)
}

// packText stores JSON text under name, or compressed under a suffixed
// name when that is smaller (packed): an entity item with a statement of
// several hundred characters and an inline commit's events then stays
// under 1 KB (one write unit, and one for its copy in the pending index).
func packText(it map[string]types.AttributeValue, name string, text []byte) {
	if n, z := packed(name, text); n != name {
		it[n] = &types.AttributeValueMemberB{Value: z}
		return
	}
	it[name] = str(string(text))
}

// unpackText reads what packText stored under name.
func unpackText(it map[string]types.AttributeValue, name string) ([]byte, error) {
	if b, err := unpackedCompressed(it, name); b != nil || err != nil {
		return b, err
	}
	return []byte(attrString(it, name)), nil
}

func decodeEntity(it map[string]types.AttributeValue) (ledger.Entity, entityState, error) {
	var e ledger.Entity
	st := entityState{pending: attrString(it, "ps"), expires: attrString(it, ExpiresAtKey),
		timedOut: attrString(it, "to"), toHistory: attrString(it, "toh"), listed: attrString(it, StatusKey)}
	doc, err := unpackText(it, "doc")
	if err == nil {
		err = json.Unmarshal(doc, &e)
	}
	if err != nil {
		return e, st, fmt.Errorf("dynamo: decode entity %s: %w", attrString(it, SortKey), err)
	}
	st.version = e.Version
	st.tailVersion, _ = attrInt(it, "tv")
	if st.pending != "" {
		if st.pendingSpawn, err = decodePendingSpawn(it, e.ID, st); err != nil {
			return e, st, err
		}
	}
	tail, err := unpackText(it, "tail")
	if err == nil && len(tail) > 0 {
		if tail[0] == '{' {
			var h historyContent
			h, err = parseHistoryDoc(tail)
			st.tail, st.tailSpawn, st.tailRecord = h.Events, h.Spawn, h.Key
		} else {
			err = json.Unmarshal(tail, &st.tail)
		}
	}
	if err != nil {
		return e, st, fmt.Errorf("dynamo: decode entity %s tail: %w", e.ID, err)
	}
	return e, st, nil
}

// pendingSpawnDoc stores sp, the spawn pending on the entity of item it,
// under psd: its document without its id, entity, state and expiry, which
// the item's ps and expires_at hold (a heartbeat moves the expiry), and
// without its request, which only its own item keeps. About 120 bytes
// compressed, so that an issue still writes one unit
// (TestAnIssuedEntityItemWithItsPendingSpawnStaysUnderOneKilobyte).
func pendingSpawnDoc(it map[string]types.AttributeValue, sp spawn.Spawn) error {
	sp.ID, sp.EntityID, sp.State, sp.ExpiresAt, sp.Request = "", "", "", time.Time{}, nil
	doc, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	packText(it, "psd", doc)
	return nil
}

// decodePendingSpawn is the spawn pending on entity as its item stores it
// (pendingSpawnDoc), or nil where the item does not.
func decodePendingSpawn(it map[string]types.AttributeValue, entity string, st entityState) (*spawn.Spawn, error) {
	doc, err := unpackText(it, "psd")
	if err != nil || len(doc) == 0 {
		return nil, err
	}
	var sp spawn.Spawn
	if err := json.Unmarshal(doc, &sp); err != nil {
		return nil, fmt.Errorf("dynamo: decode entity %s pending spawn: %w", entity, err)
	}
	if sp.ExpiresAt, err = time.Parse(timeKey, st.expires); err != nil {
		return nil, fmt.Errorf("dynamo: decode entity %s pending expiry: %w", entity, err)
	}
	sp.ID, sp.EntityID, sp.State = st.pending, entity, spawn.Pending
	return &sp, nil
}

// spawnItem is a spawn's item under P#<p>#S: its document and payload.
// For a spawn on an entity it is the spawn as issued, written once; the
// entity's item says whether it is pending, the history item of its
// resolution how it ended. A spawn on no entity (guess) is all here: its
// state, and its place in the pending index while pending.
func (s *Store) spawnItem(sp spawn.Spawn) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(sp) // without the payload (json:"-")
	if err != nil {
		return nil, err
	}
	it := key(s.spawnPK(), sp.ID)
	packText(it, "doc", doc)
	if len(sp.Request) > 0 {
		// The prompt and tool lists compress to about a seventh with the
		// dictionary, so that the item stays under 1 KB: one write unit.
		name, payload := packed("req", sp.Request)
		it[name] = &types.AttributeValueMemberB{Value: payload}
	}
	if sp.EntityID != "" {
		it["ent"] = str(sp.EntityID)
		return it, nil
	}
	it["st"] = str(string(sp.State))
	switch {
	case sp.State == spawn.Pending:
		it[PendingKey], it[ExpiresAtKey] = str(s.pendingPK(sp.ID)), str(timeText(sp.ExpiresAt))
	case sp.Outcome == spawn.TimeoutRestored:
		it[PendingKey], it[ExpiresAtKey] = str(s.timedOutPK()), str(timeText(sp.ExpiresAt))
	}
	return it, nil
}

// decodeSpawn reads a spawn item, payload included.
func decodeSpawn(it map[string]types.AttributeValue) (spawn.Spawn, error) {
	var sp spawn.Spawn
	doc, err := unpackText(it, "doc")
	if err == nil {
		err = json.Unmarshal(doc, &sp)
	}
	if err != nil {
		return sp, fmt.Errorf("dynamo: decode spawn %s: %w", attrString(it, SortKey), err)
	}
	if sp.Request, err = unpacked(it, "req"); err != nil {
		return sp, fmt.Errorf("dynamo: decode spawn %s payload: %w", sp.ID, err)
	}
	return sp, nil
}

// packed names and encodes bytes stored under name: raw DEFLATE with
// the store's dictionary under name+dictionarySuffix when that is smaller
// (dict.go). Items written before the dictionary hold gzip under
// name+"z", which reads still take.
func packed(name string, b []byte) (string, []byte) {
	if z := deflateWithDictionary(b); len(z) < len(b) {
		return name + dictionarySuffix, z
	}
	return name, b
}

// unpacked reads what packed stored under name; nil if nothing.
func unpacked(it map[string]types.AttributeValue, name string) ([]byte, error) {
	if b, err := unpackedCompressed(it, name); b != nil || err != nil {
		return b, err
	}
	return attrBytes(it, name), nil
}

// unpackedCompressed reads name's compressed forms; nil if neither.
func unpackedCompressed(it map[string]types.AttributeValue, name string) ([]byte, error) {
	if z := attrBytes(it, name+dictionarySuffix); z != nil {
		return inflateWithDictionary(z)
	}
	if z := attrBytes(it, name+"z"); z != nil {
		return gunzip(z)
	}
	return nil, nil
}

func gunzip(z []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// eventsItem is one history item: the events of one commit (and of the
// inline commit before it), the spawn that commit resolved, if any, and
// the record of the callback token's call that resolved it, if it rides
// there (ridingKey). A resolution's item holds three events and a spawn,
// about 1.3 KB of JSON: it is stored compressed when that is smaller, so
// that it stays within one write unit (two in its transaction).
func eventsItem(pk, sk string, evs []ledger.Event, resolved *spawn.Spawn, record *ridingKey) (map[string]types.AttributeValue, error) {
	b, err := historyDoc(evs, resolved, record)
	if err != nil {
		return nil, err
	}
	it := key(pk, sk)
	packText(it, "h", b)
	if resolved != nil {
		it["sid"] = str(resolved.ID)
	}
	return it, nil
}

// historyContent is a history item's JSON (and a tail's that resolved a
// spawn): one commit's events (with the inline ones before it), the spawn
// it resolved, and the record of the call that resolved it, when kept
// there.
type historyContent struct {
	Events []ledger.Event `json:"evs"`
	Spawn  *spawn.Spawn   `json:"sp,omitempty"`
	Key    *ridingKey     `json:"key,omitempty"`
}

// ridingKey is the Idempotency-Key record of a callback token's call,
// kept on the resolution that call committed (the tail, then its history
// item) rather than as an item of its own: a callback token answers one
// spawn, resolved once, so the record is found through that spawn
// (idempotency.SpawnOf, Lookup). One write unit less a lifecycle, and the
// record commits with the resolution (docs/aws-cost.md).
type ridingKey struct {
	Name        string    `json:"n"`
	Fingerprint string    `json:"fp"`
	At          time.Time `json:"at"`
	Status      int       `json:"s"`
	// Body is the response as JSON in the document (so that it compresses
	// with the rest), without the line end it was sent with (NL).
	Body json.RawMessage `json:"b"`
	NL   bool            `json:"nl,omitempty"`
}

// maxRidingBody bounds a response kept on a resolution: a callback's is
// a few hundred bytes; a larger one is remembered as an item of its own.
const maxRidingBody = 4 << 10

// ridingRecord is put's record to keep on the resolution of spawnID, or
// nil when it is to be remembered as an item of its own: a key that is
// not the callback token's of that spawn, or a body that is not a small
// JSON document.
func ridingRecord(put *idempotency.Put, spawnID string) *ridingKey {
	if put == nil || !put.MayDefer || len(put.Body) > maxRidingBody {
		return nil
	}
	if id, _, _, ok := idempotency.SpawnOf(put.Name); !ok || id != spawnID {
		return nil
	}
	// Replayed byte for byte: only a compact document (as envelope.Marshal
	// writes one) survives being embedded unchanged.
	body, nl := bytes.CutSuffix(put.Body, []byte("\n"))
	var compact bytes.Buffer
	if json.Compact(&compact, body) != nil || !bytes.Equal(compact.Bytes(), body) {
		return nil
	}
	return &ridingKey{Name: put.Name, Fingerprint: put.Fingerprint, At: put.At, Status: put.Status, Body: body, NL: nl}
}

// record is r as the transport reads a key's record.
func (r *ridingKey) record() *idempotency.Record {
	body := append([]byte(nil), r.Body...)
	if r.NL {
		body = append(body, '\n')
	}
	return &idempotency.Record{Fingerprint: r.Fingerprint, Done: true, Status: r.Status, Body: body, At: r.At}
}

// historyDoc is a history item's JSON (historyContent), without HTML
// escapes, so that a kept response reads back as it was sent.
func historyDoc(evs []ledger.Event, resolved *spawn.Spawn, record *ridingKey) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(historyContent{Events: evs, Spawn: resolved, Key: record}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func parseHistoryDoc(b []byte) (historyContent, error) {
	var doc historyContent
	err := json.Unmarshal(b, &doc)
	return doc, err
}

// decodeHistory reads a history item's events and resolved spawn.
func decodeHistory(it map[string]types.AttributeValue) ([]ledger.Event, *spawn.Spawn, error) {
	h, err := decodeHistoryContent(it)
	return h.Events, h.Spawn, err
}

// decodeHistoryContent reads a history item whole.
func decodeHistoryContent(it map[string]types.AttributeValue) (historyContent, error) {
	b, err := unpackText(it, "h")
	if err != nil {
		return historyContent{}, fmt.Errorf("dynamo: decode history %s: %w", attrString(it, SortKey), err)
	}
	h, err := parseHistoryDoc(b)
	if err != nil {
		return historyContent{}, fmt.Errorf("dynamo: decode history %s: %w", attrString(it, SortKey), err)
	}
	return h, nil
}

// epoch is a TTL value: seconds since the Unix epoch.
func epoch(t time.Time) types.AttributeValue { return num(t.Unix()) }
