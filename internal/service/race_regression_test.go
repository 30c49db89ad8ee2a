package service_test

import (
	"context"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// beforeEntityRead runs hook once, just before the first entity read: the
// window between a callback's spawn read and its entity read.
type beforeEntityRead struct {
	store.Store
	once sync.Once
	hook func()
}

func (b *beforeEntityRead) GetEntity(ctx context.Context, id string) (ledger.Entity, error) {
	b.once.Do(b.hook)
	return b.Store.GetEntity(ctx, id)
}

// Found by the linearizability check: a callback that read its spawn as
// pending, then found the entity locked because another callback resolved
// the spawn and the entity was locked in between, answered
// invalid-transition. It lost the race and must be told who won: the
// duplicate warning naming the earlier resolution, and nothing changed.
func TestALoserThatFindsTheEntityLockedIsToldWhoWon(t *testing.T) {
	e := newEnv(t)
	id := e.conclude("water boils at 100 C at sea level")
	rid := e.spawnReq("assume", id).RequestID
	racer := e.clock.service(&beforeEntityRead{Store: e.store, hook: func() {
		e.transition(ledger.Verify, id, rid) // the winner
		e.transition(ledger.Lock, id, "")    // and the entity moves on to a terminal status
	}})
	res, err := call(racer, string(ledger.Doubt), callbackArgs(ledger.Doubt, id, rid))
	if err != nil {
		t.Fatalf("the losing callback failed instead of being told who won: %v", err)
	}
	if len(res.Warnings) == 0 || res.Warnings[0].Code != "spawn-duplicate" || res.Warnings[0].Outcome != "callback-applied" {
		t.Fatalf("warnings %+v, want spawn-duplicate naming callback-applied", res.Warnings)
	}
	if v := res.Data.(service.EntityView); v.Resolution == nil || v.Resolution.Applied || v.Status != ledger.Locked {
		t.Fatalf("the loser reports %+v", v)
	}
	if n := len(e.events(id, ledger.EvSpawnResolved)) + len(e.events(id, ledger.EvSpawnTimeout)); n != 1 {
		t.Fatalf("%d terminal events", n)
	}
}
