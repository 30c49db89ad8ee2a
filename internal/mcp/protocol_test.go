package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/mcp"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/store/sqlite/sqlitetest"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// client connects a Go SDK client with the given options to a fresh
// server over one SQLite store.
func client(t *testing.T, opts *sdk.ClientOptions, session *sdk.ClientSessionOptions) (*sdk.ClientSession, *sqlite.Store) {
	t.Helper()
	st := sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "dont.db"))
	t.Cleanup(func() { st.Close() })
	srv := mcp.New("test", func(context.Context, *tools.Tool) (*service.Service, func(), error) {
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Author: "mcp-test"}), func() {}, nil
	})
	cs := connect(t, srv, opts, session)
	return cs, st
}

// connect runs srv over an in-memory transport for the test and connects
// a Go SDK client to it, with opts and session (nil for the defaults).
func connect(t *testing.T, srv *mcp.Server, opts *sdk.ClientOptions, session *sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	serverT, clientT := sdk.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.RunTransport(sctx, serverT) }()
	t.Cleanup(func() { cancel(); <-done })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "0"}, opts).Connect(ctx, clientT, session)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, envelopeOf(t, res)
}

func data(env map[string]any) map[string]any { d, _ := env["data"].(map[string]any); return d }

// Every tool declares an output schema (the envelope, data typed per
// kind), and what each call returns as structuredContent validates
// against it — checked by a validator other than the one that wrote it.
func TestEveryToolHasAnOutputSchemaAndItsResultsMatchIt(t *testing.T) {
	cs, _ := client(t, nil, nil)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[string]*jsonschema.Schema{}
	for _, tl := range list.Tools {
		if tl.OutputSchema == nil {
			t.Errorf("%s has no outputSchema", tl.Name)
			continue
		}
		b, _ := json.Marshal(tl.OutputSchema)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat() // timestamps are date-time
		if err := c.AddResource(tl.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		if compiled[tl.Name], err = c.Compile(tl.Name + ".json"); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
	}
	if len(compiled) != len(mcp.Tools()) {
		t.Fatalf("%d output schemas for %d tools", len(compiled), len(mcp.Tools()))
	}
	check := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, env := call(t, cs, name, args)
		b, _ := json.Marshal(res.StructuredContent)
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err := compiled[name].Validate(inst); err != nil {
			t.Fatalf("%s: structuredContent does not match its outputSchema: %v\n%s", name, err, b)
		}
		return env
	}
	id := data(check("conclude", map[string]any{"statement": "water boils at 100 C", "confidence": 0.9}))["id"].(string)
	check("define", map[string]any{"curie": "ex:boil", "doc": "to boil"})
	req := data(check("assume", map[string]any{"id": id}))
	check("show", map[string]any{"id": req["request_id"].(string)})
	check("show", map[string]any{"id": id, "history": true})
	check("spawns", map[string]any{"all": true})
	check("spawns_manage", map[string]any{"op": "show", "request_id": req["request_id"].(string)})
	check("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/boil"}, "request_id": req["request_id"].(string)})
	check("list", nil)
	check("lock", map[string]any{"id": id, "reason": "settled"}) // held: a confirmation
	check("trust", map[string]any{"id": id, "reason": "maybe"})  // an error envelope
	g := data(check("guess", map[string]any{"question": "which?"}))
	check("answer", map[string]any{"request_id": g["request_id"].(string), "candidate": []string{"a", "a", "b"}})
	check("sweep", nil)

	// The schema bites: a claim envelope is not a spawn request.
	_, env := call(t, cs, "conclude", map[string]any{"statement": "x"})
	env["envelope_kind"] = "spawn_request"
	b, _ := json.Marshal(env)
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if compiled["assume"].Validate(inst) == nil {
		t.Fatal("assume's outputSchema accepted a claim as a spawn_request")
	}
}

