// Package errs is dont's one error type, after upspin's errors.E. An error
// explains itself and says nothing about how it is shown: a stable
// kebab-case code, a one-line message, the entity it concerns, the clauses
// of a rule the input did not meet, and the operation that failed (Op).
//
// Presentation lives in internal/present: one table maps every code to its
// exit code, HTTP status and default remediation, and every transport reads
// it. Nothing registers codes at init.
//
// Remediation is the presentation table's. A row may refine its default by
// the error's first unmet clause or by the kind of what it concerns, so the
// layer that returns an error says which rule refused (Unmet) and what it
// concerns (On, and Args) — never what to run. Args is data, not text to
// show: named values of the call (a request id, a session, a cursor) that
// the table's placeholders name; internal/present fills <id> from the
// entity and <key> from Args["key"]. Args["kind"], when set, is the kind of
// what the error concerns where the entity's id does not say it (the spawn
// kind of a guess, which has no entity).
//
// Only the transports may still carry an explicit override (Remediation,
// the steps given to E), for a step that depends on how they were called;
// the service and the domain packages never write CLI syntax
// (internal/repocheck keeps them so). An error decoded from another
// process's envelope keeps the remediation that process presented.
package errs

import (
	"errors"
	"fmt"
)

// Code is a stable, kebab-case error code. Callers match on codes, never on text.
type Code string

// Step is one thing the caller can run next.
type Step struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// Error is the error every layer returns to front ends.
type Error struct {
	Code         Code     `json:"code"`
	Message      string   `json:"message"`
	EntityID     string   `json:"entity_id,omitempty"`
	UnmetClauses []string `json:"unmet_clauses"`
	// Remediation overrides the code's default remediation; empty means the
	// default (internal/present). See the package comment for who sets it.
	Remediation []Step `json:"remediation"`
	// Args are named values of the call that presentation may fill into
	// placeholders; data, never shown as is. See the package comment.
	Args map[string]string `json:"-"`
	// Op is the operation that failed ("spawn.resolve", "tools.lock"); it is
	// for logs and is never shown to callers.
	Op string `json:"-"`
	// Err is the underlying cause; it is never shown to callers.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.EntityID != "" {
		s = fmt.Sprintf("%s (%s)", s, e.EntityID)
	}
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error. Steps, if any, override the code's default
// remediation; only the transports give them.
func E(code Code, msg string, steps ...Step) *Error {
	return &Error{Code: code, Message: msg, UnmetClauses: []string{}, Remediation: steps}
}

// On sets the entity the error concerns. Remediation that says <id> is
// filled in with it when the error is presented.
func (e *Error) On(entityID string) *Error {
	e.EntityID = entityID
	return e
}

// With records a named value of the call (see Args).
func (e *Error) With(key, value string) *Error {
	if e.Args == nil {
		e.Args = map[string]string{}
	}
	e.Args[key] = value
	return e
}

// In sets the operation that failed, such as "spawn.resolve".
func (e *Error) In(op string) *Error {
	e.Op = op
	return e
}

// Unmet records the clauses of a rule the input did not satisfy.
func (e *Error) Unmet(clauses ...string) *Error {
	e.UnmetClauses = append(e.UnmetClauses, clauses...)
	return e
}

// Wrap keeps an underlying cause for logs.
func (e *Error) Wrap(err error) *Error { e.Err = err; return e }

// As converts any error to *Error; unknown errors become internal errors.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return E(Internal, "internal error").Wrap(err)
}

// Is reports whether err carries the code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// The codes of errors any layer may return. Packages declare the codes
// only they return beside the code that returns them (confirm, service,
// httpapi, …); internal/present holds every one.
const (
	Usage              Code = "usage"
	InvalidArgument    Code = "invalid-argument"
	InvalidID          Code = "invalid-id"
	EmptyReason        Code = "empty-reason"
	HedgeReason        Code = "hedge-reason"
	InvalidEvidence    Code = "invalid-evidence"
	InvalidTransition  Code = "invalid-transition"
	NotFound           Code = "not-found"
	AlreadyExists      Code = "already-exists"
	DependencyNotFound Code = "dependency-not-found"
	SpawnPending       Code = "spawn-pending"
	SpawnNotFound      Code = "spawn-not-found"
	SpawnExpired       Code = "spawn-expired"
	SpawnMismatch      Code = "spawn-mismatch"
	NotInitialised     Code = "not-initialised"
	AlreadyInitialised Code = "already-initialised"
	ConfigMissing      Code = "config-missing"
	ConfigInvalid      Code = "config-invalid"
	DBLocked           Code = "db-locked"
	// DiskNearlyFull: the store refuses writes while its disk has less
	// free space than it keeps in reserve (internal/store/sqlite/space.go).
	DiskNearlyFull Code = "disk-nearly-full"
	StoreError     Code = "store-error"
	Conflict       Code = "conflict"
	Interrupted    Code = "interrupted"
	Internal       Code = "internal"
	// EndpointUnreachable: the API at --endpoint cannot be reached.
	EndpointUnreachable Code = "endpoint-unreachable"
)
