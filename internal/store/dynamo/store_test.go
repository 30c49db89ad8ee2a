package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return freshStore(t) })
}

// The spawn protocol's scenario files, through the service's executor on
// the DynamoDB stand-in.
func TestSpawnScenarios(t *testing.T) {
	storetest.RunSpawnScenarios(t, func(t *testing.T) store.Store { return newStore(t) })
}

// freshStore is a store on a table of its own, deleted when t ends: an
// index query reads what its table holds, and a table shared by the whole
// package grows with every test (the stand-in's reads cost what it holds).
func freshStore(t *testing.T) *dynamo.Store {
	t.Helper()
	needServer(t)
	name := "dont-test-" + randomName()
	client := newClient(nil, nil)
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return dynamo.New(client, name, "test-"+randomName())
}

// A spawn's item (with its payload) is written once: a second create of
// the same id with another payload fails and changes nothing.
func TestASpawnPayloadIsWrittenOnce(t *testing.T) {
	s := newStore(t)
	e, sp := pendingSpawn(t, s)
	again := sp
	again.Request = []byte(`{"request_id":"overwritten"}`)
	e2 := e
	e2.Version = 2
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: again, Create: true, Step: spawn.StepIssue}}}); !store.FailedOn(err, sp.ID) {
		t.Fatalf("second create: want ConditionFailed on %s, got %v", sp.ID, err)
	}
	got, err := s.GetSpawn(ctx, sp.ID)
	if err != nil || string(got.Request) != string(sp.Request) {
		t.Fatalf("payload after a failed create: %s %v", got.Request, err)
	}
	list, err := s.ListSpawns(ctx, store.SpawnFilter{})
	if err != nil || len(list) != 1 || string(list[0].Request) != string(sp.Request) {
		t.Fatalf("ListSpawns payloads: %v %v", list, err)
	}
	// A large payload round-trips (it is stored compressed).
	other := newClaim()
	big := sp
	big.ID, big.EntityID = ids.New(ids.Spawn, t0), other.ID
	big.Request = []byte(`{"prompt":"` + strings.Repeat("Independently verify the claim below. ", 200) + `"}`)
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: other}}, Spawns: []store.SpawnPut{{Spawn: big, Create: true, Step: spawn.StepIssue}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSpawn(ctx, big.ID); string(got.Request) != string(big.Request) {
		t.Fatalf("large payload came back as %d bytes, want %d", len(got.Request), len(big.Request))
	}
}

// An issue whose commit fails after its spawn's item was written (a
// concurrent writer moved the entity in between) leaves the item behind;
// it names a spawn its entity never had, and reads do not show it.
func TestASpawnItemOfAFailedIssueIsNotASpawn(t *testing.T) {
	s := newStore(t)
	e := newClaim()
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}}); err != nil {
		t.Fatal(err)
	}
	sp, _ := newPendingOn(e)
	if _, err := newClient(nil, nil).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: dynamo.SpawnItem(s, sp)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSpawn(ctx, sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSpawn of the failed issue: want ErrNotFound, got %v", err)
	}
	if list, err := s.ListSpawns(ctx, store.SpawnFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("ListSpawns shows the failed issue: %v %v", list, err)
	}
	// The entity is untouched: a real issue still works.
	real, e2 := newPendingOn(e)
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: 1}}, Spawns: []store.SpawnPut{{Spawn: real, Create: true, Step: spawn.StepIssue}}}); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListSpawns(ctx, store.SpawnFilter{}); err != nil || len(list) != 1 || list[0].ID != real.ID {
		t.Fatalf("ListSpawns after a real issue: %v %v", list, err)
	}
}

func newPendingOn(e ledger.Entity) (spawn.Spawn, ledger.Entity) {
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, t0), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		PreStatus: e.Status, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), EntityVersion: e.Version + 1, Request: []byte(`{"request_id":"x"}`)}
	e2 := e
	e2.Version, e2.PendingSpawn, e2.LastSpawn = e.Version+1, sp.ID, sp.ID
	return sp, e2
}

func TestADependencyNamedTwiceIsOneEdge(t *testing.T) {
	s := newStore(t)
	root, child := newClaim(), newClaim()
	child.DependsOn = []string{root.ID, root.ID}
	if err := s.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: root}, {Entity: child}}}); err != nil {
		t.Fatal(err)
	}
	deps, err := s.Dependents(ctx, root.ID)
	if err != nil || len(deps) != 1 || deps[0].ID != child.ID {
		t.Fatalf("dependents = %v, %v", deps, err)
	}
}

func newClaim() ledger.Entity {
	return ledger.Entity{ID: ids.New(ids.Claim, t0), Kind: ledger.KindClaim, Statement: "a claim",
		Status: ledger.Unverified, Version: 1, CreatedAt: t0, UpdatedAt: t0}
}

func TestProjectSettingsRoundTripAndStayInTheirProject(t *testing.T) {
	a, b := newStore(t), newStore(t)
	if ps, err := a.Settings(ctx); err != nil || ps.SpawnTimeout != 0 {
		t.Fatalf("settings of a new project: %+v %v", ps, err)
	}
	if err := a.PutSettings(ctx, store.ProjectSettings{SpawnTimeout: 90 * time.Minute, SpawnMaxLease: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if ps, err := a.Settings(ctx); err != nil || ps.SpawnTimeout != 90*time.Minute || ps.SpawnMaxLease != 48*time.Hour {
		t.Fatalf("read back: %+v %v", ps, err)
	}
	if ps, err := b.Settings(ctx); err != nil || ps.SpawnTimeout != 0 {
		t.Fatalf("another project sees them: %+v %v", ps, err)
	}
}

func TestTokenStoreConformance(t *testing.T) {
	storetest.RunTokens(t, func(t *testing.T) (store.TokenStore, store.TokenStore) {
		mine := newStore(t)
		return mine, dynamo.New(newClient(nil, nil), table, "test-"+randomName())
	})
}

func TestSettingsStoreConformance(t *testing.T) {
	storetest.RunSettings(t, func(t *testing.T) store.SettingsStore { return newStore(t) })
}
