package main

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/types"
)

// minidyn v0.8.2 snapshots every table a TransactWriteItems names, whole,
// before it applies the first item, so that it can roll back: a
// transaction cost what its tables held, and a long run's grew with every
// event it wrote. The stand-in applies a transaction itself, item by item
// through minidyn's own PutItem, UpdateItem and DeleteItem (each with its
// condition) and its interpreter for a ConditionCheck, after reading only
// the items it names. If every item applies, that is the answer. If any
// does not, it puts those items back and hands the whole request to
// minidyn's TransactWriteItems, which answers from the same state as
// before: every refusal, its shape and its reasons are minidyn's, as they
// were. Requests are served one at a time (Standin.mu), so no other
// request sees a transaction half applied.

// transactWriteOp is one item of a TransactWriteItems as the stand-in
// applies it.
type transactWriteOp struct {
	TableName                 string
	Key                       item
	Item                      item
	UpdateExpression          string
	ConditionExpression       string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
}

// fastTransact applies the transaction body and answers it, or returns nil
// with nothing changed: then minidyn is to answer it.
func (s *Standin) fastTransact(body []byte) *response {
	var in struct {
		TransactItems []struct {
			ConditionCheck, Put, Update, Delete *transactWriteOp
		}
	}
	if json.Unmarshal(body, &in) != nil || len(in.TransactItems) == 0 {
		return nil
	}
	befores := s.befores("TransactWriteItems", body)
	if len(befores) != len(in.TransactItems) {
		return nil
	}
	seen := map[string]bool{}
	for _, b := range befores {
		if b.key == nil {
			return nil
		}
		id := b.table + "\x00" + string(mustJSON(b.key))
		if seen[id] {
			return nil // minidyn refuses two operations on one item
		}
		seen[id] = true
	}
	applied := 0
	ok := true
	for i, ti := range in.TransactItems {
		var op string
		var w *transactWriteOp
		switch {
		case ti.ConditionCheck != nil && ti.Put == nil && ti.Update == nil && ti.Delete == nil:
			if !s.conditionHolds(ti.ConditionCheck, befores[i].old) {
				ok = false
			}
		case ti.Put != nil && ti.Update == nil && ti.Delete == nil:
			op, w = "PutItem", ti.Put
		case ti.Update != nil && ti.Put == nil && ti.Delete == nil:
			op, w = "UpdateItem", ti.Update
		case ti.Delete != nil && ti.Put == nil && ti.Update == nil:
			op, w = "DeleteItem", ti.Delete
		default:
			ok = false
		}
		if ok && w != nil && !placeholdersUsed(w, w.UpdateExpression+" "+w.ConditionExpression) {
			ok = false
		}
		if ok && w != nil {
			req := map[string]any{"TableName": w.TableName}
			if op == "PutItem" {
				req["Item"] = w.Item
			} else {
				req["Key"] = w.Key
			}
			if w.UpdateExpression != "" {
				req["UpdateExpression"] = w.UpdateExpression
			}
			if w.ConditionExpression != "" {
				req["ConditionExpression"] = w.ConditionExpression
			}
			if len(w.ExpressionAttributeNames) > 0 {
				req["ExpressionAttributeNames"] = w.ExpressionAttributeNames
			}
			if len(w.ExpressionAttributeValues) > 0 {
				req["ExpressionAttributeValues"] = w.ExpressionAttributeValues
			}
			applied = i + 1
			ok = s.call(op, mustJSON(req)).status == http.StatusOK
		}
		if !ok {
			s.restore(befores[:applied])
			return nil
		}
	}
	return jsonResponse(struct{}{})
}

// conditionHolds evaluates a ConditionCheck against stored, the item as it
// is (nil: none), as minidyn does; false also when minidyn would refuse
// the check (it then answers the transaction itself).
func (s *Standin) conditionHolds(c *transactWriteOp, stored item) bool {
	holds, ok := evalCondition(c, stored)
	return ok && holds
}

// evalCondition evaluates c's ConditionExpression against stored with
// minidyn's interpreter; ok is false when there is none or minidyn would
// refuse it (an unused or undeclared placeholder, a syntax error).
func evalCondition(c *transactWriteOp, stored item) (holds, ok bool) {
	if c.ConditionExpression == "" || !placeholdersUsed(c, c.ConditionExpression) {
		return false, false
	}
	attrs := map[string]*types.Item{}
	for name, raw := range stored {
		var v types.Item
		if json.Unmarshal(raw, &v) != nil {
			return false, false
		}
		attrs[name] = &v
	}
	values := map[string]*types.Item{}
	for p, raw := range c.ExpressionAttributeValues {
		var v types.Item
		if json.Unmarshal(raw, &v) != nil {
			return false, false
		}
		values[p] = &v
	}
	lang := interpreter.Language{}
	matched, err := lang.Match(interpreter.MatchInput{TableName: c.TableName, Expression: c.ConditionExpression,
		ExpressionType: interpreter.ExpressionTypeConditional, Item: attrs, Aliases: c.ExpressionAttributeNames, Attributes: values})
	return matched, err == nil
}

// placeholdersUsed reports whether every name and value w declares is
// used in its expressions, all: minidyn refuses an unused one, as
// DynamoDB does.
func placeholdersUsed(w *transactWriteOp, all string) bool {
	names, values := namePlaceholder.FindAllString(all, -1), valuePlaceholder.FindAllString(all, -1)
	for p := range w.ExpressionAttributeNames {
		if !containsPlaceholder(names, p) {
			return false
		}
	}
	for p := range w.ExpressionAttributeValues {
		if !containsPlaceholder(values, p) {
			return false
		}
	}
	return true
}

func containsPlaceholder(found []string, p string) bool { return slices.Contains(found, p) }
