package service

import (
	"context"
	"errors"

	"github.com/dont-cli/dont/internal/store"
)

// Revoked lists the tokens RevokeAll revoked.
type Revoked struct {
	Count   int      `json:"count"`
	Revoked []string `json:"revoked"`
}

// RevokeAll revokes every bearer token of the project at once (an
// incident: a token leaked and nobody knows which). The token that makes
// the call is revoked too; new tokens come from `dont tokens create` on
// the project's own machine, where file access is the root of trust.
func (s *Credentials) RevokeAll(ctx context.Context) (Revoked, error) {
	ts, err := s.tokens()
	if err != nil {
		return Revoked{}, err
	}
	list, err := ts.ListTokens(ctx)
	if err != nil {
		return Revoked{}, storeErr(err)
	}
	revoked := []string{}
	now := s.now()
	for _, t := range list {
		if t.RevokedAt != nil {
			continue
		}
		if err := ts.RevokeToken(ctx, t.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			return Revoked{}, storeErr(err)
		}
		revoked = append(revoked, t.ID)
	}
	s.dropHeldCalls(ctx, revoked...)
	return Revoked{Count: len(revoked), Revoked: revoked}, nil
}
