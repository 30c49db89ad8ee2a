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

// updateItem forwards UpdateItem, applies its top-level REMOVEs and
// answers ALL_OLD as DynamoDB does: nothing when there was no item (minidyn
// returns the key). before is the item before the update.
func (s *Standin) updateItem(body []byte, before item) *response {
	var in updateInput
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	removed := topLevelRemovals(in.UpdateExpression, in.ExpressionAttributeNames)
	if len(removed) == 0 {
		resp := s.forward("UpdateItem", body)
		if resp.status == http.StatusOK && in.ReturnValues == "ALL_OLD" {
			return returnOld(before)
		}
		return resp
	}
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
	case "ALL_OLD":
		return returnOld(before)
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
	resp := s.fastTransact(body)
	if resp == nil {
		resp = s.forward("TransactWriteItems", body)
	}
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

// conditionalWrite forwards PutItem or DeleteItem, answers ReturnValues
// ALL_OLD itself (minidyn returns the new item of a put, and an item where
// there was none) and adds the old item to a failed condition's error when
// ReturnValuesOnConditionCheckFailure is ALL_OLD. before is the stored item.
func (s *Standin) conditionalWrite(op string, body []byte, before item) *response {
	var rv struct{ ReturnValues string }
	_ = json.Unmarshal(body, &rv)
	if rv.ReturnValues != "" {
		var req map[string]json.RawMessage
		if json.Unmarshal(body, &req) == nil {
			delete(req, "ReturnValues")
			body = mustJSON(req)
		}
	}
	resp := s.forward(op, body)
	if resp.status == http.StatusOK && rv.ReturnValues == "ALL_OLD" {
		return returnOld(before)
	}
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
	hash, rng, ok := s.keySchema(table)
	if !ok {
		return nil
	}
	key := item{hash: it[hash]}
	if rng != "" {
		key[rng] = it[rng]
	}
	return key
}

// returnOld is a write's answer with ReturnValues ALL_OLD: the item as it
// was, or no Attributes when there was none.
func returnOld(before item) *response {
	if len(before) == 0 {
		return jsonResponse(map[string]any{})
	}
	return jsonResponse(map[string]any{"Attributes": before})
}

func oldOf(befores []image) item {
	if len(befores) == 0 {
		return nil
	}
	return befores[0].old
}

// checkReturnValues refuses the ReturnValues and
// ReturnValuesOnConditionCheckFailure values DynamoDB refuses for op:
// PutItem and DeleteItem return only NONE or ALL_OLD, and a failed
// condition returns NONE or ALL_OLD (minidyn accepts any value there).
func (s *Standin) checkReturnValues(op string, body []byte) *response {
	switch op {
	case "PutItem", "DeleteItem", "UpdateItem":
	default:
		return nil
	}
	var in struct{ ReturnValues, ReturnValuesOnConditionCheckFailure string }
	if json.Unmarshal(body, &in) != nil {
		return nil
	}
	if op != "UpdateItem" {
		switch in.ReturnValues {
		case "", "NONE", "ALL_OLD":
		case "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW":
			return errorResponse(validation("Return values set to invalid value"))
		default:
			return errorResponse(validation("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", in.ReturnValues))
		}
	}
	switch in.ReturnValuesOnConditionCheckFailure {
	case "", "NONE", "ALL_OLD":
	default:
		return errorResponse(validation("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", in.ReturnValuesOnConditionCheckFailure))
	}
	return nil
}
