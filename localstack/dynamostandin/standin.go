package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	miniserver "github.com/truora/minidyn/server"
)

// maxBody bounds a request body. DynamoDB's largest request, a 100-item
// TransactWriteItems of 400 KB items, is far below it.
const maxBody = 64 << 20

// Standin is a DynamoDB-compatible http.Handler: minidyn's handler plus
// what the real service does and minidyn does not (see localstack/README.md).
//
// Requests are served one at a time. minidyn guards its item operations
// with a mutex but not its table operations, and serialising keeps the
// index-query rewrite atomic.
type Standin struct {
	mu     sync.Mutex
	inner  http.Handler
	region string
	tables map[string]*tableMeta
	tokens map[string]tokenRecord // successful ClientRequestTokens

	// Strict modes (strict.go): the defaults, each table's own, the items
	// whose writes index queries do not see yet, and what was injected.
	opts      Options
	tableOpts map[string]Options
	lag       map[string]map[string]*lagEntry
	rng       *mrand.Rand
	injected  injectedCounts

	// members are the items each queried index holds (members.go).
	members map[string]*tableMembers

	// minidynCalls counts the requests sent to minidyn, by operation, for
	// the tests that a read or a transaction no longer costs it the table.
	minidynCalls map[string]int

	// keySchemas are the tables' key attribute names (keySchema).
	keySchemas map[string][2]string

	// keyed are the items the request being served names (keyedItems),
	// decoded once for the checks, the injections, the images before a
	// write and the index members' refresh; keyedBody is that request's.
	keyedOp   string
	keyedBody []byte
	keyed     []keyedItem
}

// tableMeta is what the stand-in remembers about a table that minidyn
// does not describe.
type tableMeta struct {
	created              time.Time
	attributeDefinitions json.RawMessage
	billingMode          string
	ttlAttribute         string
	ttlEnabled           bool
}

// New returns a stand-in with no tables, answering as region, with no
// strict mode on.
func New(region string) *Standin { return NewStrict(region, Options{}, 1) }

// NewStrict returns a stand-in whose tables have the strict modes opts
// (strict.go) unless Configure says otherwise; seed drives the injected
// faults.
func NewStrict(region string, opts Options, seed uint64) *Standin {
	return &Standin{
		inner:     miniserver.NewServer(),
		region:    region,
		tables:    map[string]*tableMeta{},
		tokens:    map[string]tokenRecord{},
		opts:      opts,
		tableOpts: map[string]Options{},
		lag:       map[string]map[string]*lagEntry{},
		rng:       newRand(seed),
	}
}

// apiError is a DynamoDB error in the JSON 1.0 protocol's shape.
type apiError struct {
	status int
	code   string
	msg    string
}

func validation(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationException", msg: fmt.Sprintf(format, args...)}
}

func notFound(table string) *apiError {
	return &apiError{
		status: http.StatusBadRequest,
		code:   "ResourceNotFoundException",
		msg:    "Requested resource not found: Table: " + table + " not found",
	}
}

// response is a buffered reply, so that its CRC32 can be sent first.
type response struct {
	status int
	header http.Header
	body   []byte
}

func jsonResponse(v any) *response {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResponse(&apiError{status: http.StatusInternalServerError, code: "InternalServerError", msg: err.Error()})
	}
	return &response{status: http.StatusOK, header: http.Header{}, body: b}
}

func errorResponse(e *apiError) *response {
	b, _ := json.Marshal(map[string]string{
		"__type":  "com.amazonaws.dynamodb.v20120810#" + e.code,
		"message": e.msg,
	})
	return &response{status: e.status, header: http.Header{}, body: b}
}

func (s *Standin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp := s.serve(r)
	h := w.Header()
	for k, v := range resp.header {
		h[k] = v
	}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	// aws-sdk-go-v2's DynamoDB client checks the body against this header.
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(resp.body)), 10))
	h.Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

