package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Real responses are validated against the served OpenAPI document, so
// the document cannot drift from the code.
func TestResponsesMatchTheOpenAPIDocument(t *testing.T) {
	a := newAPI(t)
	served := a.do("GET", "/v1/openapi.json", "", nil)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(served.raw))
	if err != nil {
		t.Fatal(err)
	}
	if doc.(map[string]any)["openapi"] != "3.1.0" {
		t.Fatalf("not OpenAPI 3.1: %v", doc.(map[string]any)["openapi"])
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // timestamps are date-time
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	// Any success, whatever its kind (the document names each kind's).
	anySuccess := tools.EnvelopeSchema(true, map[string]any{"type": "string", "not": map[string]any{"const": "error"}}, map[string]any{}, tools.WarningSchema(), tools.MetaSchema())
	if err := c.AddResource("envelope.json", anySuccess); err != nil {
		t.Fatal(err)
	}
	okSchema, err := c.Compile("envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	errSchema, err := c.Compile("openapi.json#/components/schemas/ErrorEnvelope")
	if err != nil {
		t.Fatal(err)
	}
	// The schemas bite: an error envelope with an empty remediation fails.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"envelope_version":"1","cli_version":"x","ok":false,"envelope_kind":"error",
		"data":{"code":"usage","message":"m","unmet_clauses":[],"remediation":[]},"hints":[],"warnings":[],"meta":{"duration_ms":0,"request_id":"r"}}`))
	if errSchema.Validate(bad) == nil {
		t.Fatal("ErrorEnvelope accepted an empty remediation")
	}
	// data.code is one of internal/present's codes, not any kebab-case word.
	unknown, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"envelope_version":"1","cli_version":"x","ok":false,"envelope_kind":"error",
		"data":{"code":"no-such-code","message":"m","unmet_clauses":[],"remediation":[{"command":"c","description":"d"}]},"hints":[],"warnings":[],"meta":{"duration_ms":0,"request_id":"r"}}`))
	if errSchema.Validate(unknown) == nil {
		t.Fatal("ErrorEnvelope accepted a code that is not in the table")
	}
	paths := doc.(map[string]any)["paths"].(map[string]any)
	for _, tool := range tools.All() {
		if _, ok := paths["/v1/tools/"+tool.Name]; !ok {
			t.Errorf("tool %s has no path in the document", tool.Name)
		}
	}
	// check validates a real answer against the schema its operation
	// declares for its status (typed per envelope kind), and its headers
	// against the declared ones.
	check := func(method, path string, r reply) {
		t.Helper()
		op, ok := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s is not in the document", method, path)
		}
		resp, ok := op["responses"].(map[string]any)[strconv.Itoa(r.status)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s answered %d, which the document does not list", method, path, r.status)
		}
		pointer := "openapi.json#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(path) + "/" + strings.ToLower(method) +
			"/responses/" + strconv.Itoa(r.status)
		// A shared response (components/responses) is read where it is.
		if shared, ok := resp["$ref"].(string); ok {
			name := strings.TrimPrefix(shared, "#/components/responses/")
			var found bool
			if resp, found = doc.(map[string]any)["components"].(map[string]any)["responses"].(map[string]any)[name].(map[string]any); !found {
				t.Fatalf("%s %s %d refers to %s, which the document does not have", method, path, r.status, shared)
			}
			pointer = "openapi.json" + shared
		}
		declared, _ := resp["headers"].(map[string]any)
		for _, name := range []string{"X-Request-Id", "Retry-After", "Idempotent-Replayed", "Allow", "WWW-Authenticate"} {
			if r.header.Get(name) != "" && declared[name] == nil {
				t.Fatalf("%s %s %d sends %s, which the document does not declare", method, path, r.status, name)
			}
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.raw))
		if err != nil {
			t.Fatal(err)
		}
		schema, err := c.Compile(pointer + "/content/application~1json/schema")
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Fatalf("%s %s response does not match the document: %v\n%s", method, path, err, r.raw)
		}
		generic := okSchema
		if r.env["ok"] == false {
			generic = errSchema
		}
		if err := generic.Validate(inst); err != nil {
			t.Fatalf("%s %s response is not an envelope: %v\n%s", method, path, err, r.raw)
		}
	}
	h := a.tokens["harness"]
	check("GET", "/v1/health", a.do("GET", "/v1/health", "", nil))
	check("GET", "/v1/tools", a.do("GET", "/v1/tools", "", nil))
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	calls := []struct {
		tool  string
		token string
		args  map[string]any
	}{
		{"conclude", h, map[string]any{"statement": "x", "confidence": 0.5}},
		{"assume", h, map[string]any{"id": id}},
		{"assume", h, map[string]any{"id": id}}, // spawn-pending
		{"show", h, map[string]any{"id": id, "history": true}},
		{"list", h, nil},
		{"spawns", h, map[string]any{"pending": true}},
		{"trust", h, map[string]any{"id": id, "reason": "maybe"}},
		{"trust", h, map[string]any{"id": id, "reason": 3}},
		{"lock", h, map[string]any{"id": id}}, // held: 202 pending_confirmation
		{"lock", h, map[string]any{"id": id, "skip_confirmation": true}},
		{"tokens.manage", a.tokens["admin"], nil},
		{"spawns.manage", h, map[string]any{"op": "list", "view": "pending"}},
		{"confirmations.list", h, map[string]any{"all": true}},
		{"confirmations.confirm", a.tokens["approver"], map[string]any{"id": "conf:01HX05A9K8VP0000000000000A", "shown_digest": "sha256:00"}},
		{"guess", h, map[string]any{"question": "q?", "n": 2, "temperature": 0.7}},
		{"tokens.create", a.tokens["approver"], map[string]any{"role": "harness"}},
		{"tokens.list", a.tokens["admin"], nil},
		{"conclude", "", map[string]any{"statement": "x"}},
		{"dismiss", h, map[string]any{"id": id, "evidence": []string{"doi:10.1/x"}, "request_id": "spawn:01HX05A9K8VP0000000000000A"}},
		{"define", h, map[string]any{"curie": "ex:boil", "doc": "to boil"}},
		{"sweep", h, nil},
		{"tokens.create", a.tokens["admin"], map[string]any{"role": "harness", "name": "t"}},
		{"tokens.manage", a.tokens["admin"], map[string]any{"op": "list"}},
		{"sessions.open", h, map[string]any{"tier": "read-only", "name": "s"}},
		{"approvals.list", h, nil},
		{"approvals.sweep", h, nil},
		{"approvals.audit", h, nil},
		{"confirmations.list", a.tokens["approver"], map[string]any{"all": true}},
	}
	for i, c := range calls {
		t.Run(fmt.Sprintf("%d_%s", i, c.tool), func(t *testing.T) {
			check("POST", "/v1/tools/"+c.tool, a.call(c.token, c.tool, c.args))
		})
	}
	// The body a confirming CLI sends, and its answer, are in the document too.
	check("POST", "/v1/tools/ignore", a.confirmed(h, "ignore", map[string]any{"id": id, "reason": "out of scope here"}))
	held := a.call(h, "spawns.cancel", map[string]any{"request_id": "spawn:01HX05A9K8VP0000000000000A"})
	check("POST", "/v1/tools/spawns.cancel", held)
	check("POST", "/v1/tools/confirmations.confirm", a.call(a.tokens["approver"], "confirmations.confirm", map[string]any{"id": held.str("confirmation_id"),
		"shown_digest": a.ok(a.tokens["approver"], "confirmations.show", map[string]any{"id": held.str("confirmation_id")}).str("shown_digest")}))
	bodySchema, err := c.Compile("openapi.json#/paths/~1v1~1tools~1lock/post/requestBody/content/application~1json/schema")
	if err != nil {
		t.Fatal(err)
	}
	for body, valid := range map[string]bool{
		`{"args":{"id":"claim:x"},"cli_confirmed":true}`:     true,
		`{"args":{"id":"claim:x","skip_confirmation":true}}`: true,
		`{"args":{"id":"claim:x"},"cli_confirmed":"yes"}`:    false,
		`{"args":{"id":"claim:x"},"confirmed":true}`:         false,
	} {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(body))
		if err := bodySchema.Validate(inst); (err == nil) != valid {
			t.Fatalf("request body %s: valid=%v, err %v", body, valid, err)
		}
	}
	// The typed schemas bite: a spawn request whose callback token is not
	// a string, or an entity with a field nobody declared, fails.
	assume, _ := c.Compile("openapi.json#/paths/~1v1~1tools~1assume/post/responses/200/content/application~1json/schema")
	fresh := a.ok(h, "conclude", map[string]any{"statement": "a claim to verify"}).str("id")
	sr := a.call(h, "assume", map[string]any{"id": fresh})
	check("POST", "/v1/tools/assume", sr)
	if tok, _ := sr.data()["callback"].(map[string]any)["token"].(string); !strings.HasPrefix(tok, "dontcb_") {
		t.Fatalf("spawn request without a callback token: %s", sr.raw)
	}
	for _, mutate := range []func(env map[string]any){
		func(env map[string]any) { env["data"].(map[string]any)["callback"].(map[string]any)["token"] = 1 },
		func(env map[string]any) { env["data"].(map[string]any)["surprise"] = true },
		func(env map[string]any) { env["envelope_kind"] = "claim" },
		func(env map[string]any) { env["data"].(map[string]any)["expires_at"] = "in an hour" },
	} {
		var env map[string]any
		json.Unmarshal(sr.raw, &env)
		mutate(env)
		b, _ := json.Marshal(env)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if assume.Validate(inst) == nil {
			t.Fatalf("the assume response schema accepted %s", b)
		}
	}
	sid := a.ok(h, "sessions.open", map[string]any{"tier": "read-only"}).str("session_id")
	check("POST", "/v1/tools/escalate", a.call(h, "escalate", map[string]any{"session": sid, "call": "c1", "to": "workspace-write", "reason": "needs to write", "no_wait": true}))
	check("POST", "/v1/tools/sessions.show", a.call(h, "sessions.show", map[string]any{"id": sid}))
	check("POST", "/v1/tools/approvals.frames", a.call(h, "approvals.frames", map[string]any{"session": sid}))
	check("POST", "/v1/tools/spawns.manage", a.call(h, "spawns.manage", map[string]any{"op": "show", "request_id": sr.str("request_id")}))
	check("POST", "/v1/tools/show", a.call(h, "show", map[string]any{"id": sr.str("request_id")}))
	check("POST", "/v1/tools/spawns.cancel", a.confirmed(h, "spawns.cancel", map[string]any{"request_id": sr.str("request_id"), "reason": "not needed"}))
	g := a.call(h, "guess", map[string]any{"question": "which?"})
	check("POST", "/v1/tools/guess", g)
	check("POST", "/v1/tools/answer", a.call(h, "answer", map[string]any{"request_id": g.str("request_id"), "candidate": []string{"a", "a", "b"}}))
	check("POST", "/v1/tools/answer", a.call(h, "answer", map[string]any{"request_id": g.str("request_id"), "candidate": []string{"a"}}))

	// Every status and header the server sends: an unknown tool, a wrong
	// method, a replay, the rate limit.
	// An unknown tool answers as every tool's 404 does (one shared response).
	check("POST", "/v1/tools/conclude", a.call(h, "no.such.tool", nil))
	if r := a.do("GET", "/v1/tools/conclude", h, nil); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Fatalf("GET on a tool: %d %v", r.status, r.header)
	} else {
		check("POST", "/v1/tools/conclude", r)
	}
	check("POST", "/v1/tools/conclude", a.call(h, "conclude", map[string]any{"statement": "once"}, "Idempotency-Key", "k-openapi"))
	replayed := a.call(h, "conclude", map[string]any{"statement": "once"}, "Idempotency-Key", "k-openapi")
	if replayed.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("no replay: %v", replayed.header)
	}
	check("POST", "/v1/tools/conclude", replayed)
	check("POST", "/v1/tools/conclude", a.call(h, "conclude", nil, "X-Request-Id", "req:caller-1"))
	limited := newAPI(t, func(o *httpapi.Options) { o.RatePerSecond, o.Burst = 1, 1 })
	var r429 reply
	for range 5 {
		if r429 = limited.call(limited.tokens["harness"], "list", nil); r429.status == 429 {
			break
		}
	}
	if r429.status != 429 {
		t.Fatal("no 429")
	}
	check("POST", "/v1/tools/list", r429)
	// Last: it revokes every token.
	check("POST", "/v1/tools/tokens.revoke-all", a.confirmed(a.tokens["admin"], "tokens.revoke-all", nil))
	body, _ := json.Marshal(httpapi.OpenAPI())
	if !bytes.Equal(bytes.TrimSpace(compact(t, served.raw)), body) {
		t.Fatal("the served document differs from OpenAPI()")
	}
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Every event a webhook subscription can hear, and hook.test, is one of
// the document's webhooks, and the json body internal/hooks sends for it
// matches the request body the document declares (with its
// Standard Webhooks headers); a body naming another event does not.
func TestEveryWebhookEventIsInTheDocument(t *testing.T) {
	var doc map[string]any
	raw, _ := json.Marshal(httpapi.OpenAPI())
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	resolved := at.Add(time.Minute)
	asked := approvals.Approval{ID: "apr:01HX05A9K8VP0000000000000A", SessionID: "ses:01HX05A9K8VP0000000000000A", CallID: "c1",
		From: approvals.ReadOnly, To: approvals.WorkspaceWrite, Preview: "make test", Reason: "run the tests", Requester: "harness",
		Asked: true, State: approvals.Pending, CreatedAt: at, Deadline: at.Add(2 * time.Minute)}
	ended := asked
	ended.State, ended.Verdict, ended.Cause, ended.AnsweredBy, ended.ResolvedAt = approvals.Resolved, approvals.Approved, approvals.CauseAnswer, "approver", &resolved
	spawnEvent := func(kind ledger.EventKind) ledger.Event {
		return ledger.Event{Kind: kind, RequestID: "spawn:01HX05A9K8VP0000000000000A", EntityID: "claim:01HX05A9K8VP0000000000000A", Author: "harness", At: at}
	}
	messages := map[hooks.EventType]func() (hooks.Message, bool){
		hooks.ApprovalAsked: func() (hooks.Message, bool) { return hooks.OfAsked(asked) },
		hooks.ApprovalEnded: func() (hooks.Message, bool) { return hooks.OfEnded(ended) },
		hooks.ApprovalReminder: func() (hooks.Message, bool) {
			reminded := asked
			reminded.RemindAt = approvals.ReminderAt(asked.CreatedAt, asked.Deadline, 0.5)
			return hooks.OfReminder(reminded, *reminded.RemindAt)
		},
		hooks.SpawnRequested: func() (hooks.Message, bool) { return hooks.OfEvent(spawnEvent(ledger.EvSpawnRequested)) },
		hooks.SpawnResolved:  func() (hooks.Message, bool) { return hooks.OfEvent(spawnEvent(ledger.EvSpawnResolved)) },
		hooks.SpawnTimeout:   func() (hooks.Message, bool) { return hooks.OfEvent(spawnEvent(ledger.EvSpawnTimeout)) },
		hooks.ConfirmationHeld: func() (hooks.Message, bool) {
			return hooks.OfHeld(confirm.Pending{ID: "conf:01HX05A9K8VP0000000000000A", Tool: "lock", State: confirm.StatePending,
				RequestedBy: "harness", RequestedAt: at, ExpiresAt: at.Add(time.Hour)})
		},
		hooks.Test: func() (hooks.Message, bool) { return hooks.TestMessage("hook:01HX05A9K8VP0000000000000A", at), true },
	}
	webhooks, _ := doc["webhooks"].(map[string]any)
	for _, event := range append(slices.Clone(hooks.EventTypes), hooks.Test) {
		item, _ := webhooks[string(event)].(map[string]any)
		op, ok := item["post"].(map[string]any)
		if !ok {
			t.Errorf("the webhook event %s is not in the document's webhooks", event)
			continue
		}
		var headers []string
		for _, p := range op["parameters"].([]any) {
			headers = append(headers, p.(map[string]any)["name"].(string))
		}
		if !slices.Equal(headers, []string{"webhook-id", "webhook-timestamp", "webhook-signature"}) {
			t.Errorf("%s declares the headers %v", event, headers)
		}
		message, ok := messages[event]
		if !ok {
			t.Errorf("no sample message of %s in this test", event)
			continue
		}
		m, ok := message()
		if !ok {
			t.Fatalf("internal/hooks announced no %s", event)
		}
		body, err := hooks.Body(hooks.FormatJSON, m, "")
		if err != nil {
			t.Fatal(err)
		}
		schema, err := c.Compile("openapi.json#/webhooks/" + string(event) + "/post/requestBody/content/application~1json/schema")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err := schema.Validate(got); err != nil {
			t.Errorf("the %s body does not match the document: %v\n%s", event, err, body)
		}
		other, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bytes.Replace(body, []byte(`"type":"`+string(event)+`"`), []byte(`"type":"approval.cancelled"`), 1)))
		if schema.Validate(other) == nil {
			t.Errorf("the %s body schema accepts another event's type", event)
		}
	}
	if len(webhooks) != len(hooks.EventTypes)+1 {
		t.Errorf("the document has %d webhooks for %d events and hook.test", len(webhooks), len(hooks.EventTypes))
	}
}
