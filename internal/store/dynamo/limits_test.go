package dynamo_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// incompressible is n bytes of base64 text: DEFLATE shrinks it to about 3/4.
func incompressible(n int) string {
	b := make([]byte, n*3/4+3)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

func wantTooLarge(t *testing.T, err error) {
	t.Helper()
	if !errs.Is(err, dynamo.TooLarge) {
		t.Fatalf("want %s, got %v", dynamo.TooLarge, err)
	}
	e := present.Explain(err)
	if present.Exit(err) != present.ExitUsage || present.Status(err) != 413 || len(e.Remediation) == 0 {
		t.Fatalf("%s is presented as exit %d, status %d, remediation %v", dynamo.TooLarge, present.Exit(err), present.Status(err), e.Remediation)
	}
}

// What DynamoDB would refuse for its size — an item over 400 KB, a
// transaction over 100 items or 4 MB — the store refuses itself, with a
// code the caller can act on, and nothing of the change is written.
func TestAChangeTooLargeForDynamoDBIsRefusedAndWritesNothing(t *testing.T) {
	t.Run("an entity item over 400 KB", func(t *testing.T) {
		s := newStore(t)
		e := newClaim()
		e.Statement = incompressible(600 * 1024)
		wantTooLarge(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}))
		if _, err := s.GetEntity(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused entity was written: %v", err)
		}
	})
	t.Run("a spawn whose payload is over 400 KB, issued on an entity", func(t *testing.T) {
		s := newStore(t)
		e := newClaim()
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		sp, e2 := newPendingOn(e)
		sp.Request = []byte(`{"prompt":"` + incompressible(600*1024) + `"}`)
		wantTooLarge(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}))
		// Neither the spawn's item (written before the commit when it
		// fits) nor the entity's change was written.
		raw, err := newClient(nil, nil).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P#" + s.Project() + "#S"}, "sk": &types.AttributeValueMemberS{Value: sp.ID}}})
		if err != nil || len(raw.Item) != 0 {
			t.Fatalf("the refused spawn's item: %d attributes, %v", len(raw.Item), err)
		}
		got, err := s.GetEntity(ctx, e.ID)
		if err != nil || got.Version != 1 || got.PendingSpawn != "" {
			t.Fatalf("entity after the refused issue: v%d pending %q, %v", got.Version, got.PendingSpawn, err)
		}
	})
	t.Run("a transaction of more than 100 items", func(t *testing.T) {
		s := newStore(t)
		root := newClaim()
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: root}}}); err != nil {
			t.Fatal(err)
		}
		var deps []ledger.Entity
		for range 120 {
			deps = append(deps, newClaim())
		}
		child := newClaim()
		for _, d := range deps {
			child.DependsOn = append(child.DependsOn, d.ID)
		}
		child.DependsOn = append(child.DependsOn, root.ID)
		wantTooLarge(t, s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: child}}}))
		if _, err := s.GetEntity(ctx, child.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused entity was written: %v", err)
		}
		if dependents, err := s.Dependents(ctx, root.ID); err != nil || len(dependents) != 0 {
			t.Fatalf("the refused entity's edges were written: %v %v", dependents, err)
		}
	})
	t.Run("a transaction of more than 4 MB", func(t *testing.T) {
		s := newStore(t)
		var puts []store.EntityPut
		for range 16 { // about 290 KB each, stored
			e := newClaim()
			e.Statement = incompressible(380 * 1024)
			puts = append(puts, store.EntityPut{Entity: e})
		}
		wantTooLarge(t, s.Commit(ctx, store.Tx{Entities: puts}))
		if list, err := s.ListEntities(ctx, store.EntityFilter{}); err != nil || len(list) != 0 {
			t.Fatalf("%d entities of the refused transaction were written, %v", len(list), err)
		}
	})
	t.Run("a large statement that compresses is stored", func(t *testing.T) {
		s := newStore(t)
		e := newClaim()
		var b strings.Builder
		for b.Len() < 500*1024 {
			fmt.Fprintf(&b, "line %d of a long but repetitive statement. ", b.Len())
		}
		e.Statement = b.String()
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatalf("a 500 KB statement that compresses under 400 KB: %v", err)
		}
		if got, err := s.GetEntity(ctx, e.ID); err != nil || got.Statement != e.Statement {
			t.Fatalf("read back: %d bytes, %v", len(got.Statement), err)
		}
	})
}

// The store's refusal and DynamoDB's agree: around the limit, every
// entity the store lets through the server accepts, and the store refuses
// the rest.
func TestTheStoresItemLimitIsDynamoDBs(t *testing.T) {
	s := newStore(t)
	stored, refused := 0, 0
	for kb := 520; kb <= 580; kb += 12 { // compressed: about 390 to 435 KB
		e := newClaim()
		e.Statement = incompressible(kb * 1024)
		err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}})
		switch {
		case err == nil:
			stored++
			if got, err := s.GetEntity(ctx, e.ID); err != nil || got.Statement != e.Statement {
				t.Fatalf("%d KB: read back %d bytes, %v", kb, len(got.Statement), err)
			}
		case errs.Is(err, dynamo.TooLarge):
			refused++
		default:
			t.Fatalf("%d KB: the server refused what the store let through: %v", kb, err)
		}
	}
	if stored == 0 || refused == 0 {
		t.Fatalf("%d stored, %d refused: the sizes did not straddle the limit", stored, refused)
	}
}

// DynamoDB ends a Query page at 1 MB read: lists and the sweep's index
// read follow LastEvaluatedKey through every page.
func TestListsAndTheDueIndexReadEveryPageOverOneMB(t *testing.T) {
	needServer(t)
	w := &seen{}
	s := dynamo.New(newClient(w, nil), table, "test-"+randomName())
	// One shard, so that the 1.3 MB of due entries share one partition
	// (sharded, each shard's range is paged the same way).
	if err := s.SetPendingShards(1); err != nil {
		t.Fatal(err)
	}
	const n = 6 // each entity item about 225 KB stored, 1.3 MB in all
	for range n {
		e := newClaim()
		e.Statement = incompressible(300 * 1024)
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
			t.Fatal(err)
		}
		sp, e2 := newPendingOn(e)
		if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: sp, Create: true, Step: spawn.StepIssue}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := w.count("Query+ExclusiveStartKey")
	list, err := s.ListEntities(ctx, store.EntityFilter{})
	if err != nil || len(list) != n {
		t.Fatalf("ListEntities: %d of %d, %v", len(list), n, err)
	}
	if w.count("Query+ExclusiveStartKey") == before {
		t.Fatal("1.3 MB of entities came in one page: the server does not end pages at 1 MB")
	}
	var due []string
	converges(t, func() bool {
		before = w.count("Query+ExclusiveStartKey")
		got, err := s.ExpiringSpawns(ctx, time.Time{}, t0.Add(2*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		due = due[:0]
		for _, sp := range got {
			due = append(due, sp.ID)
		}
		return len(due) == n
	}, func() string { return fmt.Sprintf("ExpiringSpawns: %d of %d", len(due), n) })
	if w.count("Query+ExclusiveStartKey") == before {
		t.Fatal("1.3 MB of due entries came in one page")
	}
}

// converges polls ok, for an eventually consistent read, until it holds
// or 10 s have passed; then it fails with what says.
func converges(t *testing.T, ok func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