func (s *Standin) serve(r *http.Request) *response {
	if r.Method != http.MethodPost {
		return errorResponse(&apiError{status: http.StatusMethodNotAllowed, code: "UnknownOperationException", msg: "only POST is supported"})
	}
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	if len(body) > maxBody {
		return errorResponse(&apiError{status: http.StatusRequestEntityTooLarge, code: "ValidationException", msg: "request too large"})
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.keyedBody, s.keyed = nil, nil }() // last: the deferred refreshMembers reads them

	if target == ConfigureTarget {
		return s.configure(body)
	}
	if resp := s.checkKeys(op, body); resp != nil {
		return resp
	}
	if resp := s.checkLimits(op, body); resp != nil {
		return resp
	}
	if resp := s.checkReturnValues(op, body); resp != nil {
		return resp
	}
	if resp := s.inject(op, body); resp != nil {
		return resp
	}
	var befores []image
	if writes[op] && s.needBefores(op, body) {
		befores = s.befores(op, body)
	}
	if writes[op] {
		defer s.refreshMembers(op, body)
	}
	var resp *response
	switch op {
	case "UpdateTimeToLive":
		resp = s.updateTimeToLive(body)
	case "DescribeTimeToLive":
		resp = s.describeTimeToLive(body)
	case "ListTables":
		resp = s.listTables(body)
	case "Query":
		resp = s.query(body)
	case "Scan":
		if resp = s.scan(body); resp == nil {
			resp = s.pagedRead(op, body)
		}
	case "UpdateItem":
		resp = s.updateItem(body, oldOf(befores))
	case "PutItem", "DeleteItem":
		resp = s.conditionalWrite(op, body, oldOf(befores))
	case "TransactWriteItems":
		resp = s.transactWrite(body)
	default:
		resp = s.forward(op, body)
	}
	if resp.status == http.StatusOK && writes[op] {
		if r := s.checkUpdatedSizes(op, body, befores); r != nil {
			return r
		}
		s.recordLag(befores)
	}
	return resp
}

// call sends one request to minidyn and returns its reply unchanged.
func (s *Standin) call(op string, body []byte) *response {
	if s.minidynCalls == nil {
		s.minidynCalls = map[string]int{}
	}
	s.minidynCalls[op]++
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, req)
	return &response{status: rec.Code, header: http.Header{}, body: rec.Body.Bytes()}
}

// callJSON sends in to minidyn and decodes its successful reply into out.
func (s *Standin) callJSON(op string, in, out any) *response {
	body, err := json.Marshal(in)
	if err != nil {
		return errorResponse(validation("%v", err))
	}
	resp := s.call(op, body)
	if resp.status != http.StatusOK {
		return resp
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return errorResponse(&apiError{status: http.StatusInternalServerError, code: "InternalServerError", msg: "decode minidyn " + op + ": " + err.Error()})
	}
	return nil
}

// forward passes op to minidyn and completes what it answers.
func (s *Standin) forward(op string, body []byte) *response {
	var name struct{ TableName string }
	_ = json.Unmarshal(body, &name)

	if op == "CreateTable" {
		if _, exists := s.tables[name.TableName]; exists {
			return errorResponse(&apiError{status: http.StatusBadRequest, code: "ResourceInUseException", msg: "Table already exists: " + name.TableName})
		}
	}

	switch op {
	case "CreateTable", "UpdateTable", "DeleteTable":
		s.forgetMembers(name.TableName)
		delete(s.keySchemas, name.TableName)
	}
	resp := s.call(op, body)
	if resp.status == http.StatusBadRequest && !json.Valid(resp.body) {
		// minidyn answers operations it lacks with a plain-text 400.
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "UnknownOperationException",
			msg: "dynamostandin: operation " + op + " is not supported by minidyn (see localstack/README.md)"})
	}
	if resp.status != http.StatusOK {
		return resp
	}

	switch op {
	case "CreateTable":
		var in struct {
			AttributeDefinitions json.RawMessage
			BillingMode          string
		}
		_ = json.Unmarshal(body, &in)
		if in.BillingMode == "" {
			in.BillingMode = "PROVISIONED"
		}
		s.tables[name.TableName] = &tableMeta{
			created:              time.Now().UTC(),
			attributeDefinitions: in.AttributeDefinitions,
			billingMode:          in.BillingMode,
		}
		return s.completeDescription(resp, "TableDescription", name.TableName, "ACTIVE")
	case "DescribeTable":
		return s.completeDescription(resp, "Table", name.TableName, "ACTIVE")
	case "UpdateTable":
		if m := s.tables[name.TableName]; m != nil {
			var in struct {
				AttributeDefinitions json.RawMessage
				BillingMode          string
			}
			_ = json.Unmarshal(body, &in)
			if len(in.AttributeDefinitions) > 0 {
				m.attributeDefinitions = mergeAttributeDefinitions(m.attributeDefinitions, in.AttributeDefinitions)
			}
			if in.BillingMode != "" {
				m.billingMode = in.BillingMode
			}
		}
		return s.completeDescription(resp, "TableDescription", name.TableName, "ACTIVE")
	case "DeleteTable":
		resp = s.completeDescription(resp, "TableDescription", name.TableName, "DELETING")
		delete(s.tables, name.TableName)
		s.forgetStrict(name.TableName)
		return resp
	}
	return resp
}

