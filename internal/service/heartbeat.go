package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// HeartbeatResult says what a heartbeat did to a spawn's expiry.
type HeartbeatResult struct {
	RequestID string        `json:"request_id"`
	EntityID  string        `json:"entity_id,omitempty"`
	State     spawn.State   `json:"state"`
	Outcome   spawn.Outcome `json:"outcome,omitempty"`
	// ExpiresAt is the spawn's expiry after the heartbeat; Previous before.
	ExpiresAt time.Time `json:"expires_at"`
	Previous  time.Time `json:"previous_expires_at"`
	// Moved: this heartbeat committed a later expiry.
	Moved bool `json:"moved"`
	// Capped: the expiry asked for lay beyond the lease, which bounds it.
	Capped bool `json:"capped,omitempty"`
	// LeaseEndsAt is issued_at + the project's spawn_max_lease: no
	// heartbeat moves the expiry past it.
	LeaseEndsAt time.Time `json:"lease_ends_at"`
}

// Heartbeat moves a pending spawn's expires_at forward, to now + extend
// (the project's spawn timeout if extend is zero), never backwards and
// never past issued_at + spawn_max_lease (asked for more, the expiry is
// capped at the lease, with a spawn-lease-capped warning). The write is
// conditional on the spawn still being pending, so it races with the
// resolvers like any of them: a heartbeat that finds the spawn resolved
// changes nothing and warns (spawn-heartbeat-late). A spawn whose
// expiry already passed is swept first (the seed rule: an expired spawn
// a command touches is timed out before the command acts), so a
// heartbeat never revives an expired spawn. The event spawn_heartbeat
// records each move, and the scheduler is told the new expiry.
func (s *Spawns) Heartbeat(ctx context.Context, requestID string, extend time.Duration) (HeartbeatResult, []envelope.Warning, error) {
	if extend < 0 {
		return HeartbeatResult{}, nil, errs.E(errs.InvalidArgument, "--extend must be a positive duration").Unmet("extend > 0")
	}
	if extend == 0 {
		extend = s.timeout()
	}
	for attempt := 0; ; attempt++ {
		sp, err := s.spawnRecord(ctx, requestID)
		if err != nil {
			return HeartbeatResult{}, nil, err
		}
		if err := s.mayActOnSpawn(ctx, sp, "heartbeat"); err != nil {
			return HeartbeatResult{}, nil, err
		}
		now := s.now()
		lease := sp.IssuedAt.Add(s.maxLease())
		r := HeartbeatResult{RequestID: sp.ID, EntityID: sp.EntityID, State: sp.State, Outcome: sp.Outcome,
			ExpiresAt: sp.ExpiresAt, Previous: sp.ExpiresAt, LeaseEndsAt: lease}
		if sp.State == spawn.Pending && !now.Before(sp.ExpiresAt) {
			// Expired but not yet swept: the timeout commits first.
			if _, _, err := s.expire(ctx, sp.ID); err != nil {
				return r, nil, err
			}
			if attempt < maxAttempts {
				continue
			}
		}
		if sp.State != spawn.Pending {
			when := ""
			if sp.ResolvedAt != nil {
				when = " at " + sp.ResolvedAt.Format(timeFormat)
			}
			return r, []envelope.Warning{{Code: envelope.WarnSpawnHeartbeatLate, RequestID: sp.ID, Outcome: string(sp.Outcome),
				Message: sp.ID + " was already resolved (" + string(sp.Outcome) + when + "); the heartbeat changed nothing"}}, nil
		}
		want := now.Add(extend)
		var warns []envelope.Warning
		if want.After(lease) {
			want, r.Capped = lease, true
			warns = append(warns, envelope.Warning{Code: envelope.WarnSpawnLeaseCapped, RequestID: sp.ID,
				Message: sp.ID + " may live until " + lease.Format(timeFormat) + " (spawn_max_lease " + s.maxLease().String() + " from its issue); its expiry moves no further"})
		}
		if !want.After(sp.ExpiresAt) {
			return r, warns, nil // already later: nothing to write
		}
		tx, err := s.heartbeatTx(ctx, sp, want, now)
		if err != nil {
			return r, nil, err
		}
		moved := r
		moved.ExpiresAt, moved.Moved = want, true
		err = s.commitAnswering(ctx, tx, moved, warns)
		if isCondition(err) && attempt < maxAttempts {
			continue // resolved, or its entity moved: re-read and decide again
		}
		if err != nil {
			return r, nil, storeErr(err)
		}
		if s.Scheduler != nil {
			if err := s.Scheduler.ScheduleTimeout(ctx, sp.ID, want); err != nil && s.Log != nil {
				s.Log.Warn("schedule timeout", "request_id", sp.ID, "err", err)
			}
		}
		return moved, warns, nil
	}
}

// heartbeatTx is the write that moves a pending spawn's expiry to want:
// the spawn (still pending: the store's condition) with its payload's
// expires_at, and, for a spawn on an entity, the entity at its next
// version with the event, so that the event is committed with its
// entity as every event is. The spawn's EntityVersion follows only if
// nothing else has moved the entity since the spawn did, so that a
// timeout still restores exactly when it would have. The write is
// conditioned on the expiry it moves (SpawnPut.PrevExpiresAt), and every
// resolver's on the expiry it read: of a heartbeat and a resolver that
// read the same spawn, only one commits.
func (s *core) heartbeatTx(ctx context.Context, sp spawn.Spawn, want, now time.Time) (Tx, error) {
	ev := s.event(ledger.EvSpawnHeartbeat, sp.EntityID, now)
	ev.RequestID = sp.ID
	ev.Detail = map[string]any{"expires_at": want.Format(timeFormat), "previous_expires_at": sp.ExpiresAt.Format(timeFormat),
		"request_kind": string(sp.Kind)}
	sp2 := sp
	sp2.ExpiresAt = want
	if len(sp.Request) > 0 {
		var req spawn.Request
		if err := json.Unmarshal(sp.Request, &req); err != nil {
			return Tx{}, errs.E(errs.Internal, "cannot read the stored spawn request "+sp.ID).Wrap(err)
		}
		req.ExpiresAt = want
		b, err := envelope.MarshalData(req)
		if err != nil {
			return Tx{}, errs.E(errs.Internal, "encode spawn request").Wrap(err)
		}
		sp2.Request = b
	}
	tx := Tx{Spawns: []SpawnPut{{Spawn: sp2, PrevExpiresAt: sp.ExpiresAt}}, Events: []ledger.Event{ev}}
	if sp.EntityID != "" {
		e, err := s.entity(ctx, sp.EntityID)
		if err != nil {
			return tx, err
		}
		e2 := e
		e2.Version = e.Version + 1
		if sp.EntityVersion == e.Version {
			sp2.EntityVersion = e2.Version
			tx.Spawns[0].Spawn = sp2
		}
		tx.Entities = []EntityPut{{Entity: e2, PrevVersion: e.Version}}
	}
	return tx, nil
}
