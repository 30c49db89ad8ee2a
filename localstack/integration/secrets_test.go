package integration_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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

// operate invokes the operator function with one action and returns its
// envelope.
func (p *project) operate(t *testing.T, action string, args map[string]any) map[string]any {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["project"] = p.name
	var env map[string]any
	if err := p.s.operator.invoke(ctx, map[string]any{"dont_operator": map[string]any{action: args}}, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// Old secret versions are retired through the operator function only once
// no token of theirs can belong to a live spawn (the project's
// spawn_max_lease, at least a minute, after the rotation that replaced
// them); before that the action is refused and nothing is removed. Once
// retired, a callback token of that version is refused by the api
// function and writes nothing.
func TestARetiredSecretVersionsTokenIsRefusedThroughTheAPIFunction(t *testing.T) {
	s := setup(t)
	p := s.newProject(t)
	first := p.assume(s.api, p.verifiedClaim(s.api))
	p.ok(s.api, "dismiss", map[string]any{"id": first.EntityID, "evidence": []string{"https://example.org/its-90"},
		"request_id": first.RequestID}, first.Callback.Token)
	if env := p.operate(t, "rotate_secret", nil); env["ok"] != true {
		t.Fatalf("rotate_secret: %v", env)
	}
	versions := func() int {
		vs, err := p.store.SecretVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}

	// Within the lease (the deployment's 7 days): refused, nothing removed.
	env := p.operate(t, "retire_secrets", nil)
	data, _ := env["data"].(map[string]any)
	if env["ok"] != false || data["code"] != "conflict" || len(data["remediation"].([]any)) == 0 || versions() != 2 {
		t.Fatalf("retire_secrets within the lease: %v (%d versions kept)", env, versions())
	}
	// A project whose lease is a second waits the minute a warm instance
	// keeps its current version.
	if env := p.operate(t, "set_project", map[string]any{"spawn_timeout": "24h", "spawn_max_lease": "1s"}); env["ok"] != true {
		t.Fatalf("set_project: %v", env)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		env = p.operate(t, "retire_secrets", nil)
		if env["ok"] == true {
			break
		}
		data, _ = env["data"].(map[string]any)
		var at time.Time
		err := fmt.Errorf("no retirable_at clause in %v", data["unmet_clauses"])
		clauses, _ := data["unmet_clauses"].([]any)
		for _, c := range clauses {
			if when, ok := strings.CutPrefix(fmt.Sprint(c), "retirable_at "); ok {
				at, err = time.Parse(time.RFC3339, when)
			}
		}
		if data["code"] != "conflict" || err != nil || versions() != 2 || time.Now().After(deadline) {
			t.Fatalf("retire_secrets: %v (%d versions kept)", env, versions())
		}
		time.Sleep(time.Until(at) + time.Second) // the lease is real time; the refusal says when it is out
	}
	data, _ = env["data"].(map[string]any)
	if retired, _ := data["retired_key_ids"].([]any); len(retired) != 1 || retired[0] != "1" || data["key_id"] != "2" || versions() != 1 {
		t.Fatalf("retire_secrets once the lease is out: %v (%d versions kept)", env, versions())
	}

	items := s.countItems(t)
	for _, fn := range []*function{s.api, s.apiShort} {
		e := p.call(fn, "show", map[string]any{"id": first.EntityID}, first.Callback.Token)
		if e.Status != http.StatusUnauthorized || e.code() != "unauthenticated" {
			t.Fatalf("%s: a token of the retired version: %d %s", fn.name, e.Status, e.Raw)
		}
	}
	if n := s.countItems(t); n != items {
		t.Fatalf("the refused token changed the table: %d items, was %d", n, items)
	}
	if env := p.operate(t, "set_project", map[string]any{"spawn_timeout": "24h"}); env["ok"] != true {
		t.Fatalf("set_project: %v", env)
	}
	second := p.assume(s.api, p.verifiedClaim(s.api))
	if got := auth.CallbackKeyID(second.Callback.Token); got != "2" {
		t.Fatalf("a spawn after retiring carries version %q, want 2", got)
	}
	if e := p.call(s.api, "show", map[string]any{"id": second.EntityID}, second.Callback.Token); e.Status != 200 {
		t.Fatalf("the current version's token: %d %s", e.Status, e.Raw)
	}
}