// completeDescription adds to minidyn's table description what the SDK's
// waiters and callers read: TableStatus, ARNs, attribute definitions,
// billing mode and creation time.
func (s *Standin) completeDescription(resp *response, field, table, status string) *response {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return resp
	}
	var desc map[string]any
	dec := json.NewDecoder(bytes.NewReader(out[field]))
	dec.UseNumber()
	if err := dec.Decode(&desc); err != nil || desc == nil {
		return resp
	}
	arn := s.tableARN(table)
	desc["TableStatus"] = status
	desc["TableArn"] = arn
	desc["TableName"] = table
	if m := s.tables[table]; m != nil {
		if len(m.attributeDefinitions) > 0 {
			desc["AttributeDefinitions"] = m.attributeDefinitions
		}
		desc["BillingModeSummary"] = map[string]any{"BillingMode": m.billingMode}
		desc["CreationDateTime"] = float64(m.created.UnixMilli()) / 1000
	}
	if gsis, ok := desc["GlobalSecondaryIndexes"].([]any); ok {
		if len(gsis) == 0 {
			delete(desc, "GlobalSecondaryIndexes")
		}
		for _, g := range gsis {
			if gm, ok := g.(map[string]any); ok {
				gm["IndexArn"] = arn + "/index/" + fmt.Sprint(gm["IndexName"])
				if gm["IndexStatus"] == nil || gm["IndexStatus"] == "" {
					gm["IndexStatus"] = "ACTIVE"
				}
			}
		}
	}
	if lsis, ok := desc["LocalSecondaryIndexes"].([]any); ok && len(lsis) == 0 {
		delete(desc, "LocalSecondaryIndexes")
	}
	for k, v := range desc {
		if v == nil {
			delete(desc, k)
		}
	}
	b, err := json.Marshal(desc)
	if err != nil {
		return resp
	}
	out[field] = b
	return jsonResponse(out)
}

func mergeAttributeDefinitions(old, added json.RawMessage) json.RawMessage {
	type def struct{ AttributeName, AttributeType string }
	var a, b []def
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(added, &b)
	for _, d := range b {
		if !slices.ContainsFunc(a, func(x def) bool { return x.AttributeName == d.AttributeName }) {
			a = append(a, d)
		}
	}
	out, _ := json.Marshal(a)
	return out
}

func (s *Standin) tableARN(table string) string {
	return "arn:aws:dynamodb:" + s.region + ":000000000000:table/" + table
}

// updateTimeToLive records the TTL setting. The stand-in never expires
// items: TTL in dont only garbage-collects frames.
func (s *Standin) updateTimeToLive(body []byte) *response {
	var in struct {
		TableName               string
		TimeToLiveSpecification *struct {
			AttributeName string
			Enabled       *bool
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	spec := in.TimeToLiveSpecification
	if spec == nil || spec.AttributeName == "" || spec.Enabled == nil {
		return errorResponse(validation("TimeToLiveSpecification needs AttributeName and Enabled"))
	}
	m := s.tables[in.TableName]
	if m == nil {
		return errorResponse(notFound(in.TableName))
	}
	switch {
	case *spec.Enabled && m.ttlEnabled:
		return errorResponse(validation("TimeToLive is already enabled"))
	case !*spec.Enabled && !m.ttlEnabled:
		return errorResponse(validation("TimeToLive is already disabled"))
	case !*spec.Enabled && spec.AttributeName != m.ttlAttribute:
		return errorResponse(validation("TimeToLive is active on a different AttributeName: current AttributeName is %s", m.ttlAttribute))
	}
	m.ttlEnabled = *spec.Enabled
	m.ttlAttribute = spec.AttributeName
	return jsonResponse(map[string]any{
		"TimeToLiveSpecification": map[string]any{"AttributeName": spec.AttributeName, "Enabled": *spec.Enabled},
	})
}

func (s *Standin) describeTimeToLive(body []byte) *response {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
	}
	m := s.tables[in.TableName]
	if m == nil {
		return errorResponse(notFound(in.TableName))
	}
	desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if m.ttlEnabled {
		desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": m.ttlAttribute}
	}
	return jsonResponse(map[string]any{"TimeToLiveDescription": desc})
}

func (s *Standin) listTables(body []byte) *response {
	var in struct {
		ExclusiveStartTableName string
		Limit                   int
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return errorResponse(&apiError{status: http.StatusBadRequest, code: "SerializationException", msg: err.Error()})
		}
	}
	if in.Limit <= 0 || in.Limit > 100 {
		in.Limit = 100
	}
	var names []string
	for n := range s.tables {
		if n > in.ExclusiveStartTableName {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := map[string]any{}
	if len(names) > in.Limit {
		names = names[:in.Limit]
		out["LastEvaluatedTableName"] = names[len(names)-1]
	}
	if names == nil {
		names = []string{}
	}
	out["TableNames"] = names
	return jsonResponse(out)
}
