package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/pb33f/libopenapi"
)

// A maintained Go OpenAPI library (libopenapi) builds the served
// document's model without an error, resolving every shared response and
// schema: each tool's operation, its typed success, its error answers
// (whose code is the enum of every code in internal/present's table) and
// the webhooks. It reports a dangling $ref, so the check bites.
func TestAGoOpenAPILibraryBuildsTheServedDocument(t *testing.T) {
	served := newAPI(t).do("GET", "/v1/openapi.json", "", nil).raw
	doc, err := libopenapi.NewDocument(served)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("libopenapi: %v", err)
	}
	m := model.Model
	if m.Version != "3.1.0" {
		t.Fatalf("version %q", m.Version)
	}
	for _, tool := range tools.All() {
		item, ok := m.Paths.PathItems.Get("/v1/tools/" + tool.Name)
		if !ok || item.Post == nil {
			t.Fatalf("no POST /v1/tools/%s", tool.Name)
		}
		ok200, _ := item.Post.Responses.Codes.Get("200")
		if ok200 == nil {
			t.Fatalf("%s has no 200", tool.Name)
		}
		media, _ := ok200.Content.Get("application/json")
		if s, err := media.Schema.BuildSchema(); err != nil || (s.Properties == nil && len(s.OneOf) == 0) {
			t.Fatalf("%s's 200 schema: %v", tool.Name, err)
		}
		notFound, _ := item.Post.Responses.Codes.Get("404")
		if notFound == nil {
			t.Fatalf("%s has no 404", tool.Name)
		}
		media, _ = notFound.Content.Get("application/json")
		envelope, err := media.Schema.BuildSchema()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := envelope.Properties.Get("data")
		dataSchema, err := data.BuildSchema()
		if err != nil {
			t.Fatal(err)
		}
		code, _ := dataSchema.Properties.Get("code")
		codeSchema, err := code.BuildSchema()
		if err != nil {
			t.Fatal(err)
		}
		if len(codeSchema.Enum) != len(present.Codes()) {
			t.Fatalf("%s's 404 data.code has %d values for %d codes", tool.Name, len(codeSchema.Enum), len(present.Codes()))
		}
	}
	if m.Webhooks == nil || m.Webhooks.Len() == 0 {
		t.Fatal("libopenapi sees no webhooks")
	}
	for event, item := range m.Webhooks.FromOldest() {
		if item.Post == nil || item.Post.RequestBody == nil {
			t.Fatalf("webhook %s has no request body", event)
		}
	}

	var broken map[string]any
	if err := json.Unmarshal(served, &broken); err != nil {
		t.Fatal(err)
	}
	broken["components"].(map[string]any)["responses"].(map[string]any)["NotFound"] = map[string]any{"$ref": "#/components/responses/NoSuchResponse"}
	raw, _ := json.Marshal(broken)
	bad, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.BuildV3Model(); err == nil || !strings.Contains(err.Error(), "NoSuchResponse") {
		t.Fatalf("libopenapi did not report a dangling $ref: %v", err)
	}
}
