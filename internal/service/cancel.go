package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/envelope"

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
func (s *Spawns) Cancel(ctx context.Context, requestID, reason string) (CancelResult, []envelope.Warning, error) {
	for attempt := 0; ; attempt++ {
		sp, err := s.spawnRecord(ctx, requestID)
		if err != nil {
			return CancelResult{}, nil, err
		}
		if err := s.mayActOnSpawn(ctx, sp, "cancel"); err != nil {
			return CancelResult{}, nil, err
		}
		if sp, err = s.settledSpawn(ctx, sp); err != nil {
			return CancelResult{}, nil, err
		}
		r := CancelResult{RequestID: sp.ID, EntityID: sp.EntityID, Outcome: sp.Outcome}
		if sp.State != spawn.Pending {
			w := loserWarning(sp)
			w.Message = sp.ID + " was already resolved (" + string(sp.Outcome) + "); the cancel changed nothing"
			return r, []envelope.Warning{w}, nil
		}
		now := s.now()
		ev := s.event(ledger.EvSpawnCancelled, sp.EntityID, now)
		ev.RequestID, ev.Outcome, ev.Reason = sp.ID, string(spawn.Cancelled), reason
		ev.Detail = map[string]any{"issued_at": sp.IssuedAt.Format(timeFormat), "expires_at": sp.ExpiresAt.Format(timeFormat),
			"cancelled_at": now.Format(timeFormat), "request_kind": string(sp.Kind)}
		tx, err := s.closeTx(ctx, sp, spawn.Cancelled, ev, now)
		if err != nil {
			return CancelResult{}, nil, err
		}
		r.Restored, r.Status = tx.restored, tx.status
		done := r
		done.Outcome, done.Applied = spawn.Cancelled, true
		err = s.commitAnswering(ctx, tx.Tx, done, nil)
		if isCondition(err) && attempt < maxAttempts {
			continue // a resolver or a writer got there first: re-read and decide again
		}
		if err != nil {
			return CancelResult{}, nil, storeErr(err)
		}
		return done, nil, nil
	}
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
