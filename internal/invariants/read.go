package invariants

import (
	"context"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// Source is the small read port the checker needs; every store.Store
// satisfies it.
type Source interface {
	ListEntities(ctx context.Context, f store.EntityFilter) ([]ledger.Entity, error)
	Events(ctx context.Context, entityID string) ([]ledger.Event, error)
	ListSpawns(ctx context.Context, f store.SpawnFilter) ([]spawn.Spawn, error)
}

// AllEvents is implemented by stores that can list every event in one read
// (SQLite); others are read entity by entity, plus the entity-less events.
type AllEvents interface {
	AllEvents(ctx context.Context) ([]ledger.Event, error)
}

// Read gathers Data from a store. Run it on a quiescent store: the reads
// are not one snapshot, so a write landing between them can look like a
// violation.
func Read(ctx context.Context, src Source) (Data, error) {
	var d Data
	var err error
	if d.Entities, err = src.ListEntities(ctx, store.EntityFilter{}); err != nil {
		return d, err
	}
	if d.Spawns, err = src.ListSpawns(ctx, store.SpawnFilter{}); err != nil {
		return d, err
	}
	if all, ok := src.(AllEvents); ok {
		if d.Events, err = all.AllEvents(ctx); err != nil {
			return d, err
		}
	} else {
		// Entity-less events (a guess spawn's request, timeout and
		// answer-less endings) are kept under "" by some stores and under
		// the request id by others (DynamoDB): read both, once each.
		subjects := []string{""}
		for _, e := range d.Entities {
			subjects = append(subjects, e.ID)
		}
		for _, sp := range d.Spawns {
			if sp.EntityID == "" {
				subjects = append(subjects, sp.ID)
			}
		}
		seen := map[string]bool{}
		for _, id := range subjects {
			evs, err := src.Events(ctx, id)
			if err != nil {
				return d, err
			}
			for _, ev := range evs {
				if !seen[ev.ID] {
					seen[ev.ID] = true
					d.Events = append(d.Events, ev)
				}
			}
		}
	}
	if as, ok := src.(store.ApprovalStore); ok {
		if err := readApprovals(ctx, as, &d); err != nil {
			return d, err
		}
	}
	return d, nil
}

// readApprovals reads every session's frames, then the records (a frame
// and its record's announced mark commit together, so frames first).
func readApprovals(ctx context.Context, st store.ApprovalStore, d *Data) error {
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return err
	}
	for _, ses := range sessions {
		for after := int64(0); ; {
			page, err := st.Frames(ctx, ses.ID, after, 1000)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			d.Frames = append(d.Frames, page...)
			after = page[len(page)-1].Cursor
		}
	}
	d.Approvals, err = st.ListApprovals(ctx, store.ApprovalFilter{})
	return err
}
