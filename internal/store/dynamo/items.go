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
//	project  the project of a global token or spawn item
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

// spawnItem is the stored spawn, without its payload: in the pending
// index while pending. It is small (one write unit) because it is written
// twice, transactionally, and copied into the index.
func (s *Store) spawnItem(sp spawn.Spawn) (map[string]types.AttributeValue, error) {
	doc, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	it := key(s.spawnPK(), sp.ID)
	it["doc"], it["st"] = str(string(doc)), str(sp.State)
	if sp.EntityID != "" {
		it["ent"] = str(sp.EntityID)
	}
	if sp.State == spawn.Pending {
		it[PendingKey], it[ExpiresAtKey] = str(s.pendingPK()), str(timeText(sp.ExpiresAt))
	}
	return it, nil
}

func decodeSpawn(it map[string]types.AttributeValue) (spawn.Spawn, error) {
	var sp spawn.Spawn
	if err := json.Unmarshal([]byte(attrString(it, "doc")), &sp); err != nil {
		return sp, fmt.Errorf("dynamo: decode spawn %s: %w", attrString(it, SortKey), err)
	}
	return sp, nil
}

// ownerItem is the global, write-once item of a spawn: its project (where
// a callback token leads) and its request payload.
func (s *Store) ownerItem(sp spawn.Spawn) map[string]types.AttributeValue {
	it := key(spawnOwnerPK(sp.ID), "S")
	it["project"] = str(s.project)
	if len(sp.Request) > 0 {
		name, payload := packRequest(sp.Request)
		it[name] = &types.AttributeValueMemberB{Value: payload}
	}
	return it
}

// payload reads the request payload of an owner item.
func payload(it map[string]types.AttributeValue) ([]byte, error) {
	if b := attrBytes(it, "req"); b != nil {
		return b, nil
	}
	if z := attrBytes(it, "reqz"); z != nil {
		return gunzip(z)
	}
	return nil, nil
}

// packRequest names and encodes a spawn payload: compressed when that
// makes the item smaller (the prompt and tool lists compress to about
// half), so that the owner item usually stays under 1 KB: one write unit.
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
