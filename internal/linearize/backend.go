package linearize

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/gobuild"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

// Backend is one way of reaching the service. Every backend answers with
// the same envelope, so one parser reads them all.
type Backend interface {
	Name() string
	// Call runs a tool as client number client.
	Call(ctx context.Context, client int, tool string, args map[string]any) (envelope.Envelope, error)
	// Expire is the queue-driven timeout; ok is false where the backend has none.
	Expire(ctx context.Context, client int, requestID string) (r service.TimeoutResult, left time.Duration, ok bool, err error)
	// ExpireApproval is the queue-driven timeout of a question; ok is false
	// where the backend has none (or keeps no approvals).
	ExpireApproval(ctx context.Context, client int, id string) (verdict approvals.Verdict, left time.Duration, ok bool, err error)
	// Approvals reports whether the backend keeps sessions and approvals.
	Approvals() bool
	Clock() Clock
	Timeout() time.Duration
	// Service reaches the store directly, for the closing invariant check.
	Service() *service.Service
	Close()
}

// Clock is the time the service sees: a controlled clock moves only when
// told to; the wall clock moves by sleeping.
type Clock interface {
	Now() int64
	Advance(d time.Duration)
	Tolerance() int64
}

// ManualClock is a controlled clock shared by every client's service.
type ManualClock struct{ ns atomic.Int64 }

