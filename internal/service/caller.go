package service

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
)

type principalKey struct{}

// WithPrincipal records who a call runs as. Each transport sets it once,
// before the call reaches the tool surface (docs/security.md).
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the call's principal. A call no transport labelled
// (the service's own tests, in-process sweeps) runs as the owner, under
// the service's author.
func (s *core) PrincipalOf(ctx context.Context) auth.Principal {
	if p, ok := ctx.Value(principalKey{}).(auth.Principal); ok {
		return p
	}
	return auth.Owner(s.Author)
}

// actor names who acts on the records that keep it.
func (s *core) actor(ctx context.Context) string {
	if id := s.PrincipalOf(ctx).ID(); id != "" {
		return id
	}
	return s.Author
}
