package main

import (
	"bytes"
	"encoding/json"
	"math"
)

// Consumed read capacity, reported as DynamoDB reports it when a Query or
// Scan asks (ReturnConsumedCapacity TOTAL or INDEXES): the items the
// request read — before its FilterExpression, as stored in the table or
// as projected into the index — summed and rounded up to 4 KB, one unit
// per 4 KB strongly consistent, half eventually consistent (every read
// of a global index). A filter that drops most of what a query reads
// therefore costs what it read, not what it returned.

// readCapacity is the ConsumedCapacity of a read of n bytes; index names
// the index read, if any.
func readCapacity(mode, table, index string, n int, consistent bool) map[string]any {
	units := math.Max(1, math.Ceil(float64(n)/4096))
	if !consistent {
		units /= 2
	}
	c := map[string]any{"TableName": table, "CapacityUnits": units, "ReadCapacityUnits": units}
	if mode == "INDEXES" {
		part := map[string]any{"CapacityUnits": units, "ReadCapacityUnits": units}
		if index == "" {
			c["Table"] = part
		} else {
			c["GlobalSecondaryIndexes"] = map[string]any{index: part}
		}
	}
	return c
}

// wantsCapacity is the request's ReturnConsumedCapacity, "" for NONE.
func wantsCapacity(body []byte) string {
	var req struct{ ReturnConsumedCapacity string }
	_ = json.Unmarshal(body, &req)
	if req.ReturnConsumedCapacity == "TOTAL" || req.ReturnConsumedCapacity == "INDEXES" {
		return req.ReturnConsumedCapacity
	}
	return ""
}

// withReadCapacity adds what a base-table Query or Scan read to minidyn's
// answer: its ConsumedCapacity and ScannedCount (minidyn gives neither).
// Without a filter the items returned are the items read; with one, the
// request is repeated without it (minidyn answers it with the same page
// boundary, which capPage set) and cut at the page's LastEvaluatedKey.
func (s *Standin) withReadCapacity(op string, body []byte, resp *response) *response {
	mode := wantsCapacity(body)
	if mode == "" || resp.status != 200 {
		return resp
	}
	var req map[string]json.RawMessage
	var out map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(resp.body, &out) != nil {
		return resp
	}
	var table string
	var consistent bool
	_ = json.Unmarshal(req["TableName"], &table)
	_ = json.Unmarshal(req["ConsistentRead"], &consistent)
	var page struct {
		Items            []item
		LastEvaluatedKey item
	}
	_ = json.Unmarshal(resp.body, &page)
	read := page.Items
	if _, filtered := req["FilterExpression"]; filtered || req["ProjectionExpression"] != nil || req["Select"] != nil {
		var probe struct{ Items []item }
		if s.callJSON(op, probeOf(req), &probe) != nil {
			return resp
		}
		read = probe.Items
		if len(page.LastEvaluatedKey) > 0 {
			for i, it := range read {
				if sameKey(it, page.LastEvaluatedKey) {
					read = read[:i+1]
					break
				}
			}
		}
	}
	n := 0
	for _, it := range read {
		n += itemSize(it)
	}
	out["ConsumedCapacity"] = mustJSON(readCapacity(mode, table, "", n, consistent))
	if _, ok := out["ScannedCount"]; !ok || op == "Query" {
		out["ScannedCount"] = mustJSON(len(read))
	}
	return &response{status: resp.status, header: resp.header, body: mustJSON(out)}
}

// probeOf is a Query or Scan request without its filter and projection:
// what DynamoDB reads to answer it.
func probeOf(req map[string]json.RawMessage) map[string]json.RawMessage {
	probe := map[string]json.RawMessage{}
	for k, v := range req {
		switch k {
		case "FilterExpression", "ProjectionExpression", "Select", "AttributesToGet", "QueryFilter", "ScanFilter",
			"ExpressionAttributeNames", "ExpressionAttributeValues", "ConditionalOperator", "ReturnConsumedCapacity":
		default:
			probe[k] = v
		}
	}
	var cond string
	_ = json.Unmarshal(req["KeyConditionExpression"], &cond)
	var names map[string]string
	var values map[string]json.RawMessage
	_ = json.Unmarshal(req["ExpressionAttributeNames"], &names)
	_ = json.Unmarshal(req["ExpressionAttributeValues"], &values)
	if n := usedNames(cond, names); len(n) > 0 {
		probe["ExpressionAttributeNames"] = mustJSON(n)
	}
	if v := usedValues(cond, values); len(v) > 0 {
		probe["ExpressionAttributeValues"] = mustJSON(v)
	}
	return probe
}

// sameKey reports whether it holds every attribute of key, equal.
func sameKey(it, key item) bool {
	for k, v := range key {
		if !bytes.Equal(compactJSON(it[k]), compactJSON(v)) {
			return false
		}
	}
	return true
}

func compactJSON(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
