package deployment_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
)

// keyedRequest is one keyed call of a raw body as the CLI sends it (its
// confirmation capabilities).
func keyedRequest(url, token, tool, body, key string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, url+"/v1/tools/"+tool, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(confirm.CapsHeader, confirm.CLICaps)
	return req
}

// On DynamoDB too, a keyed call whose write is one record (a token, a
// held call) commits it with its key's response in one
// TransactWriteItems: a function that dies after the commit, before it
// answers or writes anything more, has remembered its answer, and the
// retry replays it rather than answering "in progress" (and, a minute
// later, "outcome unknown") or making a second record.
func TestAKeyedOneRecordCallWhoseFunctionDiesIsReplayedOverTheLambdaAPI(t *testing.T) {
	a := newAPI(t)
	p := "rec-dies-" + randomName()
	admin := a.token(p, auth.RoleAdmin)
	count := func(list, field string) int {
		items, _ := a.call(admin, list, nil).env.Data[field].([]any)
		return len(items)
	}
	for _, c := range []struct{ name, body, list, field string }{
		{"tokens.create", `{"args":{"role":"harness","name":"dies"},"cli_confirmed":true}`, "tokens.list", "tokens"},
		{"tokens.create held", `{"args":{"role":"harness","name":"held"}}`, "confirmations.list", "confirmations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool, _, _ := strings.Cut(c.name, " ")
			key := "dies-" + strings.ReplaceAll(c.name, " ", "-")
			before := count(c.list, c.field)
			dying := httpapi.New(httpapi.Options{Backend: dyingBackend{a.backend}, RatePerSecond: -1})
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the dying function answered")
					}
				}()
				dying.ServeHTTP(dyingWriter{httptest.NewRecorder()}, keyedRequest("", admin, tool, c.body, key))
			}()
			if count(c.list, c.field) != before+1 {
				t.Fatal("the dying call wrote no record")
			}
			rec := httptest.NewRecorder()
			httpapi.New(httpapi.Options{Backend: a.backend, RatePerSecond: -1}).ServeHTTP(rec, keyedRequest("", admin, tool, c.body, key))
			if rec.Code/100 != 2 || rec.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the retry was not replayed: %d %s", rec.Code, rec.Body.String())
			}
			if n := count(c.list, c.field); n != before+1 {
				t.Fatalf("%d records after the retry, want %d", n, before+1)
			}
		})
	}
}
