package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Two write gaps of minidyn v0.8.2 are filled here (a third, the
// ClientRequestToken of TransactWriteItems, in idempotency.go).
//
// REMOVE of a top-level attribute in an UpdateExpression is a no-op in
// minidyn's expression language (its environment forgets the name but the
// stored item keeps it); REMOVE of list elements works. dont's store drops
// a resolved spawn out of the sparse index with "REMOVE gsi1pk", so the
// stand-in removes such attributes itself after minidyn has applied the
// rest of the update, in UpdateItem and in TransactWriteItems.
//
// PutItem and DeleteItem ignore ReturnValuesOnConditionCheckFailure, so a
// failed condition never carries the old item; the stand-in adds it.

var updateClause = regexp.MustCompile(`(?i)\b(SET|REMOVE|ADD|DELETE)\b`)

// topLevelRemovals returns the top-level attribute names that expr's
// REMOVE clauses name, aliases resolved.
func topLevelRemovals(expr string, names map[string]string) []string {
	var locs [][]int
	for _, loc := range updateClause.FindAllStringIndex(expr, -1) {
		if loc[0] > 0 && strings.ContainsRune(":#", rune(expr[loc[0]-1])) {
			continue // a placeholder such as :set, not a clause
		}
		locs = append(locs, loc)
	}
	var out []string
	for i, loc := range locs {
		if !strings.EqualFold(expr[loc[0]:loc[1]], "REMOVE") {
			continue
		}
		end := len(expr)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		for _, path := range strings.Split(expr[loc[1]:end], ",") {
			path = strings.TrimSpace(path)
			if path == "" || strings.ContainsAny(path, ".[") {
				continue
			}
			if strings.HasPrefix(path, "#") {
				path = names[path]
			}
			out = append(out, path)
		}
	}
	return out
}

type updateInput struct {
	TableName                string
	Key                      item
	UpdateExpression         string
	ExpressionAttributeNames map[string]string
	ReturnValues             string
}

func (s *Standin) getItem(table string, key item) item {
	var out struct{ Item item }
	if s.callJSON("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}, &out) != nil {
		return nil
	}
	return out.Item
}

// stripAttributes deletes attrs from the stored item, if it has any.
func (s *Standin) stripAttributes(table string, key item, attrs []string) *response {
	stored := s.getItem(table, key)
	changed := false
	for _, a := range attrs {
		if _, ok := stored[a]; ok {
			delete(stored, a)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	var ignored struct{}
	return s.callJSON("PutItem", map[string]any{"TableName": table, "Item": stored}, &ignored)
}

func (s *Standin) updateItem(body []byte) *response {
	var in updateInput
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	removed := topLevelRemovals(in.UpdateExpression, in.ExpressionAttributeNames)
	if len(removed) == 0 {
		return s.forward("UpdateItem", body)
	}
	before := s.getItem(in.TableName, in.Key)
	resp := s.forward("UpdateItem", body)
	if resp.status != http.StatusOK {
		return resp
	}
	if r := s.stripAttributes(in.TableName, in.Key, removed); r != nil {
		return r
	}
	var out struct{ Attributes item }
	if json.Unmarshal(resp.body, &out) != nil {
		return resp
	}
	switch in.ReturnValues {
	case "ALL_NEW", "UPDATED_NEW":
		for _, a := range removed {
			delete(out.Attributes, a)
		}
	case "UPDATED_OLD":
		if out.Attributes == nil {
			out.Attributes = item{}
		}
		for _, a := range removed {
			if v, ok := before[a]; ok {
				out.Attributes[a] = v
			}
		}
	default:
		return resp
	}
	if len(out.Attributes) == 0 {
		return jsonResponse(map[string]any{})
	}
	return jsonResponse(out)
}

// transactWrite answers a retry of a successful ClientRequestToken, or
// forwards TransactWriteItems and then applies its top-level REMOVEs or
// completes its cancellation reasons.
func (s *Standin) transactWrite(body []byte) *response {
	token, digest := transactToken(body)
	now := time.Now()
	if token != "" {
		if r := s.replayToken(token, digest, now); r != nil {
			return r
		}
	}
	resp := s.forward("TransactWriteItems", body)
	if resp.status == http.StatusBadRequest {
		return s.completeCancellation(body, resp)
	}
	if resp.status != http.StatusOK {
		return resp
	}
	if token != "" {
		s.rememberToken(token, digest, now)
	}
	var in struct {
		TransactItems []struct{ Update *updateInput }
	}
	if json.Unmarshal(body, &in) != nil {
		return resp
	}
	for _, ti := range in.TransactItems {
		if ti.Update == nil {
			continue
		}
		if removed := topLevelRemovals(ti.Update.UpdateExpression, ti.Update.ExpressionAttributeNames); len(removed) > 0 {
			if r := s.stripAttributes(ti.Update.TableName, ti.Update.Key, removed); r != nil {
				return r
			}
		}
	}
	return resp
}

// conditionalWrite forwards PutItem or DeleteItem and adds the old item to
// a failed condition's error when ALL_OLD was asked for.
func (s *Standin) conditionalWrite(op string, body []byte) *response {
	resp := s.forward(op, body)
	if resp.status != http.StatusBadRequest {
		return resp
	}
	var in struct {
		TableName                           string
		Key                                 item
		Item                                item
		ReturnValuesOnConditionCheckFailure string
	}
	if json.Unmarshal(body, &in) != nil || in.ReturnValuesOnConditionCheckFailure != "ALL_OLD" {
		return resp
	}
	var failed map[string]json.RawMessage
	if json.Unmarshal(resp.body, &failed) != nil || len(failed["Item"]) > 0 {
		return resp
	}
	var typ string
	_ = json.Unmarshal(failed["__type"], &typ)
	if !strings.HasSuffix(typ, "ConditionalCheckFailedException") {
		return resp
	}
	key := in.Key
	if op == "PutItem" {
		key = s.keyOf(in.TableName, in.Item)
	}
	old := s.getItem(in.TableName, key)
	if len(old) == 0 {
		return resp
	}
	failed["Item"] = mustJSON(old)
	return &response{status: resp.status, header: http.Header{}, body: mustJSON(failed)}
}

// keyOf extracts the table's primary key attributes from it.
func (s *Standin) keyOf(table string, it item) item {
	var described struct {
		Table struct{ KeySchema []keyElement }
	}
	if s.callJSON("DescribeTable", map[string]string{"TableName": table}, &described) != nil {
		return nil
	}
	hash, rng := keyNames(described.Table.KeySchema)
	key := item{hash: it[hash]}
	if rng != "" {
		key[rng] = it[rng]
	}
	return key
}
