package service

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// respond makes the call's response from the transition about to be
// committed, so that a keyed call's response commits with its writes
// (the key, the write and the response in one transaction).
// An error stops the step before its commit.
type respond func(spawn.Transition) (result any, warns []envelope.Warning, err error)

// Run is the one executor of the spawn protocol (runStep), for a step
// its caller made whole: its actor and arguments set, the issue's id
// chosen; no keyed response is committed. It returns the transition committed (or the step's Lost or
// NoChange) and the typed errors of spawn.Apply.
func (s *Spawns) Run(ctx context.Context, step spawn.Step) (spawn.Transition, error) {
	return s.runStep(ctx, step, nil, nil)
}

// runStep is the one executor of the spawn protocol: it loads what the
// step reads, has spawn.Apply decide, commits the transition on the
// condition of what was read, and on a conflict reads and decides again.
// key is the call's keyed response (nil: none), made by answer from the
// transition and committed with it. An expired spawn the step touches is
// timed out first (spawn.TimeoutFirst), then the step is decided again.
func (s *core) runStep(ctx context.Context, step spawn.Step, key *idempotency.Pending, answer respond) (spawn.Transition, error) {
	if err := step.Check(); err != nil {
		return spawn.Transition{}, err
	}
	reread := false
	var timedOut *spawn.Transition
	for attempt := 0; ; attempt++ {
		if step.Kind == spawn.StepIssue && attempt > 0 {
			// A retried issue is a new spawn: a store recognises a put of
			// its own whose answer was lost by the spawn's id.
			step.Issue.ID = s.newID(ids.Spawn, s.now())
		}
		st, err := s.snapshot(ctx, step, reread)
		if err != nil {
			return spawn.Transition{}, err
		}
		tr, err := spawn.Apply(st, step, s.now())
		if timedOut != nil && tr.Effect != spawn.TimeoutFirst {
			tr.TimedOut = timedOut
		}
		if err != nil {
			if !reread && st.Spawn != nil {
				// Decided on a remembered read: the spawn may have been
				// resolved since (this step lost the race rather than
				// being refused). Read the store once more and decide again.
				reread = true
				continue
			}
			return tr, err
		}
		if tr.Effect != spawn.Write && tr.Effect != spawn.TimeoutFirst {
			return tr, nil
		}
		tx, err := s.txOf(ctx, tr)
		if err != nil {
			return tr, err
		}
		if tr.Effect == spawn.Write && answer != nil {
			result, warns, err := answer(tr)
			if err != nil {
				return tr, err
			}
			tx.Key = s.prepareKey(key, result, warns)
		}
		err = s.commit(ctx, tx)
		key.Committed(tx.Key, err)
		if isCondition(err) && attempt < maxAttempts {
			continue // a resolver or a writer got there first: re-read and decide again
		}
		if err != nil {
			return tr, storeErr(err)
		}
		if tr.Spawn.State == spawn.Resolved {
			s.cancelTimeout(tr.Spawn.ID)
		}
		if tr.Effect == spawn.TimeoutFirst && attempt < maxAttempts {
			first := tr
			timedOut = &first
			continue
		}
		return tr, nil
	}
}

// snapshot reads what step reads: the spawn step.RequestID names and its
// entity, or, for an issue, the target entity and the spawn pending on it;
// fresh reads the spawn from the store even if the request read it before.
func (s *core) snapshot(ctx context.Context, step spawn.Step, fresh bool) (spawn.Snapshot, error) {
	var st spawn.Snapshot
	if step.Kind == spawn.StepIssue {
		if step.Issue.Kind == spawn.Guess {
			return st, nil
		}
		e, err := s.settledEntity(ctx, step.Issue.EntityID)
		if err != nil {
			return st, err
		}
		st.Entity = &e
		if e.PendingSpawn != "" {
			if b, err := s.Store.GetSpawn(ctx, e.PendingSpawn); err == nil {
				st.Blocking = &b
			}
		}
		return st, nil
	}
	var sp spawn.Spawn
	var err error
	if step.Kind == spawn.StepCallback {
		// A callback names its entity: the spawn pending there is read
		// with it, without its request, which a callback never rewrites.
		sp, err = s.callbackSpawn(ctx, step.RequestID, step.EntityID)
	} else {
		sp, err = s.spawnRecord(ctx, step.RequestID)
	}
	if err == nil && fresh {
		// Not from the request's memo (readmemo), which answers a
		// repeated read with the first.
		if sp, err = s.Store.GetSpawn(ctx, step.RequestID); err != nil {
			err = storeErr(err)
		}
	}
	if err != nil {
		return st, err
	}
	st.Spawn = &sp
	if sp.EntityID != "" {
		e, err := s.entity(ctx, sp.EntityID)
		if err != nil {
			return st, err
		}
		st.Entity = &e
	}
	return st, nil
}

// txOf is the store's write for a transition: its spawn, its entity, its
// events (each given its id and author) and, for a doubt, the stale
// cascade through the entities that depend on it.
func (s *core) txOf(ctx context.Context, tr spawn.Transition) (store.Tx, error) {
	tx := store.Tx{Spawns: []store.SpawnPut{{Spawn: tr.Spawn, Create: tr.CreateSpawn, PrevExpiresAt: tr.PrevExpiresAt, Step: tr.Step}}}
	if tr.Entity != nil {
		tx.Entities = []store.EntityPut{{Entity: *tr.Entity, PrevVersion: tr.PrevVersion}}
	}
	for _, ev := range tr.Events {
		ev.ID, ev.Author = s.newID(ids.Event, ev.At), s.Author
		tx.Events = append(tx.Events, ev)
	}
	if tr.CascadeFrom != "" {
		if err := s.cascadeStale(ctx, &tx, tr.CascadeFrom, tr.Entity.UpdatedAt); err != nil {
			return store.Tx{}, err
		}
	}
	return tx, nil
}

// actorOf is who the call runs as, for spawn.MayAct.
func (s *core) actorOf(ctx context.Context) spawn.Actor {
	p := s.PrincipalOf(ctx)
	return spawn.Actor{ID: s.actor(ctx), Role: p.Role, Person: p.IsPerson(),
		Callback: p.Role == auth.RoleCallback, CallbackFor: p.RequestID}
}
