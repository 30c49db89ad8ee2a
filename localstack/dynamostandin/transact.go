package main

import (
	"encoding/json"
	"net/http"
	"strings"
)

// DynamoDB evaluates every condition of a cancelled TransactWriteItems and
// reports each failing one in CancellationReasons (ConditionalCheckFailed,
// with the old item when ReturnValuesOnConditionCheckFailure is ALL_OLD).
// minidyn v0.8.2 stops at the first failing item, marks every other item
// None, and never returns the old item of a Put or Delete. Its state is
// rolled back by then, so the stand-in re-checks each conditional item on
// its own, as a one-item ConditionCheck transaction, and rebuilds the
// reasons.

type transactOperation struct {
	TableName                           string
	Key                                 item
	Item                                item
	ConditionExpression                 string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]json.RawMessage
	ReturnValuesOnConditionCheckFailure string
}

type transactItem struct {
	ConditionCheck *transactOperation
	Put            *transactOperation
	Update         *transactOperation
	Delete         *transactOperation
}

func (t transactItem) operation() *transactOperation {
	switch {
	case t.ConditionCheck != nil:
		return t.ConditionCheck
	case t.Put != nil:
		return t.Put
	case t.Update != nil:
		return t.Update
	}
	return t.Delete
}

type cancellationReason struct {
	Code    string
	Message string `json:",omitempty"`
	Item    item   `json:",omitempty"`
}

func (s *Standin) completeCancellation(body []byte, resp *response) *response {
	var cancelled struct {
		Type                string `json:"__type"`
		CancellationReasons []cancellationReason
	}
	if json.Unmarshal(resp.body, &cancelled) != nil || !strings.HasSuffix(cancelled.Type, "TransactionCanceledException") {
		return resp
	}
	var in struct{ TransactItems []transactItem }
	if json.Unmarshal(body, &in) != nil || len(in.TransactItems) != len(cancelled.CancellationReasons) {
		return resp
	}
	for _, r := range cancelled.CancellationReasons {
		if r.Code != "None" && r.Code != "ConditionalCheckFailed" {
			return resp
		}
	}

	reasons := cancelled.CancellationReasons
	codes := make([]string, len(reasons))
	for i, ti := range in.TransactItems {
		op := ti.operation()
		if op != nil && op.ConditionExpression != "" {
			if failed, old := s.conditionFails(op, ti.Put != nil); failed {
				reasons[i] = cancellationReason{Code: "ConditionalCheckFailed", Message: "The conditional request failed", Item: old}
			}
		}
		codes[i] = reasons[i].Code
	}
	return &response{status: http.StatusBadRequest, header: http.Header{}, body: mustJSON(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})}
}

// conditionFails evaluates op's condition against the stored item: with
// minidyn's interpreter on the item read by key, or, where that cannot
// say (evalCondition), as a one-item ConditionCheck transaction, which
// costs minidyn a copy of the table.
func (s *Standin) conditionFails(op *transactOperation, isPut bool) (bool, item) {
	key := op.Key
	if isPut {
		key = s.keyOf(op.TableName, op.Item)
	}
	var got struct{ Item item }
	if key != nil && s.callJSON("GetItem", map[string]any{"TableName": op.TableName, "Key": key, "ConsistentRead": true}, &got) == nil {
		stored := got.Item
		holds, ok := evalCondition(&transactWriteOp{TableName: op.TableName, ConditionExpression: op.ConditionExpression,
			ExpressionAttributeNames:  usedNames(op.ConditionExpression, op.ExpressionAttributeNames),
			ExpressionAttributeValues: usedValues(op.ConditionExpression, op.ExpressionAttributeValues)}, stored)
		if ok {
			if holds {
				return false, nil
			}
			if op.ReturnValuesOnConditionCheckFailure == "ALL_OLD" && len(stored) > 0 {
				return true, stored
			}
			return true, nil
		}
	}
	check := map[string]any{
		"TableName":           op.TableName,
		"Key":                 key,
		"ConditionExpression": op.ConditionExpression,
	}
	if names := usedNames(op.ConditionExpression, op.ExpressionAttributeNames); len(names) > 0 {
		check["ExpressionAttributeNames"] = names
	}
	if values := usedValues(op.ConditionExpression, op.ExpressionAttributeValues); len(values) > 0 {
		check["ExpressionAttributeValues"] = values
	}
	if op.ReturnValuesOnConditionCheckFailure != "" {
		check["ReturnValuesOnConditionCheckFailure"] = op.ReturnValuesOnConditionCheckFailure
	}
	resp := s.call("TransactWriteItems", mustJSON(map[string]any{
		"TransactItems": []any{map[string]any{"ConditionCheck": check}},
	}))
	if resp.status == http.StatusOK {
		return false, nil
	}
	var cancelled struct{ CancellationReasons []cancellationReason }
	if json.Unmarshal(resp.body, &cancelled) != nil || len(cancelled.CancellationReasons) != 1 ||
		cancelled.CancellationReasons[0].Code != "ConditionalCheckFailed" {
		return false, nil
	}
	return true, cancelled.CancellationReasons[0].Item
}

func usedNames(expr string, names map[string]string) map[string]string {
	out := map[string]string{}
	for _, p := range namePlaceholder.FindAllString(expr, -1) {
		if v, ok := names[p]; ok {
			out[p] = v
		}
	}
	return out
}

func usedValues(expr string, values map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, p := range valuePlaceholder.FindAllString(expr, -1) {
		if v, ok := values[p]; ok {
			out[p] = v
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
