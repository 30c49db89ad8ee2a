package httpapi_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
)

// "args" must be an object, as the document says: null, a list or a
// string is refused with invalid-argument and remediation, and nothing is
// written.
func TestArgsThatAreNotAnObjectAreRefusedAndWriteNothing(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	before := a.eventCount()
	for _, body := range []string{`{"args":null}`, `{"args":[]}`, `{"args":"statement"}`, `{"args":1}`, `{"args":null,"cli_confirmed":true}`} {
		r := a.raw(h, "conclude", body)
		if r.status != 400 || r.code() != "invalid-argument" || len(r.data()["remediation"].([]any)) == 0 {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
	// An absent args and an empty body still mean no arguments.
	if r := a.raw(h, "list", `{}`); r.status != 200 {
		t.Fatalf("{}: %d %s", r.status, r.raw)
	}
	if r := a.raw(h, "list", ``); r.status != 200 {
		t.Fatalf("empty body: %d %s", r.status, r.raw)
	}
	if after := a.eventCount(); after != before {
		t.Fatalf("%d events written by refused calls", after-before)
	}
}

// RFC 7235: the auth scheme is case-insensitive; "bearer" and "BEARER"
// present the same token as "Bearer". Other schemes present nothing.
func TestTheBearerSchemeIsCaseInsensitive(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER ", "bEaReR  "} {
		r := a.do("POST", "/v1/tools/list", "", []byte(`{}`), "Authorization", scheme+h)
		if r.status != 200 {
			t.Fatalf("%q: %d %s", scheme, r.status, r.raw)
		}
	}
	for _, header := range []string{"Basic " + h, h, "Bearer", "Bearerx " + h} {
		r := a.do("POST", "/v1/tools/list", "", []byte(`{}`), "Authorization", header)
		if r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%q: %d %s", header, r.status, r.raw)
		}
	}
}

// config-missing is permanent: a 4xx that clients and gateways do not
// retry, never 503.
func TestConfigMissingIsAPermanentClientError(t *testing.T) {
	err := errs.E(errs.ConfigMissing, "direct mode needs an LLM provider")
	if s := present.Status(err); s != 409 {
		t.Fatalf("config-missing answers %d, want 409", s)
	}
	if e := present.Explain(err); len(e.Remediation) == 0 {
		t.Fatal("config-missing has no remediation")
	}
}
