package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// Anyone allowed to invoke the public api function (lambda:InvokeFunction,
// or a confused deputy holding it) must not be able to mint a project's
// admin token: the operator event is the operator function's alone.
func TestMintingAnAdminTokenThroughThePublicAPIFunctionIsRefused(t *testing.T) {
	f := newFn(t)
	invoke := newFunction(f.handle)
	before, err := f.store.ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{
		`{"dont_operator":{"create_token":{"project":"victim","role":"admin","name":"mine"}}}`,
		`{"dont_operator":{"set_project":{"project":"victim","spawn_timeout":"1h"}}}`,
		`{"dont_operator":{"reindex":{"project":"victim"}}}`,
		`{"dont_operator":null,"version":"2.0"}`,
	} {
		out, err := invoke(context.Background(), json.RawMessage(payload))
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := out.(json.RawMessage)
		if !ok {
			t.Fatalf("%s: answered %T, want a refusal envelope", payload, out)
		}
		var env struct {
			OK   bool `json:"ok"`
			Data struct {
				Code        string `json:"code"`
				Remediation []any  `json:"remediation"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || env.OK || env.Data.Code != "forbidden" || len(env.Data.Remediation) == 0 {
			t.Fatalf("%s: %s, want ok:false, code forbidden, remediation", payload, raw)
		}
	}
	after, err := f.store.ListTokens(context.Background())
	if err != nil || len(after) != len(before) {
		t.Fatalf("tokens %d before, %d after (%v)", len(before), len(after), err)
	}
	// An HTTP API event still reaches the API.
	ev, _ := json.Marshal(event("POST", "/v1/tools/list", f.token, `{"args":{}}`, nil))
	out, err := invoke(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok := out.(events.APIGatewayV2HTTPResponse); !ok || resp.StatusCode != 200 {
		t.Fatalf("an HTTP API event: %#v", out)
	}
}
