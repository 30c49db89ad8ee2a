package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Queries on a secondary index are answered here, from the base table,
// instead of by minidyn's index.
//
// minidyn v0.8.2 keeps each index as a sorted list of index keys plus a map
// from primary key to index key, and walks the two in step. An UpdateItem
// that gives an item its first index key overwrites the first entry of the
// sorted list, and a DeleteItem of an item that has left the index leaves
// its entry behind; after either, the two drift apart and later queries
// silently skip matching items. A sparse GSI whose items come and go with
// every spawn meets both cases. The candidates are the index's members
// (members.go), kept beside minidyn's table, so a query costs what the
// index holds, not what the table holds.

type keyElement struct {
	AttributeName string
	KeyType       string
}

type projection struct {
	ProjectionType   string
	NonKeyAttributes []string
}

type indexDescription struct {
	IndexName  string
	KeySchema  []keyElement
	Projection *projection
}

type queryInput struct {
	TableName                 string
	IndexName                 string
	KeyConditionExpression    string
	FilterExpression          string
	ProjectionExpression      string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
	ExclusiveStartKey         map[string]json.RawMessage
	Limit                     int
	ScanIndexForward          *bool
	Select                    string
	ConsistentRead            bool
	KeyConditions             json.RawMessage
	QueryFilter               json.RawMessage
	AttributesToGet           json.RawMessage
}

type item = map[string]json.RawMessage

var (
	namePlaceholder  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	valuePlaceholder = regexp.MustCompile(`:[A-Za-z0-9_]+`)
)

const (
	guardHash  = "#dontstandin_index_hash"
	guardRange = "#dontstandin_index_range"
)

