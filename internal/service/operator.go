package service

import (
	"context"
	"errors"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store"
)

// Operator actions: what an operator does to a project of a store shared
// by many projects, where no bearer token can do it yet (the first token)
// or should (the project's own settings). No tool runs them; the front end
// that calls them decides who is an operator (the api function: whoever
// IAM lets invoke it directly, an event API Gateway never sends).

// SettingsUnavailable: the store keeps no project settings (an embedded
// project keeps them in .dont/config.toml).
const SettingsUnavailable errs.Code = "settings-unavailable"

// OperatorTokenInput is an operator's request for a token of the project.
type OperatorTokenInput struct {
	// Role is the token's role: admin when empty.
	Role string
	// Name names the token: DefaultOperatorTokenName when empty.
	Name string
}

// DefaultOperatorTokenName names a token an operator made without naming it.
const DefaultOperatorTokenName = "operator"

// CreateOperatorToken makes a bearer token for an operator, and with it
// the project: the project's callback secret is made here, unless it has
// one (authenticating a request only ever reads it; an authenticated
// caller's first spawn makes it in a project older than this). A bad role
// is refused before anything is written.
func (s *Credentials) CreateOperatorToken(ctx context.Context, in OperatorTokenInput) (TokenView, error) {
	role, name := in.Role, in.Name
	if role == "" {
		role = auth.RoleAdmin
	}
	if name == "" {
		name = DefaultOperatorTokenName
	}
	ts, err := s.tokens()
	if err != nil {
		return TokenView{}, err
	}
	if !auth.ValidRole(role) {
		return s.Create(ctx, role, name) // refuses the role, writing nothing
	}
	if _, err := ts.CreateProjectSecret(ctx); err != nil {
		return TokenView{}, errs.E(errs.StoreError, "cannot create the project's callback secret: "+err.Error()).Wrap(err)
	}
	return s.Create(ctx, role, name)
}

// ProjectSettingsInput is an operator's new settings for the project, each
// as the operator wrote it.
type ProjectSettingsInput struct {
	// SpawnTimeout is a Go duration held to settings.SpawnTimeout, the
	// rule spawn_timeout and DONT_SPAWN_TIMEOUT follow too.
	SpawnTimeout string
	// SpawnMaxLease, if given, is held to settings.SpawnMaxLease ("":
	// the deployment's default).
	SpawnMaxLease string
}

// ProjectSettingsView is a project's settings as an operator set them.
type ProjectSettingsView struct {
	Project       string `json:"project,omitempty"`
	SpawnTimeout  string `json:"spawn_timeout"`
	SpawnMaxLease string `json:"spawn_max_lease,omitempty"`
}

// SetProjectSettings replaces the project's own settings. A bad value is
// refused before anything is written. Services already built keep the
// spawn timeout they were built with: the front end that keeps them
// rebuilds them.
func (s *Service) SetProjectSettings(ctx context.Context, in ProjectSettingsInput) (ProjectSettingsView, error) {
	if s.Settings == nil {
		return ProjectSettingsView{}, errs.E(SettingsUnavailable, "this store keeps no project settings")
	}
	d, err := settings.SpawnTimeout.FromArgument(settings.KeySpawnTimeout, in.SpawnTimeout)
	if err != nil {
		return ProjectSettingsView{}, err
	}
	ps := store.ProjectSettings{SpawnTimeout: d}
	if in.SpawnMaxLease != "" {
		if ps.SpawnMaxLease, err = settings.SpawnMaxLease.FromArgument(settings.KeySpawnMaxLease, in.SpawnMaxLease); err != nil {
			return ProjectSettingsView{}, err
		}
	}
	if err := s.Settings.PutSettings(ctx, ps); err != nil {
		return ProjectSettingsView{}, errs.E(errs.StoreError, "cannot store the project's settings: "+err.Error()).Wrap(err)
	}
	v := ProjectSettingsView{SpawnTimeout: d.String(), Project: s.Project}
	if ps.SpawnMaxLease > 0 {
		v.SpawnMaxLease = ps.SpawnMaxLease.String()
	}
	return v, nil
}

// SecretRotationView is the answer to a rotation: the version new callback
// tokens are made under from now on.
type SecretRotationView struct {
	Project string `json:"project,omitempty"`
	KeyID   string `json:"key_id"`
	// Previous is the version tokens were made under until now; they keep
	// verifying under it.
	Previous string `json:"previous_key_id"`
}

// RotateProjectSecret makes a new version of the project's callback
// secret (an operator's action): spawns issued from now on carry tokens
// made under it, and tokens already issued keep verifying under the
// version they name. A store whose secret does not rotate refuses it.
func (s *Credentials) RotateProjectSecret(ctx context.Context) (SecretRotationView, error) {
	ts, err := s.tokens()
	if err != nil {
		return SecretRotationView{}, err
	}
	rs, ok := ts.(store.RotatingSecrets)
	if !ok {
		return SecretRotationView{}, errs.E(errs.InvalidArgument, "this store's project secret does not rotate")
	}
	previous, _, err := rs.CurrentSecret(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return SecretRotationView{}, errs.E(errs.NotFound, "the project has no secret yet: create its first token").With("project", s.Project)
	}
	if err != nil {
		return SecretRotationView{}, storeErr(err)
	}
	keyID, err := rs.RotateSecret(ctx)
	if errors.Is(err, store.ErrConflict) {
		return SecretRotationView{}, errs.E(errs.Conflict, "another rotation of the project's secret won; nothing was written").With("project", s.Project)
	}
	if err != nil {
		return SecretRotationView{}, storeErr(err)
	}
	return SecretRotationView{Project: s.Project, KeyID: keyID, Previous: previous}, nil
}
