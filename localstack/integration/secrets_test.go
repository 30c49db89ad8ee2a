package integration_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// Project secrets are sealed by KMS in the table, and an operator's
// rotation through the operator function changes the secret new callback
// tokens are made under while the tokens already issued keep resolving
// their spawns through the api function.
func TestProjectSecretsAreSealedAndRotateThroughTheOperatorFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	out, err := s.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "P#" + p.name + "#M"},
			dynamo.SortKey: &types.AttributeValueMemberS{Value: "secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := p.store.ProjectSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := out.Item["k1_sealed"].(*types.AttributeValueMemberBOOL)
	stored, _ := out.Item["k1"].(*types.AttributeValueMemberB)
	if sealed == nil || !sealed.Value || stored == nil || bytes.Contains(stored.Value, secret) {
		t.Fatalf("the project's secret is not sealed in the table: %v", out.Item)
	}

	first := p.assume(s.api, p.verifiedClaim(s.api))
	if got := auth.CallbackKeyID(first.Callback.Token); got != "1" {
		t.Fatalf("the first spawn's token names version %q, want 1", got)
	}
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"rotate_secret": map[string]any{"project": p.name}}}
	if err := s.operator.invoke(ctx, op, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	if env["ok"] != true || data["key_id"] != "2" || data["previous_key_id"] != "1" {
		t.Fatalf("rotate_secret: %v", env)
	}
	// The token issued before the rotation still resolves its spawn.
	e := p.ok(s.api, "dismiss", map[string]any{"id": first.EntityID, "evidence": []string{"https://example.org/its-90"},
		"request_id": first.RequestID}, first.Callback.Token)
	if !strings.Contains(e.Raw, "callback-applied") && e.Body["ok"] != true {
		t.Fatalf("the pre-rotation token: %s", e.Raw)
	}
	// A function instance that has not served the project makes tokens
	// under the new version (warm ones within a minute).
	second := p.assume(s.apiShort, p.verifiedClaim(s.apiShort))
	if got := auth.CallbackKeyID(second.Callback.Token); got != "2" {
		t.Fatalf("a spawn after the rotation carries version %q, want 2", got)
	}
	if e := p.call(s.apiShort, "show", map[string]any{"id": second.EntityID}, second.Callback.Token); e.Status != 200 {
		t.Fatalf("the post-rotation token: %d %s", e.Status, e.Raw)
	}
}
