package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// TransitionInput is a status change: trust, dismiss, lock, ignore or
// reopen. With a RequestID it is a spawn callback.
type TransitionInput struct {
	Action    ledger.Action
	EntityID  string
	Reason    string
	Evidence  []string
	RequestID string
	Direct    bool // the verdict came from a provider in direct mode
	// Key is the call's keyed response, committed with the change (nil:
	// none; idempotency.Pending).
	Key *idempotency.Pending
}

// Resolve is a callback: a dismiss or trust with the request id of the
// verification spawn it resolves. Exactly one terminal resolver wins per
// request id, by commit order; a loser changes nothing and is told who
// won. (The tool surface runs a callback's sweep after it, not before,
// so that a late callback whose request has no committed resolver still
// applies.) It is spawn.StepCallback, a dismiss or trust, through the
// executor.
func (s *Spawns) Resolve(ctx context.Context, in TransitionInput) (EntityView, []envelope.Warning, error) {
	if in.RequestID == "" {
		return EntityView{}, nil, errs.E(errs.Usage, "a callback names the spawn it resolves (`request_id`)").On(in.EntityID)
	}
	if err := s.checkTransitionInput(in); err != nil {
		return EntityView{}, nil, err
	}
	step := spawn.Step{Kind: spawn.StepCallback, RequestID: in.RequestID, Actor: s.actorOf(ctx), Action: in.Action, EntityID: in.EntityID,
		Reason: in.Reason, Evidence: in.Evidence, Direct: in.Direct}
	tr, err := s.runStep(ctx, step, in.Key, resolved)
	if err != nil {
		return EntityView{}, nil, err
	}
	r, warns, _ := resolved(tr)
	return r.(EntityView), warns, nil
}

// resolved is what a callback's transition tells its caller: exactly one
// terminal resolver wins per request id, by commit order; a loser changes
// nothing and is told who won.
func resolved(tr spawn.Transition) (any, []envelope.Warning, error) {
	sp := tr.Spawn
	if tr.Effect == spawn.Lost {
		// A loser changes nothing; the warning names the earlier resolution.
		return EntityView{Entity: *tr.Current, Resolution: &Resolution{RequestID: sp.ID, Outcome: sp.Outcome, Applied: false}},
			[]envelope.Warning{loserWarning(sp)}, nil
	}
	return EntityView{Entity: *tr.Entity, Resolution: &Resolution{RequestID: sp.ID, Outcome: spawn.CallbackApplied, Applied: true}},
		appliedLate(tr, "the callback"), nil
}

// Transition applies a status change that resolves no spawn; a callback,
// which names its spawn's request id, is Spawns.Resolve.
func (s *Ledger) Transition(ctx context.Context, in TransitionInput) (EntityView, []envelope.Warning, error) {
	if in.RequestID != "" {
		return EntityView{}, nil, errs.E(errs.Usage, "a status change with a `request_id` is a callback; only dismiss and trust resolve a spawn").On(in.EntityID)
	}
	if err := s.checkTransitionInput(in); err != nil {
		return EntityView{}, nil, err
	}
	for attempt := 0; ; attempt++ {
		e, err := s.entity(ctx, in.EntityID)
		if err != nil {
			return EntityView{}, nil, err
		}
		verifier, expired, err := s.pendingVerifier(ctx, e, in.Action)
		if err != nil {
			return EntityView{}, nil, err
		}
		if expired && attempt < maxAttempts {
			// Its timeout commits first (the seed rule), then the move is decided again.
			if _, _, err := s.expire(ctx, verifier.ID); err != nil {
				return EntityView{}, nil, err
			}
			continue
		}
		tx, e2, err := s.transitionTx(ctx, e, in)
		if err != nil {
			return EntityView{}, nil, err
		}
		if verifier != nil {
			e2 = s.supersede(ctx, &tx, *verifier, e2, in.Action)
		}
		err = s.commitAnswering(ctx, tx, in.Key, EntityView{Entity: e2}, nil)
		if isCondition(err) && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return EntityView{}, nil, storeErr(err)
		}
		return EntityView{Entity: e2}, nil, nil
	}
}

func (s *core) checkTransitionInput(in TransitionInput) error {
	switch in.Action {
	case ledger.Doubt, ledger.Ignore, ledger.Reopen:
		if err := ledger.CheckReason(in.EntityID, in.Reason); err != nil {
			return err
		}
	case ledger.Verify:
		if err := ledger.CheckEvidence(in.EntityID, in.Evidence); err != nil {
			return err
		}
	}
	if in.RequestID != "" && in.Action != ledger.Doubt && in.Action != ledger.Verify {
		return errs.E(errs.Usage, "only dismiss and trust resolve a spawn; "+string(in.Action)+" takes no `request_id`").On(in.EntityID)
	}
	return nil
}

