package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// DynamoDB's request limits that minidyn v0.8.2 does not enforce: an item
// of at most 400 KB (attribute names and values, DynamoDB's size rules),
// at most 100 actions and 4 MB of items in one TransactWriteItems, at most
// 25 requests in one BatchWriteItem, and Query and Scan pages of at most
// 1 MB of items read. A request over a limit is refused before anything is
// written; an update whose result would exceed 400 KB is undone.

const (
	maxItemSize      = 400 * 1024
	maxTransactItems = 100
	maxTransactSize  = 4 * 1024 * 1024
	maxBatchWrites   = 25
	maxPageSize      = 1024 * 1024
)

const (
	msgItemTooLarge   = "Item size has exceeded the maximum allowed size"
	msgUpdateTooLarge = "Item size to update has exceeded the maximum allowed size"
	msgTransactTooBig = "Transaction request cannot be larger than 4 MB"
)

// itemSize is an item's size as DynamoDB counts it: the UTF-8 length of
// every attribute name plus the size of its value.
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is one attribute value's size: strings by UTF-8 bytes,
// binaries by bytes, numbers by about one byte per two significant digits
// plus one, booleans and nulls one byte, sets the sum of their elements,
// lists and maps 3 bytes plus one byte and the size (and, in a map, the
// name) of each element.
func valueSize(raw json.RawMessage) int {
	if typ, body, ok := plainScalar(raw); ok {
		switch typ {
		case "S":
			return len(body)
		case "N":
			return numberSize(string(body))
		case "B":
			b, _ := base64.StdEncoding.DecodeString(string(body))
			return len(b)
		}
	}
	return decodedValueSize(raw)
}

// plainScalar splits a value written {"T":"body"} whose body JSON would
// decode to itself: no escape, quote or control character, and valid
// UTF-8. Most values are such strings, numbers and binaries; valueSize
// then skips decoding them, which was much of the stand-in's work.
func plainScalar(raw []byte) (typ string, body []byte, ok bool) {
	rest, found := bytes.CutPrefix(raw, []byte(`{"`))
	if !found {
		return "", nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 1 || i > 4 {
		return "", nil, false
	}
	typ, rest = string(rest[:i]), rest[i:]
	if rest, found = bytes.CutPrefix(rest, []byte(`":"`)); !found {
		return "", nil, false
	}
	if body, found = bytes.CutSuffix(rest, []byte(`"}`)); !found {
		return "", nil, false
	}
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", nil, false
		}
	}
	return typ, body, utf8.Valid(body)
}

// decodedValueSize is valueSize for any value, decoding it.
func decodedValueSize(raw json.RawMessage) int {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return len(raw)
	}
	n := 0
	for typ, body := range v {
		switch typ {
		case "S":
			var s string
			_ = json.Unmarshal(body, &s)
			n += len(s)
		case "N":
			var s string
			_ = json.Unmarshal(body, &s)
			n += numberSize(s)
		case "B":
			var s string
			_ = json.Unmarshal(body, &s)
			b, _ := base64.StdEncoding.DecodeString(s)
			n += len(b)
		case "BOOL", "NULL":
			n++
		case "SS", "NS", "BS":
			var ss []string
			_ = json.Unmarshal(body, &ss)
			for _, s := range ss {
				switch typ {
				case "SS":
					n += len(s)
				case "NS":
					n += numberSize(s)
				default:
					b, _ := base64.StdEncoding.DecodeString(s)
					n += len(b)
				}
			}
		case "L":
			var l []json.RawMessage
			_ = json.Unmarshal(body, &l)
			n += 3
			for _, e := range l {
				n += 1 + valueSize(e)
			}
		case "M":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(body, &m)
			n += 3
			for k, e := range m {
				n += len(k) + 1 + valueSize(e)
			}
		default:
			n += len(body)
		}
	}
	return n
}

// numberSize is DynamoDB's size of a number: its significant digits,
// two to a byte, plus one byte.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	if s == "" {
		return 1
	}
	return (len(s)+1)/2 + 1
}

// checkLimits refuses a request over one of DynamoDB's limits, before
// minidyn sees it; nil if there is none.
func (s *Standin) checkLimits(op string, body []byte) *response {
	switch op {
	case "PutItem":
		var in struct{ Item item }
		if json.Unmarshal(body, &in) == nil && itemSize(in.Item) > maxItemSize {
			return errorResponse(validation("%s", msgItemTooLarge))
		}
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest *struct{ Item item }
			}
		}
		if json.Unmarshal(body, &in) != nil {
			return nil
		}
		count := 0
		for _, reqs := range in.RequestItems {
			count += len(reqs)
			for _, r := range reqs {
				if r.PutRequest != nil && itemSize(r.PutRequest.Item) > maxItemSize {
					return errorResponse(validation("%s", msgItemTooLarge))
				}
			}
		}
		if count > maxBatchWrites {
			return errorResponse(validation("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to %d, Member must have length greater than or equal to 1]", maxBatchWrites))
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct {
				transactItem
				Update *struct {
					Key                       item
					ExpressionAttributeValues map[string]json.RawMessage
				}
			}
		}
		if json.Unmarshal(body, &in) != nil {
			return nil
		}
		if len(in.TransactItems) > maxTransactItems {
			refs := make([]string, len(in.TransactItems))
			for i := range refs {
				refs[i] = fmt.Sprintf("com.amazonaws.dynamodb.v20120810.TransactWriteItem@%08x", 0x10000000+i)
			}
			return errorResponse(validation("1 validation error detected: Value '[%s]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d",
				strings.Join(refs, ", "), maxTransactItems))
		}
		total := 0
		for _, ti := range in.TransactItems {
			switch {
			case ti.Put != nil:
				size := itemSize(ti.Put.Item)
				if size > maxItemSize {
					return errorResponse(validation("%s", msgItemTooLarge))
				}
				total += size
			case ti.Update != nil:
				total += itemSize(ti.Update.Key) + itemSize(ti.Update.ExpressionAttributeValues)
			case ti.Delete != nil:
				total += itemSize(ti.Delete.Key)
			case ti.ConditionCheck != nil:
				total += itemSize(ti.ConditionCheck.Key)
			}
		}
		if total > maxTransactSize {
			return errorResponse(validation("%s", msgTransactTooBig))
		}
	}
	return nil
}

