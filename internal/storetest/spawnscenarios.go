package storetest

import (
	"context"
	"errors"
	"github.com/dont-cli/dont/internal/tools"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/spawn/spawntest"
	"github.com/dont-cli/dont/internal/store"
)

// RunSpawnScenarios runs the spawn protocol's scenario files
// (internal/spawn/testdata) through the service's one executor
// (service.Spawns.Run) on stores newStore makes, one store per file: the
// outputs are the files' own, which the pure core produces alone.
func RunSpawnScenarios(t *testing.T, newStore func(t *testing.T) store.Store) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the scenario files")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "spawn", "testdata")
	spawntest.Run(t, dir, func(t *testing.T) spawntest.World {
		w := &storeWorld{store: newStore(t), now: spawntest.Base, real: map[string]string{}, name: map[string]string{}}
		w.svc = service.New(service.Deps{ToolNames: tools.Names(), Store: w.store, Author: "agent-1", Clock: func() time.Time { return w.now }})
		return w
	})
}

// storeWorld is a scenario's world on a store: the scenario's names map
// to real ids both ways.
type storeWorld struct {
	store      store.Store
	svc        *service.Service
	now        time.Time
	real, name map[string]string
	order      []string // names, first seen first
}

// id is the real id of a scenario name (a fresh one of kind on first sight).
func (w *storeWorld) id(name, kind string) string {
	if name == "" {
		return ""
	}
	if r, ok := w.real[name]; ok {
		return r
	}
	r := ids.New(kind, w.now)
	w.real[name], w.name[r] = r, name
	w.order = append(w.order, name)
	return r
}

func (w *storeWorld) named(id string) string {
	if n, ok := w.name[id]; ok {
		return n
	}
	return id
}

// text is s with every real id replaced by its name.
func (w *storeWorld) text(s string) string {
	for r, n := range w.name {
		s = strings.ReplaceAll(s, r, n)
	}
	return s
}

func (w *storeWorld) Entity(t *testing.T, name string, status ledger.Status) ledger.Entity {
	ctx := context.Background()
	id := w.id(name, ids.Claim)
	e, err := w.store.GetEntity(ctx, id)
	prev := int64(0)
	switch {
	case errors.Is(err, store.ErrNotFound):
		e = ledger.Entity{ID: id, Kind: ledger.KindClaim, Statement: spawntest.StatementPrefix + name, Status: status,
			Author: "agent-1", CreatedAt: spawntest.Base, UpdatedAt: spawntest.Base, Version: 1}
	case err != nil:
		t.Fatalf("read %s: %v", name, err)
	default:
		prev = e.Version
		e.Status, e.Version = status, e.Version+1
	}
	ev := ledger.Event{ID: ids.New(ids.Event, spawntest.Base), Kind: ledger.EvConcluded, EntityID: id, Author: "agent-1", At: spawntest.Base, To: status}
	if prev != 0 {
		ev.Kind = ledger.EvReopened
	}
	if err := w.store.Commit(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e, PrevVersion: prev}}, Events: []ledger.Event{ev}}); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return w.entityBack(e)
}

func (w *storeWorld) Step(t *testing.T, step spawn.Step, now time.Time) (spawn.Transition, error) {
	w.now = now
	step.RequestID = w.id(step.RequestID, ids.Spawn)
	step.EntityID = w.id(step.EntityID, ids.Claim)
	step.ClaimID = w.id(step.ClaimID, ids.Claim)
	step.Issue.ID = w.id(step.Issue.ID, ids.Spawn)
	step.Issue.EntityID = w.id(step.Issue.EntityID, ids.Claim)
	step.Actor.CallbackFor = w.id(step.Actor.CallbackFor, ids.Spawn)
	tr, err := w.svc.Spawns.Run(context.Background(), step)
	if err != nil {
		e := *errs.As(err)
		e.Message = w.text(e.Message)
		return spawn.Transition{}, &e
	}
	return w.back(tr), nil
}

// back is tr in the scenario's names.
func (w *storeWorld) back(tr spawn.Transition) spawn.Transition {
	tr.Spawn = w.spawnBack(tr.Spawn)
	tr.CascadeFrom = w.named(tr.CascadeFrom)
	if tr.Entity != nil {
		e := w.entityBack(*tr.Entity)
		tr.Entity = &e
	}
	if tr.TimedOut != nil {
		first := w.back(*tr.TimedOut)
		tr.TimedOut = &first
	}
	return tr
}

func (w *storeWorld) entityBack(e ledger.Entity) ledger.Entity {
	e.ID, e.PendingSpawn = w.named(e.ID), w.named(e.PendingSpawn)
	return e
}

func (w *storeWorld) spawnBack(sp spawn.Spawn) spawn.Spawn {
	sp.ID, sp.EntityID = w.named(sp.ID), w.named(sp.EntityID)
	return sp
}

func (w *storeWorld) Stored(t *testing.T) ([]ledger.Entity, []spawn.Spawn) {
	ctx := context.Background()
	var es []ledger.Entity
	var sps []spawn.Spawn
	for _, name := range w.order {
		id := w.real[name]
		switch ids.Kind(id) {
		case ids.Claim:
			e, err := w.store.GetEntity(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			es = append(es, w.entityBack(e))
		case ids.Spawn:
			sp, err := w.store.GetSpawn(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			sps = append(sps, w.spawnBack(sp))
		}
	}
	return es, sps
}