// The hints are the registry's, and they differ from tool to tool.
func TestAnnotationsAreTheRegistrysAndNotUniform(t *testing.T) {
	cs, _ := client(t, nil, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	combos := map[string]bool{}
	for _, tl := range list.Tools {
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: annotations %+v", tl.Name, a)
		}
		var reg *tools.Tool
		for _, r := range mcp.Tools() {
			if mcp.ToolName(r.Name) == tl.Name {
				reg = r
			}
		}
		if a.ReadOnlyHint != reg.Annotations.ReadOnly || a.IdempotentHint != reg.Idempotent() ||
			*a.DestructiveHint != (reg.Annotations.Destructive && !reg.Annotations.ReadOnly) || *a.OpenWorldHint {
			t.Errorf("%s: %+v is not the registry's %+v", tl.Name, a, reg.Annotations)
		}
		combos[fmt.Sprint(a.ReadOnlyHint, a.IdempotentHint, *a.DestructiveHint)] = true
	}
	if len(combos) < 4 {
		t.Fatalf("only %d distinct annotation combinations: %v", len(combos), combos)
	}
	want := map[string][3]bool{ // readOnly, idempotent, destructive
		"show": {true, true, false}, "conclude": {false, false, false}, "lock": {false, true, true},
		"spawns_cancel": {false, true, true}, "approvals_cancel": {false, true, true}, "escalate": {false, false, false},
	}
	for _, tl := range list.Tools {
		if w, ok := want[tl.Name]; ok {
			a := tl.Annotations
			if got := [3]bool{a.ReadOnlyHint, a.IdempotentHint, *a.DestructiveHint}; got != w {
				t.Errorf("%s: readOnly, idempotent, destructive = %v, want %v", tl.Name, got, w)
			}
		}
	}
}

// wire is a client that speaks JSON-RPC by hand at a chosen protocol
// version, so that what the server writes is seen byte for byte.
type wire struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	id  int
}

func dial(t *testing.T, version string, capabilities string) *wire {
	t.Helper()
	st := sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "dont.db"))
	t.Cleanup(func() { st.Close() })
	srv := mcp.New("test", func(context.Context, *tools.Tool) (*service.Service, func(), error) {
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Author: "wire"}), func() {}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx, inR, outW) })
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); wg.Wait() })
	w := &wire{t: t, in: inW, out: bufio.NewReader(outR)}
	init := w.request("initialize", fmt.Sprintf(`{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"wire","version":"0"}}`, version, capabilities))
	if init["protocolVersion"] != version {
		t.Fatalf("negotiated %v, want %s", init["protocolVersion"], version)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

func (w *wire) request(method, params string) map[string]any {
	w.t.Helper()
	w.id++
	fmt.Fprintf(w.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", w.id, method, params)
	line, err := w.out.ReadString('\n')
	if err != nil {
		w.t.Fatal(err)
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.Error != nil {
		w.t.Fatalf("%s: %v %s", method, err, line)
	}
	return msg.Result
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A client that negotiated an older protocol version gets only the fields
// that version defines: no annotations before 2025-03-26, no outputSchema
// or structuredContent before 2025-06-18, and never the 2026 result
// fields (ttlMs, cacheScope, resultType).
func TestToolsListAtOlderVersionsCarriesOnlyStandardFields(t *testing.T) {
	for version, want := range map[string]struct{ tool, call []string }{
		"2024-11-05": {[]string{"description", "inputSchema", "name"}, []string{"content"}},
		"2025-03-26": {[]string{"annotations", "description", "inputSchema", "name"}, []string{"content"}},
		"2025-06-18": {[]string{"annotations", "description", "inputSchema", "name", "outputSchema", "title"}, []string{"content", "structuredContent"}},
		"2025-11-25": {[]string{"annotations", "description", "inputSchema", "name", "outputSchema", "title"}, []string{"content", "structuredContent"}},
	} {
		t.Run(version, func(t *testing.T) {
			w := dial(t, version, `{}`)
			list := w.request("tools/list", `{}`)
			if got := keys(list); !slices.Equal(got, []string{"tools"}) {
				t.Errorf("tools/list result fields %v, want [tools]", got)
			}
			for _, tl := range list["tools"].([]any) {
				if got := keys(tl.(map[string]any)); !slices.Equal(got, want.tool) {
					t.Fatalf("%v: fields %v, want %v", tl.(map[string]any)["name"], got, want.tool)
				}
			}
			res := w.request("tools/call", `{"name":"list","arguments":{}}`)
			if got := keys(res); !slices.Equal(got, want.call) {
				t.Fatalf("tools/call result fields %v, want %v", got, want.call)
			}
		})
	}
}
