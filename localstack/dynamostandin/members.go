package main

import (
	"encoding/json"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/interpreter/language"
	"github.com/truora/minidyn/types"
)

// An index query used to scan the whole base table through minidyn, which
// parses and evaluates the filter once per item: its cost grew with the
// table (a sweep's query of a sparse index of a few pending items read
// every event ever written), so a long run slowed from 27 to 3 operations
// a second. The stand-in now keeps, per table and index, the items the
// index holds (both of its key attributes present), built by one scan on
// the index's first query and kept current by every write afterwards;
// a query evaluates its key condition and filter, with minidyn's own
// interpreter, over those items only. What a query answers is unchanged.
//
// The base table is kept the same way, as the index named "" whose keys
// are the table's, and both are filed by partition key as well: a query
// names one partition with its key condition's equality, and evaluates
// that partition's items only, as DynamoDB reads one partition. Its cost
// follows the partition, not the index or the table.

// evaluated counts the items index queries evaluated, for the test that
// a query's cost follows the index, not the table.
var evaluated atomic.Int64

// baseIndex names the base table among a table's indexMembers.
const baseIndex = ""

// indexMembers are the items one index holds, by primary key (lagKey),
// and again by partition (partitionOf) and primary key.
type indexMembers struct {
	hash, rng string // the index's key attributes
	items     map[string]item
	parts     map[string]map[string]item
	order     []string       // the primary keys, sorted, for a Scan (scan.go); nil until one asks
	sizes     map[string]int // the items' sizes, measured when a Scan needs them
}

func newIndexMembers(hash, rng string, n int) *indexMembers {
	return &indexMembers{hash: hash, rng: rng, items: make(map[string]item, n), parts: map[string]map[string]item{}}
}

// put files it, the item whose primary key is pk, in the index.
func (im *indexMembers) put(pk string, it item) {
	if old, had := im.items[pk]; had {
		im.unfile(pk, old)
	} else if im.order != nil {
		at, _ := slices.BinarySearch(im.order, pk)
		im.order = slices.Insert(im.order, at, pk)
	}
	im.items[pk] = it
	part := partitionOf(it[im.hash])
	if im.parts[part] == nil {
		im.parts[part] = map[string]item{}
	}
	im.parts[part][pk] = it
}

// remove takes the item whose primary key is pk out of the index.
func (im *indexMembers) remove(pk string) {
	old, ok := im.items[pk]
	if !ok {
		return
	}
	im.unfile(pk, old)
	delete(im.items, pk)
	if at, found := slices.BinarySearch(im.order, pk); found {
		im.order = slices.Delete(im.order, at, at+1)
	}
}

// unfile takes old, the item stored under pk, out of its partition and
// forgets its size.
func (im *indexMembers) unfile(pk string, old item) {
	delete(im.sizes, pk)
	part := partitionOf(old[im.hash])
	delete(im.parts[part], pk)
	if len(im.parts[part]) == 0 {
		delete(im.parts, part)
	}
}

// partitionOf names the partition of a partition key value, whatever its
// JSON spelling; numbers by value.
func partitionOf(raw json.RawMessage) string {
	t, v := scalar(raw)
	if t == "N" {
		if f, ok := new(big.Float).SetString(v); ok {
			v = f.Text('g', -1)
		}
	}
	return t + ":" + v
}

// tableMembers are a table's indexes' members, and the table's own key.
type tableMembers struct {
	hash, rng string
	indexes   map[string]*indexMembers
}

// membersOf returns the members of table's index, building them with one
// scan the first time; nil with a response on a minidyn error.
func (s *Standin) membersOf(table, index, tableHash, tableRange, indexHash, indexRange string) (*indexMembers, *response) {
	if s.members == nil {
		s.members = map[string]*tableMembers{}
	}
	tm := s.members[table]
	if tm == nil {
		tm = &tableMembers{hash: tableHash, rng: tableRange, indexes: map[string]*indexMembers{}}
		s.members[table] = tm
	}
	if im := tm.indexes[index]; im != nil {
		return im, nil
	}
	guard := "attribute_exists(" + guardHash + ")"
	names := map[string]string{guardHash: indexHash}
	if indexRange != "" {
		guard += " AND attribute_exists(" + guardRange + ")"
		names[guardRange] = indexRange
	}
	all, r := s.scanAll(queryInput{TableName: table}, guard, names)
	if r != nil {
		return nil, r
	}
	im := newIndexMembers(indexHash, indexRange, len(all))
	for _, it := range all {
		im.put(lagKey(it, tableHash, tableRange), it)
	}
	tm.indexes[index] = im
	return im, nil
}

