package deployment_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/idempotency"
)

// post sends a raw call body with an Idempotency-Key.
func (a *api) post(token, tool, body, key string) (status int, raw []byte, replayed bool) {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/tools/"+tool, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Dont-CLI-Caps", "cli-confirm-v1,cli-yes-only-v1") // as the CLI sends
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header.Get("Idempotent-Replayed") == "true"
}

// tableHolds says whether any item of the table, any attribute, holds s
// (compressed attributes read as their bytes after gunzip, as a reader of
// the table, or of a backup of it, would).
func tableHolds(t *testing.T, s string) bool {
	t.Helper()
	var start map[string]types.AttributeValue
	for {
		out, err := newClient(nil, nil).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			for _, v := range it {
				var b []byte
				switch v := v.(type) {
				case *types.AttributeValueMemberS:
					b = []byte(v.Value)
				case *types.AttributeValueMemberB:
					b = v.Value
					if z, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
						if u, err := io.ReadAll(z); err == nil {
							b = append(b, u...)
						}
					}
				}
				if bytes.Contains(b, []byte(s)) {
					return true
				}
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return false
		}
	}
}

// On AWS as under `dont serve`: the response that created a token is
// remembered under its Idempotency-Key without the token, and its replay
// says so.
func TestATokenCreatedOverHTTPIsNotStoredInPlaintext(t *testing.T) {
	a := newAPI(t)
	admin := a.token("secrets-"+randomName(), auth.RoleAdmin)
	body := `{"args":{"role":"harness"},"cli_confirmed":true}`
	status, raw, _ := a.post(admin, "tokens.create", body, "tc-1")
	var first struct {
		Data struct{ ID, Token string } `json:"data"`
	}
	if err := json.Unmarshal(raw, &first); err != nil || status != 200 || len(first.Data.Token) < 20 {
		t.Fatalf("tokens.create: %d %s", status, raw)
	}
	secret := first.Data.Token
	if tableHolds(t, secret) || tableHolds(t, secret[len(secret)-16:]) {
		t.Fatal("the created token lies in plaintext in the table")
	}
	status, again, replayed := a.post(admin, "tokens.create", body, "tc-1")
	var env struct {
		OK       bool                       `json:"ok"`
		Data     struct{ ID, Token string } `json:"data"`
		Warnings []struct{ Code string }    `json:"warnings"`
	}
	if err := json.Unmarshal(again, &env); err != nil || status != 200 || !replayed || !env.OK {
		t.Fatalf("replay: %d %v %s", status, replayed, again)
	}
	if bytes.Contains(again, []byte(secret)) || env.Data.Token != idempotency.Redacted || env.Data.ID != first.Data.ID ||
		len(env.Warnings) != 1 || env.Warnings[0].Code != string(idempotency.SecretNotReplayed) {
		t.Fatalf("the replay is not the first response redacted: %s", again)
	}
}
