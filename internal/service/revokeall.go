package service

import (
	"context"
	"errors"
)

// RevokeAllTokens revokes every bearer token of the project at once (an
// incident: a token leaked and nobody knows which). The token that makes
// the call is revoked too; new tokens come from `dont tokens create` on
// the project's own machine, where file access is the root of trust.
func (s *Service) RevokeAllTokens(ctx context.Context) (Result, error) {
	ts, err := s.tokens()
	if err != nil {
		return Result{}, err
	}
	list, err := ts.ListTokens(ctx)
	if err != nil {
		return Result{}, storeErr(err)
	}
	revoked := []string{}
	now := s.now()
	for _, t := range list {
		if t.RevokedAt != nil {
			continue
		}
		if err := ts.RevokeToken(ctx, t.ID, now); err != nil && !errors.Is(err, ErrNotFound) {
			return Result{}, storeErr(err)
		}
		revoked = append(revoked, t.ID)
	}
	s.dropHeldCalls(ctx, revoked...)
	return Result{Kind: "tokens_revoked", Data: map[string]any{"revoked": revoked, "count": len(revoked)},
		Hints: []string{"dont tokens create --role <role>  # on the project's machine, to issue new tokens"}}, nil
}
