package service

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"
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
// key is the call's keyed response, committed with the move (nil: none).
func (s *Spawns) Heartbeat(ctx context.Context, requestID string, extend time.Duration, key *idempotency.Pending) (HeartbeatResult, []envelope.Warning, error) {
	step := spawn.Step{Kind: spawn.StepHeartbeat, RequestID: requestID, Actor: s.actorOf(ctx), Extend: extend, Timeout: s.timeout(), MaxLease: s.maxLease()}
	result := func(tr spawn.Transition) (any, []envelope.Warning, error) {
		sp := tr.Spawn
		r := HeartbeatResult{RequestID: sp.ID, EntityID: sp.EntityID, State: sp.State, Outcome: sp.Outcome,
			ExpiresAt: tr.Previous, Previous: tr.Previous, LeaseEndsAt: tr.LeaseEnd, Capped: tr.Capped}
		if tr.Effect == spawn.Lost {
			when := ""
			if sp.ResolvedAt != nil {
				when = " at " + sp.ResolvedAt.Format(timeFormat)
			}
			r.Capped = false
			return r, []envelope.Warning{{Code: envelope.WarnSpawnHeartbeatLate, RequestID: sp.ID, Outcome: string(sp.Outcome),
				Message: sp.ID + " was already resolved (" + string(sp.Outcome) + when + "); the heartbeat changed nothing"}}, nil
		}
		var warns []envelope.Warning
		if tr.Capped {
			warns = append(warns, envelope.Warning{Code: envelope.WarnSpawnLeaseCapped, RequestID: sp.ID,
				Message: sp.ID + " may live until " + tr.LeaseEnd.Format(timeFormat) + " (spawn_max_lease " + s.maxLease().String() + " from its issue); its expiry moves no further"})
		}
		if tr.Effect == spawn.Write {
			r.ExpiresAt, r.Moved = sp.ExpiresAt, true
		}
		return r, warns, nil
	}
	tr, err := s.runStep(ctx, step, key, result)
	if err != nil {
		return HeartbeatResult{}, nil, err
	}
	if tr.Effect == spawn.Write && s.Scheduler != nil {
		if err := s.Scheduler.ScheduleTimeout(ctx, tr.Spawn.ID, tr.Spawn.ExpiresAt); err != nil && s.Log != nil {
			s.Log.Warn("schedule timeout", "request_id", tr.Spawn.ID, "err", err)
		}
	}
	r, warns, _ := result(tr)
	return r.(HeartbeatResult), warns, nil
}
