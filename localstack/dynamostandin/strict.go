package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Strict modes: what DynamoDB does to a client now and then, and a store
// must survive, made to happen on demand. Each is off by default and set
// for every table (flags, environment) or for one table (the Configure
// operation, below):
//
//   - eventual consistency of global secondary indexes: a write reaches a
//     table's index queries only after GSILagReads index queries of that
//     table and GSILag of time have passed; until then they see the item as
//     it was before (absent, if it was);
//   - TransactionConflict: a fraction ConflictRate of TransactWriteItems is
//     cancelled with one item's reason TransactionConflict (the others
//     None) and nothing written;
//   - throttling: a fraction ThrottleRate of data-plane requests gets
//     ThrottlingException or ProvisionedThroughputExceededException
//     (TransactWriteItems: a cancellation with reason ThrottlingError), and
//     nothing written.
//
// Configure is the stand-in's own operation, X-Amz-Target
// "DontStandin.Configure", body {"TableName": t, "GSILagReads": n,
// "GSILag": "250ms", "ConflictRate": 0.1, "ThrottleRate": 0.05}: it replaces
// t's strict modes (all of them; omitted ones are off). Tests use it to
// exercise one table without touching the others a shared stand-in serves.

// Options are the strict modes of a table.
type Options struct {
	GSILagReads  int
	GSILag       time.Duration
	ConflictRate float64
	ThrottleRate float64
}

func (o Options) lags() bool { return o.GSILagReads > 0 || o.GSILag > 0 }

// ConfigureTarget is the X-Amz-Target of the stand-in's Configure operation.
const ConfigureTarget = "DontStandin.Configure"

func (s *Standin) optionsFor(table string) Options {
	if o, ok := s.tableOpts[table]; ok {
		return o
	}
	return s.opts
}

func (s *Standin) configure(body []byte) *response {
	var in struct {
		TableName    string
		GSILagReads  int
		GSILag       string
		ConflictRate float64
		ThrottleRate float64
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	if s.tables[in.TableName] == nil {
		return errorResponse(notFound(in.TableName))
	}
	o := Options{GSILagReads: in.GSILagReads, ConflictRate: in.ConflictRate, ThrottleRate: in.ThrottleRate}
	if in.GSILag != "" {
		d, err := time.ParseDuration(in.GSILag)
		if err != nil {
			return errorResponse(validation("GSILag: %v", err))
		}
		o.GSILag = d
	}
	if o.GSILagReads < 0 || o.GSILag < 0 || o.ConflictRate < 0 || o.ConflictRate > 1 || o.ThrottleRate < 0 || o.ThrottleRate > 1 {
		return errorResponse(validation("strict modes: lags must not be negative, rates must be in [0, 1]"))
	}
	s.tableOpts[in.TableName] = o
	return jsonResponse(map[string]any{"TableName": in.TableName, "GSILagReads": o.GSILagReads, "GSILag": o.GSILag.String(),
		"ConflictRate": o.ConflictRate, "ThrottleRate": o.ThrottleRate})
}

// dataPlane are the operations that read or write items.
var dataPlane = map[string]bool{
	"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "Scan": true,
	"BatchGetItem": true, "BatchWriteItem": true, "TransactWriteItems": true, "TransactGetItems": true,
}

// writes are the operations that write items.
var writes = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true}

// requestTables are the tables op's request names.
func (s *Standin) requestTables(op string, body []byte) []string {
	switch op {
	case "Query", "Scan":
		var in struct{ TableName string }
		_ = json.Unmarshal(body, &in)
		return []string{in.TableName}
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range s.keyedItems(op, body) {
		if !seen[k.table] {
			seen[k.table] = true
			out = append(out, k.table)
		}
	}
	return out
}

const (
	msgThrottled   = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly."
	msgProvisioned = "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."
	msgConflict    = "Transaction is ongoing for the item"
)

// inject answers op with an injected fault, or nil.
func (s *Standin) inject(op string, body []byte) *response {
	if !dataPlane[op] {
		return nil
	}
	var o Options
	for _, t := range s.requestTables(op, body) {
		to := s.optionsFor(t)
		o.ConflictRate = max(o.ConflictRate, to.ConflictRate)
		o.ThrottleRate = max(o.ThrottleRate, to.ThrottleRate)
	}
	throttle := o.ThrottleRate > 0 && s.rng.Float64() < o.ThrottleRate
	conflict := op == "TransactWriteItems" && o.ConflictRate > 0 && s.rng.Float64() < o.ConflictRate
	if !throttle && !conflict {
		return nil
	}
	if op == "TransactWriteItems" {
		var in struct{ TransactItems []json.RawMessage }
		if json.Unmarshal(body, &in) != nil || len(in.TransactItems) == 0 {
			return nil
		}
		reasons := make([]cancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i] = cancellationReason{Code: "None"}
		}
		at := s.rng.IntN(len(reasons))
		if throttle {
			s.injected.throttles++
			reasons[at] = cancellationReason{Code: "ThrottlingError", Message: msgThrottled}
		} else {
			s.injected.conflicts++
			reasons[at] = cancellationReason{Code: "TransactionConflict", Message: msgConflict}
		}
		return cancelled(reasons)
	}
	s.injected.throttles++
	return s.throttled(op, s.requestTables(op, body))
}