// NewManualClock starts at a fixed instant.
func NewManualClock() *ManualClock {
	c := &ManualClock{}
	c.ns.Store(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// Now implements Clock.
func (c *ManualClock) Now() int64 { return c.ns.Load() }

// Time is Now as a time.Time, for service.Service.Now.
func (c *ManualClock) Time() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance implements Clock.
func (c *ManualClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// IndexLagging is a Backend whose index of due questions may lag its
// writes by up to IndexLag of real time: DynamoDB's global indexes are
// eventually consistent, and the strict stand-in makes them lag. Until
// then a sweep may not see a question just asked; it is a backstop, since
// every answer and expiry reads the question's deadline itself.
type IndexLagging interface {
	IndexLag() time.Duration
}

func indexLag(b Backend) time.Duration {
	if l, ok := b.(IndexLagging); ok {
		return l.IndexLag()
	}
	return 0
}

// Logging is a Backend whose services log what they survived (a failed
// store call a sweep or an announce logged and went on from): Run reads
// it back after a history the model rejects, so that the failure names
// its cause.
type Logging interface {
	// TakeLog returns what was logged since the last call, and forgets it.
	TakeLog() string
}

// runLog is the services' log of one backend: warnings and worse, as text.
type runLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *runLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *runLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TakeLog implements Logging.
func (l *runLog) TakeLog() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.buf.String()
	l.buf.Reset()
	return s
}

// epoch is what wallNow counts from: the monotonic clock.
var epoch = time.Now()

func wallNow() int64 { return int64(time.Since(epoch)) }

// Tolerance implements Clock: readings are exact.
func (c *ManualClock) Tolerance() int64 { return 0 }

// WallClock is real time; Advance sleeps.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() int64 { return time.Now().UnixNano() }

// Advance implements Clock.
func (WallClock) Advance(d time.Duration) { time.Sleep(d) }

// Tolerance implements Clock: another process reads the same clock.
func (WallClock) Tolerance() int64 { return int64(2 * time.Millisecond) }

// ---- SQLite in-process: one store (one connection pool) per client ----

type inProcess struct {
	clock    *ManualClock
	timeout  time.Duration
	services []*service.Service
	stores   []*sqlite.Store
}

// NewSQLite opens clients independent connections to one SQLite file in
// dir, as that many processes would, all on one controlled clock.
func NewSQLite(dir string, clients int, timeout time.Duration) (Backend, error) {
	return NewSQLiteWrapped(dir, clients, timeout, nil)
}

// NewSQLiteWrapped is NewSQLite with every client's store passed through
// wrap (fault injection, deliberately broken stores).
func NewSQLiteWrapped(dir string, clients int, timeout time.Duration, wrap func(store.Store) store.Store) (Backend, error) {
	path := filepath.Join(dir, "dont.db")
	first, err := sqlite.Create(context.Background(), path)
	if err != nil {
		return nil, err
	}
	b := &inProcess{clock: NewManualClock(), timeout: timeout, stores: []*sqlite.Store{first}}
	for i := 1; i < clients; i++ {
		st, err := sqlite.Open(path)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.stores = append(b.stores, st)
	}
	for _, st := range b.stores {
		var store store.Store = st
		if wrap != nil {
			store = wrap(st)
		}
		b.services = append(b.services, service.New(service.Deps{ToolNames: tools.Names(), Store: store, Confirmations: st, Tokens: st, Clock: b.clock.Time, SpawnTimeout: timeout, Author: "linearize",
			Approvals: service.Approvals{Store: st, Timeout: timeout, Lease: time.Hour}}))
	}
	return b, nil
}

func (b *inProcess) Name() string { return "sqlite" }

func (b *inProcess) Call(ctx context.Context, client int, tool string, args map[string]any) (envelope.Envelope, error) {
	res, err := tools.Call(ctx, b.services[client%len(b.services)], tool, args)
	if err != nil {
		return envelope.Fail(err, res.Warnings), nil
	}
	return envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
}

func (b *inProcess) Expire(ctx context.Context, client int, requestID string) (service.TimeoutResult, time.Duration, bool, error) {
	r, left, err := b.services[client%len(b.services)].ExpireSpawn(ctx, requestID)
	return r, left, true, err
}

func (b *inProcess) ExpireApproval(ctx context.Context, client int, id string) (approvals.Verdict, time.Duration, bool, error) {
	v, left, err := b.services[client%len(b.services)].ExpireApproval(ctx, id)
	return v.Verdict, left, true, err
}

func (b *inProcess) Approvals() bool { return true }

func (b *inProcess) Clock() Clock              { return b.clock }
func (b *inProcess) Timeout() time.Duration    { return b.timeout }
func (b *inProcess) Service() *service.Service { return b.services[0] }
func (b *inProcess) Close() {
	for _, st := range b.stores {
		st.Close()
	}
}

// ---- HTTP: the API handler on httptest, one service, controlled clock ----

type httpBackend struct {
	name    string
	url     string
	tokens  map[string]string // role -> bearer
	client  *http.Client
	clock   Clock
	timeout time.Duration
	svc     *service.Service
	closers []func()
	// serve: the server process and its environment (crash.go restarts it).
	srv      *exec.Cmd
	serveEnv []string
	bin      string
}

// NewHTTP serves the API handler over a loopback httptest server on a
// SQLite file in dir, with a controlled clock.
func NewHTTP(dir string, timeout time.Duration) (Backend, error) {
	st, err := sqlite.Create(context.Background(), filepath.Join(dir, "dont.db"))
	if err != nil {
		return nil, err
	}
	clock := NewManualClock()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Clock: clock.Time, SpawnTimeout: timeout, Author: "api",
		Approvals: service.Approvals{Store: st, Timeout: timeout, Lease: time.Hour}})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Backend:       httpapi.SingleProject{Project: httpapi.Project{Service: svc, Idempotency: st}},
		RatePerSecond: -1,
	}))
	tokens := map[string]string{}
	for _, role := range []string{"harness", "approver"} {
		tok, err := svc.Credentials.Create(context.Background(), role, "linearize")
		if err != nil {
			srv.Close()
			st.Close()
			return nil, err
		}
		tokens[role] = tok.Secret
	}
	return &httpBackend{name: "http", url: srv.URL, tokens: tokens, client: srv.Client(),
		clock: clock, timeout: timeout, svc: svc, closers: []func(){srv.Close, func() { st.Close() }}}, nil
}

// serveBinary is the dont binary, built as README.md builds it, once
// (internal/gobuild keeps it in Go's build cache, where cli/dont's test of
// the shipped binary finds the same build): a proof run opens a fresh
// `dont serve` per batch of histories.
var serveBinary = sync.OnceValues(func() (string, error) {
	return gobuild.Executable(".", []string{"CGO_ENABLED=0"}, "github.com/dont-cli/dont/cli/dont")
})

