package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// observedTransport reports every response the SDK writes, after the
// connection under it (standardConn) has passed it on or dropped it.
type observedTransport struct {
	sdk.Transport
	responded chan jsonrpc.ID
}

func (t observedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return observedConn{c, t.responded}, err
}

type observedConn struct {
	sdk.Connection
	responded chan jsonrpc.ID
}

func (c observedConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if r, ok := m.(*jsonrpc.Response); ok {
		c.responded <- r.ID
	}
	return err
}

// A request the client cancelled (notifications/cancelled) gets no
// response: the SDK ends the call's context and still answers it, so the
// connection drops that answer; the next request is answered as usual.
func TestACancelledCallGetsNoResponse(t *testing.T) {
	started := make(chan struct{})
	srv := New("test", func(ctx context.Context, tl *tools.Tool) (*service.Service, func(), error) {
		close(started)
		<-ctx.Done() // the call runs until the client cancels it
		return nil, nil, ctx.Err()
	})
	serverT, clientT := sdk.NewInMemoryTransports()
	responded := make(chan jsonrpc.ID, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.srv.Run(ctx, observedTransport{standardTransport{serverT}, responded}) }()
	defer func() { cancel(); <-done }()
	cc, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	got := make(chan *jsonrpc.Response, 16)
	go func() {
		for {
			m, err := cc.Read(ctx)
			if err != nil {
				close(got)
				return
			}
			if r, ok := m.(*jsonrpc.Response); ok {
				got <- r
			}
		}
	}()
	id := func(n float64) jsonrpc.ID { i, _ := jsonrpc.MakeID(n); return i }
	send := func(m jsonrpc.Message) {
		t.Helper()
		if err := cc.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	send(&jsonrpc.Request{ID: id(1), Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire","version":"0"}}`)})
	if r := <-got; r == nil || r.ID != id(1) || r.Error != nil {
		t.Fatalf("initialize: %+v", r)
	}
	<-responded
	send(&jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	send(&jsonrpc.Request{ID: id(2), Method: "tools/call", Params: json.RawMessage(`{"name":"list","arguments":{}}`)})
	<-started
	send(&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":2,"reason":"the person pressed stop"}`)})
	// The SDK has finished the cancelled call and written, or tried to
	// write, its answer.
	if r := <-responded; r != id(2) {
		t.Fatalf("the server answered %v first", r)
	}
	send(&jsonrpc.Request{ID: id(3), Method: "ping", Params: json.RawMessage(`{}`)})
	for r := range got {
		if r.ID == id(2) {
			t.Fatalf("the cancelled call was answered: %s %v", r.Result, r.Error)
		}
		if r.ID == id(3) {
			return
		}
	}
	t.Fatal("the connection ended before the ping was answered")
}