// checkUpdatedSizes undoes a successful UpdateItem or TransactWriteItems
// that left an item over 400 KB: DynamoDB would have refused it. befores
// are the items as they were before, by key.
func (s *Standin) checkUpdatedSizes(op string, body []byte, befores []image) *response {
	// The updates, by index into befores, with the values they may write.
	updated := map[int]map[string]json.RawMessage{}
	switch op {
	case "UpdateItem":
		var in struct{ ExpressionAttributeValues map[string]json.RawMessage }
		_ = json.Unmarshal(body, &in)
		updated[0] = in.ExpressionAttributeValues
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct {
				Update *struct{ ExpressionAttributeValues map[string]json.RawMessage }
			}
		}
		if json.Unmarshal(body, &in) != nil {
			return nil
		}
		for i, ti := range in.TransactItems {
			if ti.Update != nil {
				updated[i] = ti.Update.ExpressionAttributeValues
			}
		}
	default:
		return nil
	}
	for i := range len(befores) {
		values, ok := updated[i]
		if !ok {
			continue
		}
		// An update writes its values and copies of the item's own
		// attributes: below this bound it cannot have grown too large.
		if 2*itemSize(befores[i].old)+itemSize(values) <= maxItemSize {
			continue
		}
		after := s.getItem(befores[i].table, befores[i].key)
		if itemSize(after) <= maxItemSize {
			continue
		}
		s.restore(befores)
		if op == "UpdateItem" {
			return errorResponse(validation("%s", msgUpdateTooLarge))
		}
		reasons := make([]cancellationReason, len(befores))
		for j := range reasons {
			reasons[j] = cancellationReason{Code: "None"}
			if j == i {
				reasons[j] = cancellationReason{Code: "ValidationError", Message: msgUpdateTooLarge}
			}
		}
		return cancelled(reasons)
	}
	return nil
}

// cancelled is a TransactionCanceledException with reasons.
func cancelled(reasons []cancellationReason) *response {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	return &response{status: http.StatusBadRequest, header: http.Header{}, body: mustJSON(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})}
}

// restore puts every item back as it was.
func (s *Standin) restore(befores []image) {
	var ignored struct{}
	for _, b := range befores {
		if b.old == nil {
			s.callJSON("DeleteItem", map[string]any{"TableName": b.table, "Key": b.key}, &ignored)
		} else {
			s.callJSON("PutItem", map[string]any{"TableName": b.table, "Item": b.old}, &ignored)
		}
	}
}

// capPage returns a base-table Query or Scan request whose page stops at
// 1 MB of items read, as DynamoDB's does, by lowering its Limit to the
// items that fit, so that minidyn answers with LastEvaluatedKey there. It
// measures the page as asked, unfiltered and unprojected (what DynamoDB
// counts); a request whose page fits is returned unchanged.
func (s *Standin) capPage(op string, body []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	probe := probeOf(req)
	var page struct{ Items []item }
	if s.callJSON(op, probe, &page) != nil {
		return body
	}
	total := 0
	for i, it := range page.Items {
		total += itemSize(it)
		if total > maxPageSize {
			req["Limit"] = mustJSON(max(i, 1))
			return mustJSON(req)
		}
	}
	return body
}

// pageFits reports whether resp, minidyn's answer to a Query or Scan
// without a filter or projection, holds at most 1 MB of items: then it is
// DynamoDB's page as it is.
func pageFits(body []byte, resp *response) bool {
	var req struct {
		FilterExpression, ProjectionExpression, Select string
		AttributesToGet, QueryFilter, ScanFilter       json.RawMessage
	}
	if json.Unmarshal(body, &req) != nil || req.FilterExpression != "" || req.ProjectionExpression != "" || req.Select != "" ||
		len(req.AttributesToGet) > 0 || len(req.QueryFilter) > 0 || len(req.ScanFilter) > 0 {
		return false
	}
	if resp.status != http.StatusOK {
		return true
	}
	var page struct{ Items []item }
	if json.Unmarshal(resp.body, &page) != nil {
		return true
	}
	total := 0
	for _, it := range page.Items {
		total += itemSize(it)
	}
	return total <= maxPageSize
}

// pagedRead answers a base-table Query or Scan with pages of at most 1 MB.
func (s *Standin) pagedRead(op string, body []byte) *response {
	resp := s.forward(op, body)
	if !pageFits(body, resp) {
		resp = s.forward(op, s.capPage(op, body))
	}
	return s.withReadCapacity(op, body, resp)
}
