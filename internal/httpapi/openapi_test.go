package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/httpapi"
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
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	okSchema, err := c.Compile("openapi.json#/components/schemas/Envelope")
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
	paths := doc.(map[string]any)["paths"].(map[string]any)
	for _, tool := range tools.All() {
		if _, ok := paths["/v1/tools/"+tool.Name]; !ok {
			t.Errorf("tool %s has no path in the document", tool.Name)
		}
	}
	check := func(method, path string, r reply) {
		t.Helper()
		op, ok := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s is not in the document", method, path)
		}
		if _, ok := op["responses"].(map[string]any)[strconv.Itoa(r.status)]; !ok {
			t.Fatalf("%s %s answered %d, which the document does not list", method, path, r.status)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.raw))
		if err != nil {
			t.Fatal(err)
		}
		schema := okSchema
		if r.env["ok"] == false {
			schema = errSchema
		}
		if err := schema.Validate(inst); err != nil {
			t.Fatalf("%s %s response does not match the document: %v\n%s", method, path, err, r.raw)
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
		{"confirmations.confirm", a.tokens["approver"], map[string]any{"id": "conf:01HX05A9K8VP0000000000000A"}},
		{"guess", h, map[string]any{"question": "q?", "n": 2, "temperature": 0.7}},
		{"tokens.create", a.tokens["approver"], map[string]any{"role": "harness"}},
		{"tokens.list", a.tokens["admin"], nil},
		{"conclude", "", map[string]any{"statement": "x"}},
		{"dismiss", h, map[string]any{"id": id, "evidence": []string{"doi:10.1/x"}, "request_id": "spawn:01HX05A9K8VP0000000000000A"}},
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
	check("POST", "/v1/tools/confirmations.confirm", a.call(a.tokens["approver"], "confirmations.confirm", map[string]any{"id": held.str("confirmation_id")}))
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
