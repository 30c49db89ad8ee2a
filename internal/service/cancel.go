package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// CancelResult says what a cancel did.
type CancelResult struct {
	RequestID string        `json:"request_id"`
	EntityID  string        `json:"entity_id,omitempty"`
	Outcome   spawn.Outcome `json:"outcome"`
	Applied   bool          `json:"applied"`
	Restored  bool          `json:"restored"`
	Status    ledger.Status `json:"status,omitempty"`
}

// Cancel resolves a pending spawn as cancelled. It is one more
// terminal resolver: it commits through the same conditional write as a
// callback or a timeout (the spawn must still be pending), so exactly one
// of them wins. Like a timeout it restores the entity's pre-spawn status
// only if nothing has moved the entity since the spawn did, and it never
// re-spawns. A cancel that loses changes nothing and says who won.
// key is the call's keyed response, committed with the cancel (nil: none).
func (s *Spawns) Cancel(ctx context.Context, requestID, reason string, key *idempotency.Pending) (CancelResult, []envelope.Warning, error) {
	actor := s.actorOf(ctx)
	if s.inBacklog() {
		// A due spawn is timed out first, as the call's sweep would have
		// (for a caller that may cancel it: a refusal changes nothing).
		if sp, err := s.spawnRecord(ctx, requestID); err == nil && sp.State == spawn.Pending && !s.now().Before(sp.ExpiresAt) &&
			spawn.MayAct(actor, sp, "cancel") == nil {
			if _, _, err := s.expire(ctx, sp.ID); err != nil {
				return CancelResult{}, nil, err
			}
		}
	}
	result := func(tr spawn.Transition) (any, []envelope.Warning, error) {
		r := CancelResult{RequestID: tr.Spawn.ID, EntityID: tr.Spawn.EntityID, Outcome: tr.Outcome}
		if tr.Effect == spawn.Lost {
			w := loserWarning(*tr.Winner)
			w.Message = tr.Spawn.ID + " was already resolved (" + string(tr.Outcome) + "); the cancel changed nothing"
			return r, []envelope.Warning{w}, nil
		}
		r.Applied, r.Restored, r.Status = true, tr.Restored, tr.Status
		return r, nil, nil
	}
	step := spawn.Step{Kind: spawn.StepCancel, RequestID: requestID, Actor: actor, Reason: reason}
	tr, err := s.runStep(ctx, step, key, result)
	if err != nil {
		return CancelResult{}, nil, err
	}
	r, warns, _ := result(tr)
	return r.(CancelResult), warns, nil
}

// Record shows one stored spawn request (spawns manage --op show).
func (s *Spawns) Record(ctx context.Context, requestID string) (SpawnView, error) {
	sp, err := s.spawnRecord(ctx, requestID)
	if err != nil {
		return SpawnView{}, err
	}
	return SpawnView{Spawn: sp, Request: sp.Request}, nil
}

// SpawnView is a stored spawn with the request it was issued with.
type SpawnView struct {
	spawn.Spawn
	Request json.RawMessage `json:"request,omitempty"`
}