// throttled is a throttling error as DynamoDB sends it: for an on-demand
// table a ThrottlingException, for a provisioned one a
// ProvisionedThroughputExceededException (the stand-in picks either), with
// the throttling reason on the first table.
func (s *Standin) throttled(op string, tables []string) *response {
	kind := "Read"
	if writes[op] {
		kind = "Write"
	}
	var resource string
	if len(tables) > 0 {
		resource = s.tableARN(tables[0])
	}
	code, msg, field, limit := "ThrottlingException", msgThrottled, "throttlingReasons", "KeyRangeThroughputExceeded"
	if s.rng.IntN(2) == 0 {
		code, msg, field, limit = "ProvisionedThroughputExceededException", msgProvisioned, "ThrottlingReasons", "ProvisionedThroughputExceeded"
	}
	return &response{status: http.StatusBadRequest, header: http.Header{}, body: mustJSON(map[string]any{
		"__type":  "com.amazonaws.dynamodb.v20120810#" + code,
		"message": msg,
		field:     []map[string]string{{"reason": "Table" + kind + limit, "resource": resource}},
	})}
}

// image is an item as it was before a write: nil if it did not exist.
type image struct {
	table string
	key   item
	old   item
}

// needBefores says whether a write's items must be read before it runs:
// for an update (its size, its old values), an ALL_OLD answer, a
// transaction with an update (to undo it), or a table whose index lags.
func (s *Standin) needBefores(op string, body []byte) bool {
	for _, t := range s.requestTables(op, body) {
		if s.optionsFor(t).lags() {
			return true
		}
	}
	switch op {
	case "UpdateItem":
		return true
	case "PutItem", "DeleteItem":
		var in struct{ ReturnValues string }
		_ = json.Unmarshal(body, &in)
		return in.ReturnValues == "ALL_OLD"
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct{ Update json.RawMessage }
		}
		_ = json.Unmarshal(body, &in)
		for _, ti := range in.TransactItems {
			if len(ti.Update) > 0 {
				return true
			}
		}
	}
	return false
}

// befores reads the items a write names, as they are before it runs.
func (s *Standin) befores(op string, body []byte) []image {
	keyed := s.keyedItems(op, body)
	whole := make([]bool, len(keyed)) // a put's item, not a key
	switch op {
	case "PutItem", "BatchWriteItem": // keyOf of a key is the key
		for i := range whole {
			whole[i] = true
		}
	case "TransactWriteItems":
		var in struct{ TransactItems []transactItem }
		if json.Unmarshal(body, &in) == nil {
			i := 0
			for _, ti := range in.TransactItems {
				if ti.operation() != nil && i < len(whole) {
					whole[i] = ti.Put != nil
					i++
				}
			}
		}
	}
	out := make([]image, 0, len(keyed))
	for i, k := range keyed {
		key := k.it
		if whole[i] {
			key = s.keyOf(k.table, k.it)
		}
		out = append(out, image{table: k.table, key: key, old: s.getItem(k.table, key)})
	}
	return out
}

// lagEntry is one item whose latest writes an index query does not see
// yet: it sees the item's shadow (its image before them), or nothing.
type lagEntry struct {
	key       item
	readsLeft int
	until     time.Time
}

func shadowTable(table string) string { return "dontstandin-index-view-" + table }

