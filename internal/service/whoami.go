package service

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
)

// Identity is who a call runs as, as `dont whoami` shows it: the
// principal's id (a token id, never its secret; the embedded name), its
// role, the bearer roles it holds, whether it counts as a person, and the
// project its calls reach ("" for a store of one project).
type Identity struct {
	Principal string   `json:"principal"`
	Role      string   `json:"role"`
	Roles     []string `json:"roles"`
	Person    bool     `json:"person"`
	Project   string   `json:"project,omitempty"`
}

// WhoAmI reports the call's own principal. It reads nothing stored: what
// a transport authenticated is the answer.
func (s *Credentials) WhoAmI(ctx context.Context) Identity {
	p := s.PrincipalOf(ctx)
	id := Identity{Principal: p.ID(), Role: p.Role, Roles: []string{}, Person: p.IsPerson(), Project: p.Project}
	if id.Project == "" {
		id.Project = s.Project
	}
	for _, r := range auth.Roles {
		if p.Holds(r) {
			id.Roles = append(id.Roles, r)
		}
	}
	return id
}
