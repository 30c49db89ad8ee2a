package deployment_test

import (
	"github.com/dont-cli/dont/internal/tools"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The operator's reindex of an upgraded project: a claim stored without
// its entity_status key is missing from `list --status` until the
// reindex, which runs in invocations that each answer a cursor for the
// next; an unknown project and a bad cursor are refused with remediation
// and write nothing.
func TestAnOperatorReindexListsAnUpgradedProjectsOldItemsAndRefusesBadInput(t *testing.T) {
	needServer(t)
	backend := deployment.NewBackend(newClient(nil, nil), table, func(st *dynamo.Store) *service.Service {
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour, Author: "api", Clock: func() time.Time { return t0 }})
	})
	project := "reindex-" + randomName()
	svc := backend.Project(project).Service

	if _, err := deployment.Reindex(ctx, svc, "", nil); errs.As(err).Code != errs.NotFound || len(errs.As(err).Remediation) == 0 {
		t.Fatalf("an unknown project: %+v", errs.As(err))
	}
	st := dynamo.New(newClient(nil, nil), table, project)
	var claims []string
	for range 3 {
		e := ledger.Entity{ID: ids.New(ids.Claim, t0), Kind: ledger.KindClaim, Statement: "an old claim", Status: ledger.Doubted, Version: 1, CreatedAt: t0, UpdatedAt: t0}
		if err := st.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := newClient(nil, nil).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: oldEntityKey(project, e.ID),
			UpdateExpression: aws.String("REMOVE #es"), ExpressionAttributeNames: map[string]string{"#es": dynamo.StatusKey}}); err != nil {
			t.Fatal(err)
		}
		claims = append(claims, e.ID)
	}
	doubted := func() int {
		l, err := svc.Ledger.List(ctx, string(ledger.Doubted))
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Entities)
	}
	if n := doubted(); n != 0 {
		t.Fatalf("before the reindex list --status doubted = %d", n)
	}
	for _, c := range []string{"not-a-cursor", "cjEAeA"} {
		_, err := deployment.Reindex(ctx, svc, c, nil)
		if e := errs.As(err); e.Code != errs.InvalidArgument || len(e.Remediation) == 0 || len(e.UnmetClauses) == 0 {
			t.Fatalf("cursor %q: %+v", c, e)
		}
	}
	if n := doubted(); n != 0 {
		t.Fatalf("a refused reindex wrote: list --status doubted = %d", n)
	}

	fixed, runs, cursor := 0, 0, ""
	for {
		runs++
		rep, err := deployment.Reindex(ctx, svc, cursor, func() bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		fixed += rep.Fixed
		if rep.Done {
			break
		}
		cursor = rep.Cursor
	}
	if fixed != len(claims) || runs < 2 {
		t.Fatalf("reindex fixed %d in %d runs, want %d in more than one", fixed, runs, len(claims))
	}
	deadline := time.Now().Add(10 * time.Second) // the index is eventually consistent
	for doubted() != len(claims) {
		if time.Now().After(deadline) {
			t.Fatalf("after the reindex list --status doubted = %d, want %d", doubted(), len(claims))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oldEntityKey is the key of an entity item (the layout in
// internal/store/dynamo's package comment; the project names here need no
// escaping).
func oldEntityKey(project, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P#" + project + "#E"}, "sk": &types.AttributeValueMemberS{Value: id}}
}