// recordLag starts the index lag of the items a successful write changed,
// on tables that lag. An item already lagging keeps its older image.
func (s *Standin) recordLag(befores []image) {
	for _, b := range befores {
		o := s.optionsFor(b.table)
		if !o.lags() || len(b.key) == 0 {
			continue
		}
		hash, rng := s.tableKeys(b.table)
		pk := lagKey(b.key, hash, rng)
		entries := s.lag[b.table]
		if entries == nil {
			entries = map[string]*lagEntry{}
			s.lag[b.table] = entries
			s.ensureShadow(b.table)
		}
		if _, ok := entries[pk]; ok {
			continue
		}
		entries[pk] = &lagEntry{key: b.key, readsLeft: o.GSILagReads, until: time.Now().Add(o.GSILag)}
		if b.old != nil {
			var ignored struct{}
			s.callJSON("PutItem", map[string]any{"TableName": shadowTable(b.table), "Item": b.old}, &ignored)
		}
	}
}

// tickLag counts one index query of table: entries whose lag has passed
// become visible.
func (s *Standin) tickLag(table string) {
	now := time.Now()
	for pk, e := range s.lag[table] {
		e.readsLeft--
		if e.readsLeft <= 0 && !now.Before(e.until) {
			delete(s.lag[table], pk)
			var ignored struct{}
			s.callJSON("DeleteItem", map[string]any{"TableName": shadowTable(table), "Key": e.key}, &ignored)
		}
	}
}

// forgetStrict drops a deleted table's strict modes, lag and view table.
func (s *Standin) forgetStrict(table string) {
	delete(s.tableOpts, table)
	if _, ok := s.lag[table]; ok {
		delete(s.lag, table)
		var ignored json.RawMessage
		s.callJSON("DeleteTable", map[string]string{"TableName": shadowTable(table)}, &ignored)
	}
}

func (s *Standin) tableKeys(table string) (hash, rng string) {
	var described struct {
		Table struct{ KeySchema []keyElement }
	}
	if s.callJSON("DescribeTable", map[string]string{"TableName": table}, &described) != nil {
		return "", ""
	}
	return keyNames(described.Table.KeySchema)
}

// ensureShadow creates, inside minidyn only, the table that holds the
// images index queries of table see while its items lag.
func (s *Standin) ensureShadow(table string) {
	var described struct {
		Table struct {
			KeySchema []keyElement
		}
	}
	if s.callJSON("DescribeTable", map[string]string{"TableName": shadowTable(table)}, &described) == nil {
		return
	}
	if s.callJSON("DescribeTable", map[string]string{"TableName": table}, &described) != nil {
		return
	}
	var defs []map[string]string
	var all []struct{ AttributeName, AttributeType string }
	if m := s.tables[table]; m != nil {
		_ = json.Unmarshal(m.attributeDefinitions, &all)
	}
	for _, k := range described.Table.KeySchema {
		for _, d := range all {
			if d.AttributeName == k.AttributeName {
				defs = append(defs, map[string]string{"AttributeName": d.AttributeName, "AttributeType": d.AttributeType})
			}
		}
	}
	var ignored json.RawMessage
	if r := s.callJSON("CreateTable", map[string]any{"TableName": shadowTable(table), "KeySchema": described.Table.KeySchema,
		"AttributeDefinitions": defs, "BillingMode": "PAY_PER_REQUEST"}, &ignored); r != nil {
		panic(fmt.Sprintf("dynamostandin: create the index view of %s: %s", table, r.body))
	}
}

// withoutLagging drops the items that lag from items.
func (s *Standin) withoutLagging(table string, items []item, hash, rng string) []item {
	entries := s.lag[table]
	if len(entries) == 0 {
		return items
	}
	out := items[:0]
	for _, it := range items {
		if _, ok := entries[lagKey(it, hash, rng)]; !ok {
			out = append(out, it)
		}
	}
	return out
}

// injectedCounts are the faults the stand-in injected, for its tests.
type injectedCounts struct{ throttles, conflicts int }

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// lagKey names an item by its primary key's values, whatever their JSON
// spelling.
func lagKey(it item, hash, rng string) string {
	t, v := scalar(it[hash])
	k := t + ":" + v
	if rng != "" {
		t, v = scalar(it[rng])
		k += "\x00" + t + ":" + v
	}
	return k
}
