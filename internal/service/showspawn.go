package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/errs"

	"github.com/dont-cli/dont/internal/spawn"
)

// IssuedSpawn is a stored spawn and its spawn_request payload as issued.
type IssuedSpawn struct {
	Spawn   spawn.Spawn
	Request json.RawMessage
}

// Show returns a stored spawn request as it was issued: the same
// spawn_request payload, byte for byte (callback token included where the
// store keeps a project secret), that assume, overlook or guess returned, on
// every transport, and the spawn, which says where it stands now.
func (s *Spawns) Show(ctx context.Context, id string) (IssuedSpawn, error) {
	var res IssuedSpawn
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
	return IssuedSpawn{Spawn: sp, Request: payload}, nil
}
