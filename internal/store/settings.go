package store

import (
	"context"
	"time"
)

// SettingsStore keeps a project's own settings: in a store shared by many
// projects (an embedded project keeps them in .dont/config.toml).
type SettingsStore interface {
	// Settings reads them; a project that set none has the zero value.
	Settings(ctx context.Context) (ProjectSettings, error)
	// PutSettings replaces them.
	PutSettings(ctx context.Context, ps ProjectSettings) error
}

// ProjectSettings are one project's own settings. Zero values leave the
// deployment's defaults.
type ProjectSettings struct {
	// SpawnTimeout is how long the project's spawns wait for a callback.
	SpawnTimeout time.Duration `json:"spawn_timeout,omitempty"`
	// SpawnMaxLease bounds the project's heartbeats (spawn_max_lease).
	SpawnMaxLease time.Duration `json:"spawn_max_lease,omitempty"`
}
