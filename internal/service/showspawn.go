package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/errs"

	"github.com/dont-cli/dont/internal/spawn"
)

// showSpawn returns a stored spawn request as it was issued: the same
// spawn_request payload, byte for byte (callback token included where the
// store keeps a project secret), that assume, overlook or guess returned, on
// every transport. A hint says where the spawn stands now.
func (s *Service) showSpawn(ctx context.Context, id string, res Result) (Result, error) {
	sp, err := s.spawnRecord(ctx, id)
	if err != nil {
		return res, err
	}
	var req spawn.Request
	if err := json.Unmarshal(sp.Request, &req); err != nil {
		return res, errs.E(errs.Internal, "cannot read the stored spawn request "+sp.ID).Wrap(err)
	}
	payload, err := s.publicRequest(ctx, req)
	if err != nil {
		return res, err
	}
	res.Kind, res.Data = KindSpawnRequest, payload
	state := sp.ID + " is " + string(sp.State)
	if sp.Outcome != "" {
		state += " (" + string(sp.Outcome) + ")"
	}
	if sp.State == spawn.Pending {
		state += "; it expires at " + sp.ExpiresAt.Format(timeFormat)
	}
	res.Hints = append(res.Hints, state)
	return res, nil
}
