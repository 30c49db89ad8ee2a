//go:build !faulthooks

package main

import (
	"time"

	"github.com/dont-cli/dont/internal/passphrase"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// storeHooks is the embedded store's fault hooks: none in the binary as
// shipped (see the package comment and faulthooks.go).
func (a *app) storeHooks() sqlite.Hooks { return sqlite.Hooks{} }

// storeSynchronous is the embedded store's synchronous setting: FULL,
// every acknowledged write survives a power loss (docs/design.md).
func (a *app) storeSynchronous() sqlite.Synchronous { return sqlite.SynchronousFull }

// clock is the service's clock: nil, the wall clock.
func (a *app) clock() func() time.Time { return nil }

// beforeDelivery is a fault point of test builds only (faulthooks.go).
func (a *app) beforeDelivery() {}

// hookFault is a fault point of test builds only (faulthooks.go).
func (a *app) hookFault() {}

// traceApply records the path to spawn.Apply in test builds only
// (faulthooks.go).
func (a *app) traceApply() (stop func()) { return func() {} }

// personalDirs are the person's own folders (internal/personal), found in
// the user database: the binary as shipped reads no variable for them.
func (a *app) personalDirs() (personal.Dirs, error) { return personal.Lookup() }

// passphraseParams is the cost a new passphrase record is hashed at
// (internal/passphrase's Default; a test build may choose less,
// faulthooks.go).
func (a *app) passphraseParams() passphrase.Params { return passphrase.Default }
