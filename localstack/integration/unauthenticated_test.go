package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/ids"
)

// An unauthenticated request writes nothing, through the real API
// function: forged callback tokens (for a made-up project and for a real
// one) and a wrong bearer token leave the table as it was. The suite runs
// its tests one at a time, so the table's item count is this test's.
func TestForgedTokensThroughTheAPIFunctionWriteNothing(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	// The operator's create_token made the project's callback secret.
	if _, err := p.store.ProjectSecret(ctx); err != nil {
		t.Fatalf("the project %s has no callback secret after create_token: %v", p.name, err)
	}
	unknown := make([]byte, 6)
	rand.Read(unknown)
	forged := func(project string) string {
		secret := make([]byte, 32)
		rand.Read(secret)
		return auth.CallbackTokenOf(secret, project, ids.New(ids.Spawn, time.Now()))
	}
	before := s.countItems(t)
	for name, tok := range map[string]string{
		"a forged callback token for an unknown project": forged("it-unknown-" + hex.EncodeToString(unknown)),
		"a forged callback token for a real project":     forged(p.name),
		"a wrong bearer token":                           p.token + "x",
	} {
		body := []byte(`{"args":{"id":"` + ids.New(ids.Claim, time.Now()) + `"}}`)
		e := s.request(t, s.api, http.MethodPost, "/v1/tools/show", tok, body, nil)
		if e.Status != http.StatusUnauthorized || e.code() != "unauthenticated" {
			t.Errorf("%s: %d %s, want 401 unauthenticated", name, e.Status, e.Raw)
		}
	}
	if after := s.countItems(t); after != before {
		t.Fatalf("the table had %d items before the forged requests and %d after", before, after)
	}
	// The project still works: its spawns carry callback tokens.
	id := p.ok(s.api, "conclude", map[string]any{"statement": "s"}).str("id")
	if req := p.assume(s.api, id); req.Callback.Token == "" {
		t.Fatalf("no callback token: %+v", req)
	}
}

// countItems counts the table's items (Scan: the suite may, the functions may not).
func (s *suite) countItems(t *testing.T) int {
	t.Helper()
	n := 0
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), ProjectionExpression: aws.String("pk")}
	for {
		out, err := s.ddb.Scan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
