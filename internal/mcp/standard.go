package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An older client gets only what its negotiated protocol version defines.
// The SDK writes some fields at every version (a tool's annotations and
// outputSchema, a result's ttlMs, cacheScope and resultType), so the
// connection rewrites each answer on its way out: it learns the version
// from the initialize answer and keeps, per method, the fields of that
// version. TestToolsListAtOlderVersionsCarriesOnlyStandardFields checks it
// with a client speaking each version on the wire.

// Protocol versions, oldest first.
const (
	v20241105 = "2024-11-05"
	v20250326 = "2025-03-26" // tool annotations
	v20250618 = "2025-06-18" // tool title and outputSchema, structuredContent, elicitation
	v20251125 = "2025-11-25" // tool icons and execution
	v20260728 = "2026-07-28" // result ttlMs, cacheScope, resultType; multi round-trip input
)

// toolFields are a tool's fields, by the version that added them.
var toolFields = []struct {
	since  string
	fields []string
}{
	{v20241105, []string{"name", "description", "inputSchema"}},
	{v20250326, []string{"annotations"}},
	{v20250618, []string{"title", "outputSchema", "_meta"}},
	{v20251125, []string{"icons", "execution"}},
}

// callFields are a tools/call result's fields, by version.
var callFields = []struct {
	since  string
	fields []string
}{
	{v20241105, []string{"content", "isError", "_meta"}},
	{v20250618, []string{"structuredContent"}},
}

// newResultFields are the result fields 2026-07-28 added to every method.
var newResultFields = []string{"ttlMs", "cacheScope", "resultType"}

type standardTransport struct{ sdk.Transport }

func (t standardTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &standardConn{Connection: c, methods: map[string]string{}, cancelled: map[string]bool{}}, nil
}

type standardConn struct {
	sdk.Connection
	mu      sync.Mutex
	version string            // negotiated; "" until initialize answered (the newest)
	methods map[string]string // open request id → method
	// cancelled are the open requests the client cancelled
	// (notifications/cancelled): the SDK ends their context but still
	// answers them, and the protocol says a cancelled request gets no
	// response, so Write drops it.
	cancelled map[string]bool
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *standardConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.mu.Lock()
		c.methods[idKey(req.ID)] = req.Method
		c.mu.Unlock()
	} else if ok && req.Method == "notifications/cancelled" {
		var p sdk.CancelledParams
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.mu.Lock()
				// Only a request still open, and never initialize (which
				// the protocol says a client must not cancel).
				if method, open := c.methods[idKey(id)]; open && method != "initialize" {
					c.cancelled[idKey(id)] = true
				}
				c.mu.Unlock()
			}
		}
	}
	return m, err
}

func (c *standardConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		method := c.methods[idKey(resp.ID)]
		delete(c.methods, idKey(resp.ID))
		if c.cancelled[idKey(resp.ID)] {
			delete(c.cancelled, idKey(resp.ID))
			c.mu.Unlock()
			return nil
		}
		if method == "initialize" && resp.Error == nil {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &r) == nil {
				c.version = r.ProtocolVersion
			}
		}
		version := c.version
		c.mu.Unlock()
		if resp.Error == nil && len(resp.Result) > 0 {
			if b, changed := standardResult(version, method, resp.Result); changed {
				out := *resp
				out.Result = b
				m = &out
			}
		}
	}
	return c.Connection.Write(ctx, m)
}

// standardResult keeps the fields of a result that the version defines.
func standardResult(version, method string, raw json.RawMessage) (json.RawMessage, bool) {
	if version == "" || version >= v20260728 {
		return raw, false
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(raw, &r) != nil {
		return raw, false
	}
	changed := false
	for _, f := range newResultFields {
		if _, ok := r[f]; ok {
			delete(r, f)
			changed = true
		}
	}
	switch method {
	case "tools/list":
		var list []map[string]json.RawMessage
		if json.Unmarshal(r["tools"], &list) == nil {
			allowed := since(version, toolFields)
			for _, tool := range list {
				for k := range tool {
					if !allowed[k] {
						delete(tool, k)
						changed = true
					}
				}
			}
			r["tools"], _ = json.Marshal(list)
		}
	case "tools/call":
		allowed := since(version, callFields)
		for k := range r {
			if !allowed[k] {
				delete(r, k)
				changed = true
			}
		}
	}
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(r)
	if err != nil {
		return raw, false
	}
	return b, true
}

func since(version string, table []struct {
	since  string
	fields []string
}) map[string]bool {
	out := map[string]bool{}
	for _, row := range table {
		if version >= row.since {
			for _, f := range row.fields {
				out[f] = true
			}
		}
	}
	return out
}
