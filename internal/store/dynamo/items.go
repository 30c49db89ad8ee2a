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
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Attributes beside the keys. Short names: DynamoDB bills attribute names
// as part of every item's size.
//
//	doc   the JSON document (entity, spawn)
//	v     entity version (number; conditions compare it)
//	st    entity status or spawn state
//	kind  entity kind
//	ent   a spawn's entity id
//	iat   a spawn's issued_at (fixed-width text)
//	req   a spawn's request payload, or reqz: the same, gzip-compressed
//	evs   the JSON array of one commit's events about one entity

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

func (s *Store) entityItem(e ledger.Entity) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	it := key(s.entityPK(), e.ID)
	it["doc"], it["v"], it["st"], it["kind"] = str(string(doc)), num(e.Version), str(string(e.Status)), str(e.Kind)
	return it, nil
}

func decodeEntity(it map[string]types.AttributeValue) (ledger.Entity, error) {
	var e ledger.Entity
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &e); err != nil {
		return e, fmt.Errorf("dynamo: decode entity %s: %w", attrString(it, SortKey), err)
	}
	return e, nil
}

// spawnItem is the stored spawn: in the pending index while pending.
func (s *Store) spawnItem(sp spawn.Spawn) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	it := key(s.spawnPK(), sp.ID)
	it["doc"], it["st"], it["iat"] = str(string(doc)), str(sp.State), str(timeText(sp.IssuedAt))
	it[ExpiresAtKey] = str(timeText(sp.ExpiresAt))
	if sp.EntityID != "" {
		it["ent"] = str(sp.EntityID)
	}
	if sp.State == spawn.Pending {
		it[PendingKey] = str(s.pendingPK())
	}
	if len(sp.Request) > 0 {
		name, payload := packRequest(sp.Request)
		it[name] = &types.AttributeValueMemberB{Value: payload}
	}
	return it, nil
}

func decodeSpawn(it map[string]types.AttributeValue) (spawn.Spawn, error) {
	var sp spawn.Spawn
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &sp); err != nil {
		return sp, fmt.Errorf("dynamo: decode spawn %s: %w", attrString(it, SortKey), err)
	}
	if b := attrBytes(it, "req"); b != nil {
		sp.Request = b
	} else if z := attrBytes(it, "reqz"); z != nil {
		var err error
		if sp.Request, err = gunzip(z); err != nil {
			return sp, fmt.Errorf("dynamo: decode spawn %s payload: %w", sp.ID, err)
		}
	}
	return sp, nil
}

// packRequest names and encodes a spawn payload: compressed when that
// makes the item smaller. The prompt and tool lists compress well, and a
// spawn item under 1 KB costs one write unit instead of two, in the table
// and again in the index.
func packRequest(req []byte) (string, []byte) {
	if z, ok := gzipIfSmaller(req); ok {
		return "reqz", z
	}
	return "req", req
}

func gzipIfSmaller(b []byte) ([]byte, bool) {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b)
	w.Close()
	if z.Len() < len(b) {
		return z.Bytes(), true
	}
	return b, false
}

func gunzip(z []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func eventsItem(pk, sk string, evs []ledger.Event) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(evs)
	if err != nil {
		return nil, err
	}
	it := key(pk, sk)
	it["evs"] = str(string(doc))
	return it, nil
}

// epoch is a TTL value: seconds since the Unix epoch.
func epoch(t time.Time) types.AttributeValue { return num(t.Unix()) }
