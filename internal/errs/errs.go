// Package errs is dont's one error type. Every error carries a stable
// kebab-case code, a one-line message, the entity it concerns and the
// remediation the caller can run next. Exit codes and HTTP statuses derive
// from the code here and nowhere else.
package errs

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
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
	Remediation  []Step   `json:"remediation"`
	// Err is the underlying cause; it is never shown to callers.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	if e.EntityID != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.EntityID)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error. Remediation must not be empty: if the call site gives
// none, the code's default remediation is used.
func E(code Code, msg string, steps ...Step) *Error {
	e := &Error{Code: code, Message: msg, UnmetClauses: []string{}, Remediation: steps}
	if len(e.Remediation) == 0 {
		e.Remediation = []Step{catalogue[code].fallback}
	}
	return e
}

// On sets the entity the error concerns.
// Generic remediation that says <id> is filled in with it.
func (e *Error) On(entityID string) *Error {
	e.EntityID = entityID
	steps := make([]Step, len(e.Remediation))
	for i, s := range e.Remediation {
		s.Command = strings.ReplaceAll(s.Command, "<id>", entityID)
		steps[i] = s
	}
	e.Remediation = steps
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

// Exit codes, documented in the README.
const (
	ExitOK        = 0
	ExitRefusal   = 1
	ExitUsage     = 2
	ExitState     = 3
	ExitInternal  = 4
	ExitInterrupt = 130
	ExitTerminate = 143
)

type class struct {
	exit     int
	status   int
	fallback Step
}

// The codes dont can emit.
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
	StoreError         Code = "store-error"
	Conflict           Code = "conflict"
	Interrupted        Code = "interrupted"
	Internal           Code = "internal"
)

var catalogue = map[Code]class{
	Usage:              {ExitUsage, http.StatusBadRequest, Step{"dont help", "show the commands and their flags"}},
	InvalidArgument:    {ExitUsage, http.StatusBadRequest, Step{"dont help", "check the command's arguments"}},
	InvalidID:          {ExitUsage, http.StatusBadRequest, Step{"dont list --json", "list entity ids (they look like claim:01HX…)"}},
	EmptyReason:        {ExitRefusal, http.StatusUnprocessableEntity, Step{"dont trust <id> --reason \"<the specific flaw>\"", "give a specific, non-empty reason"}},
	HedgeReason:        {ExitRefusal, http.StatusUnprocessableEntity, Step{"dont trust <id> --reason \"<the specific flaw>\"", "name the concrete problem instead of hedging"}},
	InvalidEvidence:    {ExitRefusal, http.StatusUnprocessableEntity, Step{"dont dismiss <id> --evidence https://…", "cite evidence as a URI (scheme:…) or CURIE (prefix:local)"}},
	InvalidTransition:  {ExitRefusal, http.StatusConflict, Step{"dont show <id> --history", "see the entity's status and history"}},
	NotFound:           {ExitState, http.StatusNotFound, Step{"dont list --json", "list the entities that exist"}},
	AlreadyExists:      {ExitRefusal, http.StatusConflict, Step{"dont show <id>", "inspect the existing entity"}},
	DependencyNotFound: {ExitRefusal, http.StatusUnprocessableEntity, Step{"dont list --json", "depend only on entities that exist"}},
	SpawnPending:       {ExitRefusal, http.StatusConflict, Step{"dont spawns --pending --json", "wait for or resolve the pending spawn"}},
	SpawnNotFound:      {ExitState, http.StatusNotFound, Step{"dont spawns --all --json", "list known spawn request ids"}},
	SpawnExpired:       {ExitState, http.StatusGone, Step{"dont assume <id>", "request a new verification round"}},
	SpawnMismatch:      {ExitRefusal, http.StatusConflict, Step{"dont spawns --all --json", "use the request id issued for this entity"}},
	NotInitialised:     {ExitState, http.StatusServiceUnavailable, Step{"dont init", "create .dont/ in the project folder (or set DONT_PROJECT_DIR)"}},
	AlreadyInitialised: {ExitRefusal, http.StatusConflict, Step{"dont list", "the project is ready; use it"}},
	ConfigMissing:      {ExitState, http.StatusServiceUnavailable, Step{"dont help config", "set the missing settings in .dont/config.toml or the environment"}},
	ConfigInvalid:      {ExitState, http.StatusServiceUnavailable, Step{"dont help config", "fix .dont/config.toml or the environment variable"}},
	DBLocked:           {ExitState, http.StatusServiceUnavailable, Step{"dont list", "retry: another process holds the database"}},
	StoreError:         {ExitState, http.StatusInternalServerError, Step{"dont doctor", "check the store; retry the command"}},
	Conflict:           {ExitState, http.StatusConflict, Step{"dont show <id>", "re-read the entity and retry"}},
	Interrupted:        {ExitInterrupt, 499, Step{"dont show <id>", "nothing was written; re-run the command"}},
	Internal:           {ExitInternal, http.StatusInternalServerError, Step{"dont doctor", "report the bug with the request id from meta"}},
}

// Register adds codes from other packages (approvals, tokens, …) so that the
// exit code and HTTP status still come from one table.
func Register(code Code, exit, status int, fallback Step) {
	catalogue[code] = class{exit, status, fallback}
}

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	c, ok := catalogue[As(err).Code]
	if !ok {
		return ExitInternal
	}
	return c.exit
}

// HTTPStatus maps an error to the HTTP status of an API response.
func HTTPStatus(err error) int {
	c, ok := catalogue[As(err).Code]
	if !ok {
		return http.StatusInternalServerError
	}
	return c.status
}

// Codes lists every registered code, sorted; tests walk it.
func Codes() []Code {
	out := make([]Code, 0, len(catalogue))
	for c := range catalogue {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
