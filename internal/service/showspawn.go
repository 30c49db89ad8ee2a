package service

import (
	"context"
	"encoding/json"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"

	"github.com/dont-cli/dont/internal/spawn"
)

// IssuedSpawn is a stored spawn and its spawn_request payload as issued.
type IssuedSpawn struct {
	Spawn   spawn.Spawn
	Request json.RawMessage
}

// Show returns a stored spawn request as it was issued: the same
// spawn_request payload that assume, overlook or guess returned, on every
// transport, but for its callback token, which is shown once, at issue,
// to the principal that asked (docs/security.md: a harness reading
// another's spawn must not get its subagent's powers); and the spawn,
// which says where it stands now.
func (s *Spawns) Show(ctx context.Context, id string) (IssuedSpawn, error) {
	var res IssuedSpawn
	sp, err := s.spawnRecord(ctx, id)
	if err == nil {
		sp, err = s.settledSpawn(ctx, sp)
	}
	if err != nil {
		return res, err
	}
	var req spawn.Request
	if err := json.Unmarshal(sp.Request, &req); err != nil {
		return res, errs.E(errs.Internal, "cannot read the stored spawn request "+sp.ID).Wrap(err)
	}
	payload, err := s.publicRequest(ctx, req, false)
	if err != nil {
		return res, err
	}
	return IssuedSpawn{Spawn: sp, Request: payload}, nil
}

// CallbackTokenFor makes the callback token of a pending spawn again, for
// the process that runs its subagent in-process with the store (the
// embedded `dont spawns run`, which opens the store and so holds its
// secret anyway). No tool calls it: over every transport the token is
// shown once, at issue. Only the spawn's requester or a person gets it.
func (s *Credentials) CallbackTokenFor(ctx context.Context, requestID string) (string, error) {
	sp, err := s.spawnRecord(ctx, requestID)
	if err != nil {
		return "", err
	}
	if err := s.mayActOnSpawn(ctx, sp, "run the subagent of"); err != nil {
		return "", err
	}
	ts, err := s.tokens()
	if err != nil {
		return "", err
	}
	keyID, secret, err := issuingSecret(ctx, ts)
	if err != nil {
		return "", storeErr(err)
	}
	return auth.CallbackTokenKeyed(secret, s.Project, keyID, sp.ID), nil
}