func (s *Standin) query(body []byte) *response {
	var in queryInput
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	var described struct {
		Table struct {
			KeySchema              []keyElement
			GlobalSecondaryIndexes []indexDescription
			LocalSecondaryIndexes  []indexDescription
		}
	}
	if r := s.callJSON("DescribeTable", map[string]string{"TableName": in.TableName}, &described); r != nil {
		if in.IndexName == baseIndex {
			return s.pagedRead("Query", body)
		}
		return r
	}
	tableHash, tableRange := keyNames(described.Table.KeySchema)
	base := in.IndexName == baseIndex
	if base && !answersBaseQuery(in, tableHash, tableRange) {
		return s.pagedRead("Query", body)
	}
	var idx *indexDescription
	global := false
	for i, d := range described.Table.GlobalSecondaryIndexes {
		if d.IndexName == in.IndexName {
			idx, global = &described.Table.GlobalSecondaryIndexes[i], true
		}
	}
	for i, d := range described.Table.LocalSecondaryIndexes {
		if d.IndexName == in.IndexName {
			idx = &described.Table.LocalSecondaryIndexes[i]
		}
	}
	if base {
		// The base table, read as an index holding every item with all
		// its attributes.
		idx = &indexDescription{KeySchema: described.Table.KeySchema}
	}
	if idx == nil {
		return errorResponse(validation("The table does not have the specified index: %s", in.IndexName))
	}
	switch {
	case len(in.KeyConditions) > 0 || len(in.QueryFilter) > 0 || len(in.AttributesToGet) > 0:
		return errorResponse(validation("dynamostandin: index queries support only the expression parameters (KeyConditionExpression, FilterExpression, ProjectionExpression)"))
	case in.KeyConditionExpression == "":
		return errorResponse(validation("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."))
	case global && in.ConsistentRead:
		return errorResponse(validation("Consistent reads are not supported on global secondary indexes"))
	case in.Limit < 0:
		return errorResponse(validation("Limit must be at least 1"))
	}
	if e := checkPlaceholdersUsed(in); e != nil {
		return errorResponse(e)
	}
	indexHash, indexRange := keyNames(idx.KeySchema)

	// Items the index holds that satisfy the key condition: sparse, so
	// both index key attributes must be present.
	guard := "attribute_exists(" + guardHash + ")"
	guardNames := map[string]string{guardHash: indexHash}
	if indexRange != "" {
		guard += " AND attribute_exists(" + guardRange + ")"
		guardNames[guardRange] = indexRange
	}
	// A global index lags its table when the table is configured to
	// (strict.go): items whose writes it has not seen yet are read as
	// they were, from the stand-in's view table.
	if global {
		defer s.tickLag(in.TableName)
	}
	lagging := global && len(s.lag[in.TableName]) > 0
	members, r := s.membersOf(in.TableName, in.IndexName, tableHash, tableRange, indexHash, indexRange)
	if r != nil {
		return r
	}
	candidates0 := members.items
	if v, ok := partitionValue(in, indexHash, indexRange); ok {
		candidates0 = members.parts[partitionOf(v)]
	}
	read := func(filter string) ([]item, *response) {
		items, r := matchMembers(candidates0, in, filter, guardNames)
		if r != nil || !lagging {
			return items, r
		}
		items = s.withoutLagging(in.TableName, items, tableHash, tableRange)
		view := in
		view.TableName = shadowTable(in.TableName)
		stale, r := s.scanAll(view, filter, guardNames)
		return append(items, stale...), r
	}
	candidates, r := read(guard + " AND (" + in.KeyConditionExpression + ")")
	if r != nil {
		return r
	}
	var passing map[string]bool
	if in.FilterExpression != "" {
		filtered, r := read(guard + " AND (" + in.KeyConditionExpression + ") AND (" + in.FilterExpression + ")")
		if r != nil {
			return r
		}
		passing = map[string]bool{}
		for _, it := range filtered {
			passing[primaryKey(it, tableHash, tableRange)] = true
		}
	}

	order := []string{indexHash}
	if indexRange != "" {
		order = append(order, indexRange)
	}
	if !base {
		order = append(order, tableHash)
		if tableRange != "" {
			order = append(order, tableRange)
		}
	}
	forward := in.ScanIndexForward == nil || *in.ScanIndexForward
	candidates = sortAfter(candidates, order, forward, in.ExclusiveStartKey)
	page := candidates
	if in.Limit > 0 && len(page) > in.Limit {
		page = page[:in.Limit]
	}
	// A page ends at 1 MB of index entries read (before the filter), like
	// DynamoDB's; what it read is what it costs (capacity.go).
	full := in.Limit > 0 && len(page) == in.Limit
	read1MB := 0
	for i, it := range page {
		if read1MB += itemSize(projectIndex(it, idx.Projection, order)); read1MB > maxPageSize {
			page, full = page[:max(i, 1)], true
			break
		}
	}
	readBytes := 0
	for _, it := range page {
		readBytes += itemSize(projectIndex(it, idx.Projection, order))
	}

	items := []item{}
	for _, it := range page {
		if passing != nil && !passing[primaryKey(it, tableHash, tableRange)] {
			continue
		}
		projected := projectIndex(it, idx.Projection, order)
		if in.ProjectionExpression != "" {
			var e *apiError
			if projected, e = projectTopLevel(projected, in.ProjectionExpression, in.ExpressionAttributeNames); e != nil {
				return errorResponse(e)
			}
		}
		items = append(items, projected)
	}

	out := map[string]any{"Count": len(items), "ScannedCount": len(page)}
	if mode := wantsCapacity(body); mode != "" {
		out["ConsumedCapacity"] = readCapacity(mode, in.TableName, in.IndexName, readBytes, base && in.ConsistentRead)
	}
	if in.Select != "COUNT" {
		out["Items"] = items
	}
	if full {
		// Like DynamoDB: a full page always carries LastEvaluatedKey,
		// even when nothing follows it.
		last := page[len(page)-1]
		lek := item{}
		for _, k := range order {
			lek[k] = last[k]
		}
		out["LastEvaluatedKey"] = lek
	}
	return jsonResponse(out)
}

