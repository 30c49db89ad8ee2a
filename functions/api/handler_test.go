package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"github.com/dont-cli/dont/internal/tools"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

type fn struct {
	t      *testing.T
	store  *sqlite.Store
	handle func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	logs   *bytes.Buffer
	token  string
}

func newFn(t *testing.T) *fn {
	st, err := sqlite.Create(context.Background(), filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, SpawnTimeout: time.Hour, Author: "api"})
	res, err := svc.Credentials.Create(context.Background(), "harness", "test")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	backend := httpapi.SingleProject{Project: httpapi.Project{Service: svc, Idempotency: st}}
	return &fn{t: t, store: st, handle: newHandler(backend, log), logs: logs, token: res.Secret}
}

// event is what API Gateway's HTTP API sends for one request (payload 2.0).
func event(method, path, token string, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json", "user-agent": "dont-test"}
	if token != "" {
		h["authorization"] = "Bearer " + token
	}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", RequestID: "JZ1pQj2tIAMEJ5Q=", DomainName: "abc123.execute-api.us-east-1.amazonaws.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
	}
}

func (f *fn) call(awsRequestID string, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, map[string]any) {
	f.t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: awsRequestID})
	resp, err := f.handle(ctx, ev)
	if err != nil {
		f.t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &env); err != nil {
		f.t.Fatalf("body is not an envelope: %q", resp.Body)
	}
	return resp, env
}

func TestAnHTTPAPIEventReachesTheSameHandlerAsDontServe(t *testing.T) {
	f := newFn(t)
	resp, env := f.call("7f0b2a4e-0c5c-4b8e-9d1a-5f8f6b1f0a01",
		event("POST", "/v1/tools/conclude", f.token, `{"args":{"statement":"water boils at 100 C at sea level"}}`, nil))
	if resp.StatusCode != 200 || env["ok"] != true || env["envelope_kind"] != "claim" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	meta := env["meta"].(map[string]any)
	if meta["request_id"] != "7f0b2a4e-0c5c-4b8e-9d1a-5f8f6b1f0a01" || resp.Headers["X-Request-Id"] != meta["request_id"] {
		t.Fatalf("request id: meta %v header %q; want the Lambda request id", meta["request_id"], resp.Headers["X-Request-Id"])
	}
	if resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("content type %q", resp.Headers["Content-Type"])
	}

	// A base64 body (API Gateway encodes binary media types) decodes the same.
	ev := event("POST", "/v1/tools/conclude", f.token, base64.StdEncoding.EncodeToString([]byte(`{"args":{"statement":"b"}}`)), nil)
	ev.IsBase64Encoded = true
	if resp, _ := f.call("r2", ev); resp.StatusCode != 200 {
		t.Fatalf("base64 body: %d %s", resp.StatusCode, resp.Body)
	}

	// The caller's own request id wins; one log line ties it to the invocation.
	resp, env = f.call("r3", event("GET", "/v1/health", "", "", map[string]string{"x-request-id": "req:caller-1"}))
	if resp.StatusCode != 200 || env["meta"].(map[string]any)["request_id"] != "req:caller-1" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
}

func TestErrorsAreEnvelopesAndLogsNeverCarryTheToken(t *testing.T) {
	f := newFn(t)
	for _, c := range []struct {
		ev     events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{event("POST", "/v1/tools/conclude", "", `{"args":{"statement":"s"}}`, nil), 401, "unauthenticated"},
		{event("POST", "/v1/tools/conclude", f.token+"x", `{"args":{"statement":"s"}}`, nil), 401, "unauthenticated"},
		{event("POST", "/v1/tools/conclude", f.token, `{"args":`, nil), 400, "bad-json"},
		{event("POST", "/v1/tools/conclude", f.token, `{"args":{}}`, map[string]string{"content-type": "text/plain"}), 415, "unsupported-media-type"},
		{event("GET", "/v1/nowhere", f.token, "", nil), 404, "route-not-found"},
		{event("POST", "/v1/tools/conclude", f.token, `{"args":{"statement":"`+strings.Repeat("a", 70<<10)+`"}}`, nil), 413, "body-too-large"},
	} {
		resp, env := f.call("r", c.ev)
		data, _ := env["data"].(map[string]any)
		if resp.StatusCode != c.status || data["code"] != c.code {
			t.Errorf("%s %s: %d %v, want %d %s", c.ev.RequestContext.HTTP.Method, c.ev.RawPath, resp.StatusCode, data["code"], c.status, c.code)
		}
		if rem, _ := data["remediation"].([]any); len(rem) == 0 {
			t.Errorf("%s: no remediation", c.ev.RawPath)
		}
	}
	_, secret, _ := strings.Cut(strings.TrimPrefix(f.token, "dont_"), "_")
	if strings.Contains(f.logs.String(), f.token) || strings.Contains(f.logs.String(), secret) {
		t.Fatal("a token reached the logs")
	}
	if !strings.Contains(f.logs.String(), `"request_id"`) {
		t.Fatalf("log lines carry no request id: %s", f.logs.String())
	}
}

