package main

import (
	"encoding/json"
	"fmt"
)

// DynamoDB refuses, with a ValidationException and before it evaluates any
// condition or writes anything, a primary key attribute that is an empty
// string or binary, a partition key over 2048 bytes and a sort key over
// 1024 bytes (UTF-8 bytes for a string). minidyn v0.8.2 stores such keys,
// so a store that reads an empty id or keys items by caller input would
// pass against it and fail against DynamoDB; the stand-in refuses them as
// DynamoDB does, in every operation that names an item by its key.

const (
	maxHashKey  = 2048
	maxRangeKey = 1024
)

// keyedItem is an item, or an item's key, named by a request.
type keyedItem struct {
	table string
	it    item
}

// keyedItems lists the items op's request names, nil for the operations
// that name none.
func keyedItems(op string, body []byte) []keyedItem {
	var out []keyedItem
	switch op {
	case "PutItem":
		var in struct {
			TableName string
			Item      item
		}
		if json.Unmarshal(body, &in) == nil {
			out = append(out, keyedItem{in.TableName, in.Item})
		}
	case "GetItem", "DeleteItem", "UpdateItem":
		var in struct {
			TableName string
			Key       item
		}
		if json.Unmarshal(body, &in) == nil {
			out = append(out, keyedItem{in.TableName, in.Key})
		}
	case "TransactWriteItems":
		var in struct{ TransactItems []transactItem }
		if json.Unmarshal(body, &in) == nil {
			for _, ti := range in.TransactItems {
				switch op := ti.operation(); {
				case op == nil:
				case ti.Put != nil:
					out = append(out, keyedItem{op.TableName, op.Item})
				default:
					out = append(out, keyedItem{op.TableName, op.Key})
				}
			}
		}
	case "TransactGetItems":
		var in struct {
			TransactItems []struct{ Get *transactOperation }
		}
		if json.Unmarshal(body, &in) == nil {
			for _, ti := range in.TransactItems {
				if ti.Get != nil {
					out = append(out, keyedItem{ti.Get.TableName, ti.Get.Key})
				}
			}
		}
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item item }
				DeleteRequest *struct{ Key item }
			}
		}
		if json.Unmarshal(body, &in) == nil {
			for table, reqs := range in.RequestItems {
				for _, r := range reqs {
					if r.PutRequest != nil {
						out = append(out, keyedItem{table, r.PutRequest.Item})
					}
					if r.DeleteRequest != nil {
						out = append(out, keyedItem{table, r.DeleteRequest.Key})
					}
				}
			}
		}
	case "BatchGetItem":
		var in struct {
			RequestItems map[string]struct{ Keys []item }
		}
		if json.Unmarshal(body, &in) == nil {
			for table, ks := range in.RequestItems {
				for _, k := range ks.Keys {
					out = append(out, keyedItem{table, k})
				}
			}
		}
	}
	return out
}

// keyedItems is keyedItems(op, body), decoded once per request: body is
// the request's own slice, so one request's callers share the items, which
// none of them changes.
func (s *Standin) keyedItems(op string, body []byte) []keyedItem {
	if op != s.keyedOp || len(body) == 0 || len(body) != len(s.keyedBody) || &body[0] != &s.keyedBody[0] {
		s.keyedOp, s.keyedBody, s.keyed = op, body, keyedItems(op, body)
	}
	return s.keyed
}

// checkKeys refuses a request that names an item by a key DynamoDB would
// refuse; nil if there is none. Tables it does not know are left to minidyn.
func (s *Standin) checkKeys(op string, body []byte) *response {
	schemas := map[string][2]string{}
	for _, k := range s.keyedItems(op, body) {
		names, ok := schemas[k.table]
		if !ok {
			if hash, rng, ok := s.keySchema(k.table); ok {
				names[0], names[1] = hash, rng
			}
			schemas[k.table] = names
		}
		for i, name := range names {
			if name == "" {
				continue
			}
			if msg := keyProblem(k.it[name], name, i == 1); msg != "" {
				return errorResponse(validation("%s", msg))
			}
		}
	}
	return nil
}

// keyProblem is DynamoDB's complaint about one key attribute's value, or "".
func keyProblem(raw json.RawMessage, name string, isRange bool) string {
	if raw == nil {
		return "" // a missing key attribute: minidyn refuses it
	}
	var v struct {
		S *string
		B *[]byte
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var size int
	switch {
	case v.S != nil:
		if *v.S == "" {
			return "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: " + name
		}
		size = len(*v.S)
	case v.B != nil:
		if len(*v.B) == 0 {
			return "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: " + name
		}
		size = len(*v.B)
	default:
		return "" // a number: at most 38 digits, far below the limits
	}
	switch {
	case isRange && size > maxRangeKey:
		return fmt.Sprintf("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of %d bytes", maxRangeKey)
	case !isRange && size > maxHashKey:
		return fmt.Sprintf("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of %d bytes", maxHashKey)
	}
	return ""
}

// keySchema is table's key attribute names, as minidyn describes them;
// ok is false if it does not know the table. The answer is kept until a
// CreateTable, UpdateTable or DeleteTable of the table (forward): every
// request asks it, and minidyn describes a table in JSON.
func (s *Standin) keySchema(table string) (hash, rng string, ok bool) {
	if k, ok := s.keySchemas[table]; ok {
		return k[0], k[1], true
	}
	var described struct {
		Table struct{ KeySchema []keyElement }
	}
	if s.callJSON("DescribeTable", map[string]string{"TableName": table}, &described) != nil {
		return "", "", false
	}
	hash, rng = keyNames(described.Table.KeySchema)
	if s.keySchemas == nil {
		s.keySchemas = map[string][2]string{}
	}
	s.keySchemas[table] = [2]string{hash, rng}
	return hash, rng, true
}