// NewServe builds the dont binary, starts `dont serve` on a fresh project
// in dir and drives it over loopback HTTP on the wall clock.
func NewServe(dir string, timeout time.Duration) (Backend, error) {
	bin, err := serveBinary()
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "DONT_PROJECT_DIR="+dir, "DONT_SPAWN_TIMEOUT="+timeout.String(), "DONT_HARNESS=1",
		"DONT_APPROVAL_TIMEOUT="+timeout.String(), "DONT_SUBSCRIBER_LEASE=1h")
	// The project's owner sets it up (a harness may not mint tokens);
	// the server then runs as the harnesses' endpoint. No person is here
	// to type the approver passphrase the CLI asks for before it mints a
	// token, so the harness writes the tokens into the store it owns, as
	// whoever can write .dont/ can (docs/security.md).
	owner := append(append([]string{}, env...), "DONT_HARNESS=", "DONT_REQUEST_ID=")
	run := func(args ...string) (map[string]any, error) {
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, owner
		out, err := c.Output()
		if err != nil {
			return nil, fmt.Errorf("dont %v: %v %s", args, err, out)
		}
		var e struct{ Data map[string]any }
		return e.Data, json.Unmarshal(out, &e)
	}
	if _, err := run("init", "--no-passphrase"); err != nil {
		return nil, err
	}
	tokens, err := MintTokens(filepath.Join(dir, ".dont", "dont.db"), "harness", "approver")
	if err != nil {
		return nil, err
	}
	srv, listening, err := startServer(bin, dir, env, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(filepath.Join(dir, ".dont", "dont.db"))
	if err != nil {
		return nil, err
	}
	stop := func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}
	return &httpBackend{name: "serve", url: listening, tokens: tokens, srv: srv, serveEnv: env, bin: bin,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		clock:  WallClock{}, timeout: timeout,
		// The checking service ends due questions itself: after a kill the
		// restarted server has no timers for the questions it asked before,
		// and its ticker may not have run when a batch ends (a question due
		// 10 ms before the check was once reported as overdue).
		svc: service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, SpawnTimeout: timeout, Author: "linearize",
			Approvals: service.Approvals{Store: st, Timeout: timeout, Lease: time.Hour}}),
		closers: []func(){stop, func() { st.Close() }}}, nil
}

func (b *httpBackend) Name() string { return b.name }

func (b *httpBackend) Call(ctx context.Context, _ int, tool string, args map[string]any) (envelope.Envelope, error) {
	// As the CLI does after its own [y/N] (or --yes): a gated call runs at once.
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args, "cli_confirmed": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/v1/tools/"+tool, bytes.NewReader(body))
	if err != nil {
		return envelope.Envelope{}, err
	}
	req.Header.Set(confirm.CapsHeader, confirm.CapConfirm+","+confirm.CapYesOnly)
	role := "harness"
	switch tool {
	case "approvals.approve", "approvals.refuse", "approvals.frames":
		role = "approver" // only an approver reading the frames keeps a session watched
	}
	req.Header.Set("Authorization", "Bearer "+b.tokens[role])
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return envelope.Envelope{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return envelope.Envelope{}, err
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return env, fmt.Errorf("HTTP %d: not an envelope: %q", resp.StatusCode, raw)
	}
	return env, nil
}

func (b *httpBackend) Expire(context.Context, int, string) (service.TimeoutResult, time.Duration, bool, error) {
	return service.TimeoutResult{}, 0, false, nil
}

func (b *httpBackend) ExpireApproval(context.Context, int, string) (approvals.Verdict, time.Duration, bool, error) {
	return "", 0, false, nil
}

func (b *httpBackend) Approvals() bool { return true }

func (b *httpBackend) Clock() Clock              { return b.clock }
func (b *httpBackend) Timeout() time.Duration    { return b.timeout }
func (b *httpBackend) Service() *service.Service { return b.svc }
func (b *httpBackend) Close() {
	for _, c := range b.closers {
		c()
	}
}

// MintTokens writes a bearer token of each role into the SQLite store at
// db and returns their secrets by role: what a test or benchmark harness
// that owns the project does instead of dont tokens create, which asks
// for the person's approver passphrase at a terminal.
func MintTokens(db string, roles ...string) (map[string]string, error) {
	st, err := sqlite.Open(db)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Tokens: st, Author: "harness"})
	tokens := map[string]string{}
	for _, role := range roles {
		v, err := svc.Credentials.Create(context.Background(), role, "")
		if err != nil {
			return nil, err
		}
		tokens[role] = v.Secret
	}
	return tokens, nil
}
