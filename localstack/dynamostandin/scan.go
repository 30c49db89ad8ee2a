package main

import (
	"encoding/json"
	"slices"
	"strings"
)

// A Scan used to be minidyn's: it evaluated the filter over the whole
// table, and the stand-in asked twice more to find the 1 MB page, so each
// page of a paged Scan cost the table. The stand-in now answers a Scan of
// the base table from its own copy (members.go, the index ""), in
// primary-key order, a page at a time: a page costs what it reads, as
// DynamoDB's does. A Scan of an index, in segments, with a legacy
// parameter, a nested projection or a Select other than COUNT is left to
// minidyn, as before.

type scanInput struct {
	queryInput
	Segment       *int
	TotalSegments *int
	ScanFilter    json.RawMessage
}

// sizeOf is the size of the member whose primary key is pk (limits.go),
// measured once.
func (im *indexMembers) sizeOf(pk string) int {
	if n, ok := im.sizes[pk]; ok {
		return n
	}
	if im.sizes == nil {
		im.sizes = map[string]int{}
	}
	n := itemSize(im.items[pk])
	im.sizes[pk] = n
	return n
}

// tableOrder is the base table's members' primary keys, sorted; rebuilt
// after a write changed them.
func (im *indexMembers) tableOrder() []string {
	if im.order == nil {
		im.order = make([]string, 0, len(im.items))
		for pk := range im.items {
			im.order = append(im.order, pk)
		}
		slices.Sort(im.order)
	}
	return im.order
}

// scan answers a Scan itself, or returns nil: then minidyn is to.
func (s *Standin) scan(body []byte) *response {
	var in scanInput
	if json.Unmarshal(body, &in) != nil || in.IndexName != "" || in.Segment != nil || in.TotalSegments != nil ||
		len(in.ScanFilter) > 0 || len(in.AttributesToGet) > 0 || in.KeyConditionExpression != "" ||
		strings.ContainsAny(in.ProjectionExpression, ".[") ||
		!(in.Select == "" || in.Select == "COUNT" && in.ProjectionExpression == "") || in.Limit < 0 {
		return nil
	}
	if e := checkPlaceholdersUsed(in.queryInput); e != nil {
		return nil
	}
	hash, rng, ok := s.keySchema(in.TableName)
	if !ok {
		return nil
	}
	members, r := s.membersOf(in.TableName, baseIndex, hash, rng, hash, rng)
	if r != nil {
		return nil
	}
	order := members.tableOrder()
	from := 0
	if len(in.ExclusiveStartKey) > 0 {
		start := lagKey(in.ExclusiveStartKey, hash, rng)
		from, _ = slices.BinarySearch(order, start)
		if from < len(order) && order[from] == start {
			from++
		}
	}
	// A page ends at Limit items or at 1 MB read (before the filter).
	var page []item
	full := false
	read := 0
	for _, pk := range order[from:] {
		if in.Limit > 0 && len(page) == in.Limit {
			full = true
			break
		}
		it := members.items[pk]
		size := members.sizeOf(pk)
		if read+size > maxPageSize && len(page) > 0 {
			full = true
			break
		}
		read += size
		page = append(page, it)
	}
	if in.Limit > 0 && len(page) == in.Limit {
		full = true
	}
	items := page
	if in.FilterExpression != "" {
		f, r := compileFilter(in.queryInput, in.FilterExpression, nil)
		if r != nil {
			return r
		}
		evaluated.Add(int64(len(page)))
		items = nil
		for _, it := range page {
			ok, r := f.match(it)
			if r != nil {
				return r
			}
			if ok {
				items = append(items, it)
			}
		}
	}
	outItems := []item{}
	for _, it := range items {
		if in.ProjectionExpression != "" {
			var e *apiError
			if it, e = projectTopLevel(it, in.ProjectionExpression, in.ExpressionAttributeNames); e != nil {
				return errorResponse(e)
			}
		}
		outItems = append(outItems, it)
	}
	out := map[string]any{"Count": len(outItems), "ScannedCount": len(page)}
	if in.Select != "COUNT" {
		out["Items"] = outItems
	}
	if mode := wantsCapacity(body); mode != "" {
		out["ConsumedCapacity"] = readCapacity(mode, in.TableName, "", read, in.ConsistentRead)
	}
	if full {
		last := page[len(page)-1]
		lek := item{hash: last[hash]}
		if rng != "" {
			lek[rng] = last[rng]
		}
		out["LastEvaluatedKey"] = lek
	}
	return jsonResponse(out)
}
