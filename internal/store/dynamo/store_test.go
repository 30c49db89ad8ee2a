package dynamo_test

import (
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) service.Store { return newStore(t) })
}

// A spawn's payload lives in its global item, written once: a second
// create of the same id with another payload fails and changes nothing.
func TestASpawnPayloadIsWrittenOnce(t *testing.T) {
	s := newStore(t)
	_, sp := pendingSpawn(t, s)
	again := sp
	again.Request = []byte(`{"request_id":"overwritten"}`)
	if err := s.Commit(ctx, service.Tx{Spawns: []service.SpawnPut{{Spawn: again, Create: true}}}); !service.FailedOn(err, sp.ID) {
		t.Fatalf("second create: want ConditionFailed on %s, got %v", sp.ID, err)
	}
	got, err := s.GetSpawn(ctx, sp.ID)
	if err != nil || string(got.Request) != string(sp.Request) {
		t.Fatalf("payload after a failed create: %s %v", got.Request, err)
	}
	list, err := s.ListSpawns(ctx, service.SpawnFilter{})
	if err != nil || len(list) != 1 || string(list[0].Request) != string(sp.Request) {
		t.Fatalf("ListSpawns payloads: %v %v", list, err)
	}
	// A large payload round-trips (it is stored compressed).
	big := sp
	big.ID = ids.New(ids.Spawn, t0)
	big.Request = []byte(`{"prompt":"` + strings.Repeat("Independently verify the claim below. ", 200) + `"}`)
	if err := s.Commit(ctx, service.Tx{Spawns: []service.SpawnPut{{Spawn: big, Create: true}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSpawn(ctx, big.ID); string(got.Request) != string(big.Request) {
		t.Fatalf("large payload came back as %d bytes, want %d", len(got.Request), len(big.Request))
	}
}

func TestADependencyNamedTwiceIsOneEdge(t *testing.T) {
	s := newStore(t)
	root, child := newClaim(), newClaim()
	child.DependsOn = []string{root.ID, root.ID}
	if err := s.Commit(ctx, service.Tx{Entities: []service.EntityPut{{Entity: root}, {Entity: child}}}); err != nil {
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