// refreshMembers re-reads the items a write request named and files each
// in or out of every tracked index of its table. It runs after every write
// request, applied or not (a refused one may have been rolled back by
// restore), so the members never drift from the table.
func (s *Standin) refreshMembers(op string, body []byte) {
	if len(s.members) == 0 {
		return
	}
	for _, k := range s.keyedItems(op, body) {
		tm := s.members[k.table]
		if tm == nil || len(tm.indexes) == 0 {
			continue
		}
		key := item{tm.hash: k.it[tm.hash]}
		if tm.rng != "" {
			key[tm.rng] = k.it[tm.rng]
		}
		var got struct{ Item item }
		if r := s.callJSON("GetItem", map[string]any{"TableName": k.table, "Key": key, "ConsistentRead": true}, &got); r != nil {
			// Unknown state: forget the table's members; the next query rebuilds them.
			delete(s.members, k.table)
			continue
		}
		pk := lagKey(key, tm.hash, tm.rng)
		for _, im := range tm.indexes {
			_, hasHash := got.Item[im.hash]
			_, hasRange := got.Item[im.rng]
			if got.Item != nil && hasHash && (im.rng == "" || hasRange) {
				im.put(pk, got.Item)
			} else {
				im.remove(pk)
			}
		}
	}
}

// forgetMembers drops what is known of table's indexes: the table was
// created, changed (an index added) or deleted.
func (s *Standin) forgetMembers(table string) { delete(s.members, table) }

// matchMembers returns the candidates (an index's members, or one of its
// partitions) that satisfy filter (the guard, the key condition and the
// query's filter, as scanAll takes them), evaluated by minidyn's
// interpreter as its Scan would. The filter is parsed once, and refused
// when it is malformed even if there is nothing to evaluate.
func matchMembers(candidates map[string]item, in queryInput, filter string, extraNames map[string]string) ([]item, *response) {
	f, r := compileFilter(in, filter, extraNames)
	if r != nil {
		return nil, r
	}
	evaluated.Add(int64(len(candidates)))
	var out []item
	for _, it := range candidates {
		ok, r := f.match(it)
		if r != nil {
			return nil, r
		}
		if ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// compiledFilter is a filter parsed once, with its names and values.
type compiledFilter struct {
	cond   *language.ConditionalExpression
	names  map[string]string
	values map[string]*types.Item
	// text and aliased say which attributes the filter can read: the
	// names its placeholders stand for, and any its text contains.
	text    string
	aliased map[string]bool
}

// reads is false for an attribute the filter cannot read: neither named
// by a placeholder nor written in the filter, which names every other
// attribute it reads by its literal name. match decodes only the others,
// the stand-in's largest cost in a query or scan with a filter.
func (f *compiledFilter) reads(name string) bool {
	return f.aliased[name] || strings.Contains(f.text, name)
}

// compileFilter parses filter, naming its placeholders from in and
// extraNames; a malformed one is a ValidationException.
func compileFilter(in queryInput, filter string, extraNames map[string]string) (*compiledFilter, *response) {
	names := map[string]string{}
	for _, p := range namePlaceholder.FindAllString(filter, -1) {
		if v, ok := in.ExpressionAttributeNames[p]; ok {
			names[p] = v
		}
		if v, ok := extraNames[p]; ok {
			names[p] = v
		}
	}
	values := map[string]*types.Item{}
	for _, p := range valuePlaceholder.FindAllString(filter, -1) {
		if raw, ok := in.ExpressionAttributeValues[p]; ok {
			var v types.Item
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, errorResponse(validation("ExpressionAttributeValues %s: %v", p, err))
			}
			values[p] = &v
		}
	}
	parser := language.NewParser(language.NewLexer(filter))
	conditional := parser.ParseConditionalExpression()
	switch {
	case len(parser.Errors()) != 0:
		return nil, errorResponse(validation("%v: %s", interpreter.ErrSyntaxError, strings.Join(parser.Errors(), "\n")))
	case conditional.Expression == nil:
		return nil, errorResponse(validation("%v: empty expression", interpreter.ErrSyntaxError))
	}
	if err := interpreter.ValidateExpressionAttributeNamesDeclared("FilterExpression", filter, names); err != nil {
		return nil, errorResponse(validation("%v", err))
	}
	aliased := map[string]bool{}
	for _, v := range names {
		aliased[v] = true
	}
	return &compiledFilter{cond: conditional, names: names, values: values, text: filter, aliased: aliased}, nil
}

// match evaluates the filter on it.
func (f *compiledFilter) match(it item) (bool, *response) {
	attrs := map[string]*types.Item{}
	for name, raw := range it {
		if !f.reads(name) {
			continue
		}
		var v types.Item
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, errorResponse(&apiError{status: http.StatusInternalServerError, code: "InternalServerError", msg: "decode stored attribute " + name + ": " + err.Error()})
		}
		attrs[name] = &v
	}
	env := language.NewEnvironment()
	env.Aliases = maps.Clone(f.names)
	if err := env.AddAttributes(attrs); err != nil {
		return false, errorResponse(validation("%v: %s", interpreter.ErrUnsupportedFeature, err))
	}
	if err := env.AddAttributes(f.values); err != nil {
		return false, errorResponse(validation("%v: %s", interpreter.ErrUnsupportedFeature, err))
	}
	result := language.Eval(f.cond, env)
	if result.Type() == language.ObjectTypeError {
		return false, errorResponse(validation("%v: %s", interpreter.ErrSyntaxError, result.Inspect()))
	}
	return result == language.TRUE, nil
}
