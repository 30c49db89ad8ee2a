package deployment_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/auth"
)

// A callback names its spawn (the token) and its entity (the call), and
// the entity's item keeps a copy of the spawn pending on it: the keyed
// callback reads that one item — for its Idempotency-Key's record, for
// the token's powers and for its resolution — and not the spawn's
// (docs/aws-cost.md). An entity item without the copy (written before it
// was kept) is answered from the spawn's item, as before.
func TestACallbackOnItsOwnEntityReadsOnlyThatEntitysItem(t *testing.T) {
	a := newAPI(t)
	project := "onread-" + randomName()
	h := a.token(project, auth.RoleHarness)
	for _, c := range []struct {
		name     string
		dropCopy bool
		getItems int64
	}{
		{"the entity keeps the spawn", false, 1},
		{"an entity item from before the copy", true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, rid, token := a.claimUnderReview(h, "a callback reads its entity: "+c.name)
			if c.dropCopy {
				dropPendingCopy(t, project, id)
			}
			args := map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}
			a.counter.Reset()
			first := a.call(token, "dismiss", args, "Idempotency-Key", "one-read")
			if first.status != 200 || first.replayed || first.env.Data["resolution"].(map[string]any)["applied"] != true {
				t.Fatalf("the callback: %d %s", first.status, first.raw)
			}
			if got := a.counter.Usage()["GetItem"].Requests; got != c.getItems {
				t.Fatalf("the callback read %d items, want %d", got, c.getItems)
			}
			again := a.call(token, "dismiss", args, "Idempotency-Key", "one-read")
			if !again.replayed || !bytes.Equal(again.raw, first.raw) {
				t.Fatalf("the retry is not the first answer replayed:\n%s\n%s", first.raw, again.raw)
			}
		})
	}
}

// The entity a callback names is the agent's word: a callback token
// naming another entity of its project, whose item names another pending
// spawn, is refused as before, and leaves its own spawn pending and its
// own key's answer to come.
func TestACallbackTokenNamingAnotherEntityIsRefusedOverTheLambdaAPI(t *testing.T) {
	a := newAPI(t)
	h := a.token("otherentity-"+randomName(), auth.RoleHarness)
	id, rid, token := a.claimUnderReview(h, "the callback token's own claim")
	other, otherRID, _ := a.claimUnderReview(h, "another claim under review")
	for _, args := range []map[string]any{
		{"id": other, "evidence": []string{"https://example.org/e"}, "request_id": rid},
		{"id": other, "evidence": []string{"https://example.org/e"}, "request_id": otherRID},
	} {
		got := a.call(token, "dismiss", args, "Idempotency-Key", "k")
		if got.status != 403 {
			t.Fatalf("a callback on another entity: %d %s", got.status, got.raw)
		}
	}
	for _, c := range []struct{ id, rid string }{{id, rid}, {other, otherRID}} {
		if s := a.call(h, "show", map[string]any{"id": c.id}); s.status != 200 || s.env.Data["pending_spawn"] != c.rid {
			t.Fatalf("%s after the refused callbacks: %d %s", c.id, s.status, s.raw)
		}
	}
	own := a.call(token, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/e"}, "request_id": rid}, "Idempotency-Key", "k")
	if own.status != 200 || own.replayed || own.env.Data["resolution"].(map[string]any)["applied"] != true {
		t.Fatalf("the callback on its own entity: %d %s", own.status, own.raw)
	}
}

// dropPendingCopy removes the copy of its pending spawn from an entity's
// item, as an item written before the copy was kept has none.
func dropPendingCopy(t *testing.T, project, entity string) {
	t.Helper()
	needServer(t)
	_, err := newClient(nil, nil).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "P#" + project + "#E"},
			"sk": &types.AttributeValueMemberS{Value: entity}},
		UpdateExpression:    aws.String("REMOVE psd, psd1"),
		ConditionExpression: aws.String("attribute_exists(psd) OR attribute_exists(psd1)")})
	if err != nil {
		t.Fatalf("remove the entity's copy of its pending spawn: %v", err)
	}
}
