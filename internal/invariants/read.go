package invariants

import (
	"context"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// Source is the small read port the checker needs; every service.Store
// satisfies it.
type Source interface {
	ListEntities(ctx context.Context, f service.EntityFilter) ([]ledger.Entity, error)
	Events(ctx context.Context, entityID string) ([]ledger.Event, error)
	ListSpawns(ctx context.Context, f service.SpawnFilter) ([]spawn.Spawn, error)
}

// AllEvents is implemented by stores that can list every event in one read
// (SQLite); others are read entity by entity, plus the entity-less events.
type AllEvents interface {
	AllEvents(ctx context.Context) ([]ledger.Event, error)
}

// ApprovalSource is implemented by stores that hold approvals; Read adds
// them when the store offers it.
type ApprovalSource interface {
	CheckableApprovals(ctx context.Context) ([]Approval, []ledger.Event, error)
}

// Read gathers Data from a store. Run it on a quiescent store: the reads
// are not one snapshot, so a write landing between them can look like a
// violation.
func Read(ctx context.Context, src Source) (Data, error) {
	var d Data
	var err error
	if d.Entities, err = src.ListEntities(ctx, service.EntityFilter{}); err != nil {
		return d, err
	}
	if all, ok := src.(AllEvents); ok {
		if d.Events, err = all.AllEvents(ctx); err != nil {
			return d, err
		}
	} else {
		ids := []string{""} // entity-less events: guess requests and their timeouts
		for _, e := range d.Entities {
			ids = append(ids, e.ID)
		}
		for _, id := range ids {
			evs, err := src.Events(ctx, id)
			if err != nil {
				return d, err
			}
			d.Events = append(d.Events, evs...)
		}
	}
	if d.Spawns, err = src.ListSpawns(ctx, service.SpawnFilter{}); err != nil {
		return d, err
	}
	if as, ok := src.(ApprovalSource); ok {
		if d.Approvals, d.TerminalEvents, err = as.CheckableApprovals(ctx); err != nil {
			return d, err
		}
	}
	return d, nil
}