// scanAll reads every item of the table that matches filter, page by page.
func (s *Standin) scanAll(in queryInput, filter string, extraNames map[string]string) ([]item, *response) {
	names := map[string]string{}
	for _, p := range namePlaceholder.FindAllString(filter, -1) {
		if v, ok := in.ExpressionAttributeNames[p]; ok {
			names[p] = v
		}
		if v, ok := extraNames[p]; ok {
			names[p] = v
		}
	}
	values := map[string]json.RawMessage{}
	for _, p := range valuePlaceholder.FindAllString(filter, -1) {
		if v, ok := in.ExpressionAttributeValues[p]; ok {
			values[p] = v
		}
	}
	req := map[string]any{
		"TableName":                in.TableName,
		"FilterExpression":         filter,
		"ExpressionAttributeNames": names,
	}
	if len(values) > 0 {
		req["ExpressionAttributeValues"] = values
	}
	var all []item
	for {
		var page struct {
			Items            []item
			LastEvaluatedKey item
		}
		if r := s.callJSON("Scan", req, &page); r != nil {
			return nil, r
		}
		all = append(all, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return all, nil
		}
		req["ExclusiveStartKey"] = page.LastEvaluatedKey
	}
}

// checkPlaceholdersUsed rejects names and values that no expression uses,
// as DynamoDB does.
func checkPlaceholdersUsed(in queryInput) *apiError {
	all := in.KeyConditionExpression + " " + in.FilterExpression + " " + in.ProjectionExpression
	used := func(p string, re *regexp.Regexp) bool {
		return slices.Contains(re.FindAllString(all, -1), p)
	}
	for p := range in.ExpressionAttributeNames {
		if !used(p, namePlaceholder) {
			return validation("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", p)
		}
	}
	for p := range in.ExpressionAttributeValues {
		if !used(p, valuePlaceholder) {
			return validation("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", p)
		}
	}
	return nil
}

func keyNames(schema []keyElement) (hash, rng string) {
	for _, k := range schema {
		switch k.KeyType {
		case "HASH":
			hash = k.AttributeName
		case "RANGE":
			rng = k.AttributeName
		}
	}
	return hash, rng
}

func primaryKey(it item, hash, rng string) string {
	k := string(it[hash])
	if rng != "" {
		k += "\x00" + string(it[rng])
	}
	return k
}

func scalar(raw json.RawMessage) (typ, val string) {
	if t, body, ok := plainScalar(raw); ok && (t == "S" || t == "N" || t == "B") {
		return t, string(body)
	}
	return decodedScalar(raw)
}

// decodedScalar is scalar for any value, decoding it.
func decodedScalar(raw json.RawMessage) (typ, val string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", ""
	}
	for _, t := range []string{"S", "N", "B"} {
		if v, ok := m[t]; ok {
			var s string
			_ = json.Unmarshal(v, &s)
			return t, s
		}
	}
	return "", string(raw)
}

// projectIndex keeps what the index projects: everything, or the table and
// index keys plus any included attributes.
func projectIndex(it item, p *projection, keys []string) item {
	if p == nil || p.ProjectionType == "" || p.ProjectionType == "ALL" {
		return it
	}
	out := item{}
	for _, k := range append(slices.Clone(keys), p.NonKeyAttributes...) {
		if v, ok := it[k]; ok {
			out[k] = v
		}
	}
	return out
}

func projectTopLevel(it item, expr string, names map[string]string) (item, *apiError) {
	out := item{}
	for _, path := range strings.Split(expr, ",") {
		path = strings.TrimSpace(path)
		if strings.ContainsAny(path, ".[") {
			return nil, validation("dynamostandin: index queries support only top-level attributes in ProjectionExpression, got %q", path)
		}
		if strings.HasPrefix(path, "#") {
			path = names[path]
		}
		if v, ok := it[path]; ok {
			out[path] = v
		}
	}
	return out, nil
}
