package integration_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// An upgraded project's claim stored without its entity_status key (as a
// version before the list indexes left it) is missing from `list
// --status` until the operator function's reindex; a rerun fixes nothing
// more, a bad cursor is refused with remediation, and the public api
// function refuses the action.
func TestTheOperatorFunctionsReindexListsAnUpgradedProjectsOldClaims(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	id := p.verifiedClaim(s.api)
	if _, err := s.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P#" + p.name + "#E"}, "sk": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression: aws.String("REMOVE #es"), ExpressionAttributeNames: map[string]string{"#es": "es"}}); err != nil {
		t.Fatal(err)
	}
	listed := func() int {
		return len(p.ok(s.api, "list", map[string]any{"status": "verified"}).data()["entities"].([]any))
	}
	if n := listed(); n != 0 {
		t.Fatalf("before the reindex list --status verified = %d", n)
	}

	var refused map[string]any
	if err := s.api.invoke(ctx, map[string]any{"dont_operator": map[string]any{"reindex": map[string]any{"project": p.name}}}, &refused); err != nil {
		t.Fatal(err)
	}
	if d, _ := refused["data"].(map[string]any); refused["ok"] != false || d["code"] != "forbidden" {
		t.Fatalf("the api function answered reindex with %v", refused)
	}
	if env := p.operate(t, "reindex", map[string]any{"cursor": "not-a-cursor"}); env["ok"] != false || len(env["data"].(map[string]any)["remediation"].([]any)) == 0 {
		t.Fatalf("reindex with a bad cursor: %v", env)
	}
	env := p.operate(t, "reindex", nil)
	data, _ := env["data"].(map[string]any)
	if env["ok"] != true || data["done"] != true || data["statuses"] != 1.0 || data["fixed"] != 1.0 {
		t.Fatalf("reindex: %v", env)
	}
	if n := listed(); n != 1 {
		t.Fatalf("after the reindex list --status verified = %d, want 1", n)
	}
	if env := p.operate(t, "reindex", nil); env["ok"] != true || env["data"].(map[string]any)["fixed"] != 0.0 {
		t.Fatalf("a second reindex: %v", env)
	}
}
