package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/spawn"
)

// Sentinel errors. Callers test for them with errors.Is; every error this
// package returns matches exactly one of ErrConfig, ErrInvalidArgument,
// ErrProvider, ErrUnusableVerdict or ErrUnusableCandidates.
var (
	// ErrConfig: New was given missing or invalid settings (*ConfigError).
	ErrConfig = errors.New("llm: invalid configuration")
	// ErrInvalidArgument: the caller passed an unusable argument (n < 1,
	// negative temperature, empty prompt).
	ErrInvalidArgument = errors.New("llm: invalid argument")
	// ErrProvider: the provider gave no usable answer: an error status, a
	// network failure, a timeout or a cancellation (*ProviderError).
	ErrProvider = errors.New("llm: provider call failed")
	// ErrRateLimited narrows ErrProvider: the last answer was HTTP 429.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrTimeout narrows ErrProvider: a request outlived its per-request
	// timeout or the caller's deadline. It is the spawn rules'
	// spawn.ErrProviderTimeout, which the service tells apart.
	ErrTimeout = spawn.ErrProviderTimeout
	// ErrUnusableVerdict: the provider answered Judge, but no valid verdict
	// could be read from the answer (*UnusableError); spawn.ErrUnusableVerdict.
	ErrUnusableVerdict = spawn.ErrUnusableVerdict
	// ErrUnusableCandidates: the provider answered Candidates, but not with
	// enough usable answers (*UnusableError); spawn.ErrUnusableCandidates.
	ErrUnusableCandidates = spawn.ErrUnusableCandidates
)

// ConfigError lists the settings New found missing or invalid.
type ConfigError struct {
	// Missing names each missing setting with the variables that set it,
	// e.g. "model (DONT_LLM_MODEL)".
	Missing []string
	// Invalid describes each setting whose value is unusable.
	Invalid []string
}

func (e *ConfigError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing "+strings.Join(e.Missing, ", "))
	}
	if len(e.Invalid) > 0 {
		parts = append(parts, "invalid "+strings.Join(e.Invalid, ", "))
	}
	return "llm: provider configuration: " + strings.Join(parts, "; ")
}

// Is reports whether target is ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// ProviderError reports a provider call that produced no usable answer. It
// never holds the API key: provider messages are scrubbed when it is built.
type ProviderError struct {
	Provider   string // configured provider name
	Op         string // "judge" or "candidates"
	StatusCode int    // HTTP status of the last answer; 0 when none came
	Type       string // the provider's error type or code, e.g. "rate_limit_error"
	Message    string // the provider's error message, scrubbed
	RequestID  string // the provider's request id, when it sent one
	Attempts   int    // requests sent, retries included
	// RetryAfter is the wait the provider asked for on the last answer, if any.
	RetryAfter time.Duration
	// Err is the underlying cause when there is one (context.Canceled,
	// context.DeadlineExceeded, a network error).
	Err error
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: %s %s", e.Provider, e.Op)
	switch {
	case e.timedOut():
		b.WriteString(": timed out")
	case e.Err != nil && errors.Is(e.Err, context.Canceled):
		b.WriteString(": cancelled")
	case e.StatusCode != 0:
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil && !e.timedOut() && !errors.Is(e.Err, context.Canceled) {
		b.WriteString(": " + e.Err.Error())
	}
	var notes []string
	if e.RequestID != "" {
		notes = append(notes, "request "+e.RequestID)
	}
	if e.Attempts > 1 {
		notes = append(notes, fmt.Sprintf("after %d attempts", e.Attempts))
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *ProviderError) Unwrap() error { return e.Err }

// Is matches ErrProvider always, ErrRateLimited for a final HTTP 429 and
// ErrTimeout for a timeout.
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrProvider:
		return true
	case ErrRateLimited:
		return e.StatusCode == 429
	case ErrTimeout:
		return e.timedOut()
	}
	return false
}

// Retryable reports whether the provider may succeed if asked again later:
// HTTP 429 and 5xx answers.
func (e *ProviderError) Retryable() bool {
	return e.Err == nil && (e.StatusCode == 429 || e.StatusCode >= 500)
}

func (e *ProviderError) timedOut() bool {
	return e.Err != nil && errors.Is(e.Err, context.DeadlineExceeded)
}

// UnusableError reports an answer from which no valid verdict or no usable
// candidates could be read. Problem says what was wrong; it never quotes the
// API key, and quotes the model's output only in short.
type UnusableError struct {
	Provider string
	Op       string // "judge" or "candidates"
	Problem  string
}

func (e *UnusableError) Error() string {
	what := "verdict"
	if e.Op == opCandidates {
		what = "candidates"
	}
	if e.Provider == "" {
		return fmt.Sprintf("llm: unusable %s: %s", what, e.Problem)
	}
	return fmt.Sprintf("llm: %s returned an unusable %s: %s", e.Provider, what, e.Problem)
}

// Is matches ErrUnusableVerdict for Judge and ErrUnusableCandidates for
// Candidates.
func (e *UnusableError) Is(target error) bool {
	if e.Op == opCandidates {
		return target == ErrUnusableCandidates
	}
	return target == ErrUnusableVerdict
}

const (
	opJudge      = "judge"
	opCandidates = "candidates"
)

func unusable(provider, op, format string, args ...any) *UnusableError {
	return &UnusableError{Provider: provider, Op: op, Problem: fmt.Sprintf(format, args...)}
}

func invalidArgument(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// snippet shortens model output quoted in an error.
func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