// Through the Lambda too, "args": null is refused as invalid-argument
// with remediation and writes nothing.
func TestArgsNullIsRefusedThroughTheAPIFunction(t *testing.T) {
	f := newFn(t)
	for _, body := range []string{`{"args":null}`, `{"args":["x"]}`} {
		resp, env := f.call("r", event("POST", "/v1/tools/conclude", f.token, body, nil))
		data, _ := env["data"].(map[string]any)
		if rem, _ := data["remediation"].([]any); resp.StatusCode != 400 || data["code"] != "invalid-argument" || len(rem) == 0 {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, resp.Body)
		}
	}
	if resp, env := f.call("r", event("POST", "/v1/tools/list", f.token, `{}`, nil)); resp.StatusCode != 200 || env["data"].(map[string]any)["count"] != 0.0 {
		t.Fatalf("a refused conclude wrote a claim: %s", resp.Body)
	}
}

// Through the Lambda, the Bearer scheme is case-insensitive (RFC 7235).
func TestTheBearerSchemeIsCaseInsensitiveThroughTheAPIFunction(t *testing.T) {
	f := newFn(t)
	for _, scheme := range []string{"bearer ", "BEARER ", "Bearer  "} {
		resp, _ := f.call("r", event("POST", "/v1/tools/list", "", `{}`, map[string]string{"authorization": scheme + f.token}))
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", scheme, resp.StatusCode, resp.Body)
		}
	}
	if resp, _ := f.call("r", event("POST", "/v1/tools/list", "", `{}`, map[string]string{"authorization": "Basic " + f.token})); resp.StatusCode != 401 {
		t.Fatalf("Basic: %d %s", resp.StatusCode, resp.Body)
	}
}

// Behind the HTTP API the stage writes one access line per request, so
// the function's own per-request line is DEBUG: at the default INFO level
// a request costs one log line, not two. Without a stage (the function-URL
// variant) the function's line is the access line.
func TestBehindTheStageTheFunctionsPerRequestLineIsDebug(t *testing.T) {
	calls := func(f *fn) int { return strings.Count(f.logs.String(), `"msg":"call"`) }
	t.Run("function URL: one INFO line per request", func(t *testing.T) {
		f := newFn(t)
		f.call("r1", event("POST", "/v1/tools/list", f.token, `{}`, nil))
		if n := calls(f); n != 1 || !strings.Contains(f.logs.String(), `"level":"INFO"`) {
			t.Fatalf("%d call lines: %s", n, f.logs.String())
		}
	})
	t.Run("behind the stage: none at INFO", func(t *testing.T) {
		t.Setenv("DONT_ACCESS_LOG", "stage")
		f := newFn(t)
		f.call("r1", event("POST", "/v1/tools/list", f.token, `{}`, nil))
		f.call("r2", event("POST", "/v1/tools/list", "", `{}`, nil)) // 401: a client error is the stage's line too
		if n := calls(f); n != 0 {
			t.Fatalf("%d call lines at INFO: %s", n, f.logs.String())
		}
	})
	t.Run("behind the stage at DEBUG: the line is back, as DEBUG", func(t *testing.T) {
		t.Setenv("DONT_ACCESS_LOG", "stage")
		f := newFn(t)
		debug := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		f.handle = newHandler(httpapi.SingleProject{Project: httpapi.Project{Service: service.New(service.Deps{ToolNames: tools.Names(), Store: f.store, Confirmations: f.store, Tokens: f.store, SpawnTimeout: time.Hour, Author: "api"}), Idempotency: f.store}}, debug)
		f.call("r1", event("POST", "/v1/tools/list", f.token, `{}`, nil))
		if n := calls(f); n != 1 || !strings.Contains(f.logs.String(), `"level":"DEBUG"`) {
			t.Fatalf("%d call lines: %s", n, f.logs.String())
		}
	})
}