// transitionTx builds the write for one status change of e, including the
// stale cascade a doubt causes in the entities that depend on it.
func (s *core) transitionTx(ctx context.Context, e ledger.Entity, in TransitionInput) (store.Tx, ledger.Entity, error) {
	to, err := ledger.Next(e.ID, e.Status, in.Action)
	if err != nil {
		return store.Tx{}, e, err
	}
	now := s.now()
	ev := s.event(in.Action.EventKind(), e.ID, now)
	ev.From, ev.To, ev.Reason, ev.Evidence, ev.RequestID, ev.Direct = e.Status, to, in.Reason, in.Evidence, in.RequestID, in.Direct
	e2 := e
	e2.Status, e2.Version, e2.UpdatedAt = to, e.Version+1, now
	tx := store.Tx{Entities: []store.EntityPut{{Entity: e2, PrevVersion: e.Version}}, Events: []ledger.Event{ev}}
	if to == ledger.Doubted {
		if err := s.cascadeStale(ctx, &tx, e.ID, now); err != nil {
			return store.Tx{}, e, err
		}
	}
	return tx, e2, nil
}

// cascadeStale marks every entity that depends, directly or through other
// dependents, on the doubted one as stale.
func (s *core) cascadeStale(ctx context.Context, tx *store.Tx, doubted string, at time.Time) error {
	seen := map[string]bool{doubted: true}
	queue := []string{doubted}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		deps, err := s.Store.Dependents(ctx, id)
		if err != nil {
			return storeErr(err)
		}
		for _, d := range deps {
			if seen[d.ID] {
				continue
			}
			seen[d.ID] = true
			if !ledger.CascadesStale(d.Status) {
				// Left alone for what it is now; a dependent that can
				// still move (all but locked) must not have moved by the
				// commit, or a verification racing this doubt would
				// escape the cascade (store.Tx.Unchanged; storetest "a commit
				// is conditional on the entities it leaves unchanged").
				if d.Status != ledger.Locked {
					tx.Unchanged = append(tx.Unchanged, store.EntityCheck{ID: d.ID, Version: d.Version})
				}
				continue
			}
			ev := s.event(ledger.EvStaleCascaded, d.ID, at)
			ev.From, ev.To, ev.Reason = d.Status, ledger.Stale, "dependency "+id+" was doubted"
			d2 := d
			d2.Status, d2.Version, d2.UpdatedAt = ledger.Stale, d.Version+1, at
			tx.Entities = append(tx.Entities, store.EntityPut{Entity: d2, PrevVersion: d.Version})
			tx.Events = append(tx.Events, ev)
			queue = append(queue, d.ID)
		}
	}
	return nil
}

// pendingVerifier is the verification spawn pending on e that holds it
// under review against this move (spawn.Reviewing), if any; expired: it
// is due, and the caller times it out first.
func (s *core) pendingVerifier(ctx context.Context, e ledger.Entity, action ledger.Action) (sp *spawn.Spawn, expired bool, err error) {
	if e.PendingSpawn == "" {
		return nil, false, nil
	}
	got, err := s.spawnRecord(ctx, e.PendingSpawn)
	if errs.Is(err, errs.SpawnNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	holds, expired, err := spawn.Reviewing(e, &got, s.actorOf(ctx), action, s.now())
	if err != nil || !holds {
		return nil, false, err
	}
	return &got, expired, nil
}

// UnmetUnderReview is the clause an agent's move of an entity under review
// reports unmet.
const UnmetUnderReview = spawn.UnmetUnderReview

// supersede adds to tx the end of the verification spawn sp that a
// person's move of its entity overrides (spawn.Supersede). It returns the
// entity as written.
func (s *core) supersede(ctx context.Context, tx *store.Tx, sp spawn.Spawn, e2 ledger.Entity, action ledger.Action) ledger.Entity {
	done, e2, ev := spawn.Supersede(sp, e2, s.actor(ctx), action, s.now())
	ev.ID, ev.Author = s.newID(ids.Event, ev.At), s.Author
	tx.Entities[0].Entity = e2
	tx.Spawns = append(tx.Spawns, store.SpawnPut{Spawn: done, Step: spawn.StepCancel})
	tx.Events = append(tx.Events, ev)
	return e2
}
