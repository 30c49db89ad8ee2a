// Package envelope is the JSON shape of every dont output: CLI --json,
// every API response and every MCP result.
package envelope

import (
	"bytes"
	"encoding/json"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
)

// Version of the envelope shape; bump on breaking changes.
const Version = "1"

// Warning is a non-fatal note about what happened, with a stable code.
type Warning struct {
	Code      WarningCode `json:"code"`
	Message   string      `json:"message"`
	RequestID string      `json:"request_id,omitempty"`
	Outcome   string      `json:"outcome,omitempty"`
}

// WarningCode is a warning's stable code. A warning that reports an error
// the call survived carries that error's code (CodeOf); doctor's warnings
// carry the invariant rule they report.
type WarningCode string

// Warning codes.
const (
	WarnSpawnDuplicate     WarningCode = "spawn-duplicate"
	WarnSpawnLostToTimeout WarningCode = "spawn-lost-to-timeout"
	WarnSpawnNotClosed     WarningCode = "spawn-not-closed"
	// WarnSpawnHeartbeatLate: a heartbeat reached a spawn a resolver had
	// already ended (a timeout, a callback, a cancel); it changed nothing.
	WarnSpawnHeartbeatLate WarningCode = "spawn-heartbeat-late"
	// WarnSpawnLeaseCapped: a heartbeat asked for more than the project's
	// spawn_max_lease allows; the expiry moved only as far as the lease.
	WarnSpawnLeaseCapped         WarningCode = "spawn-lease-capped"
	WarnSweepFailed              WarningCode = "sweep-failed"
	WarnConfirmationDuplicate    WarningCode = "confirmation-duplicate"
	WarnConfirmationRecordFailed WarningCode = "confirmation-record-failed"
	WarnAnnounceFailed           WarningCode = "announce-failed"
	WarnApprovalExpired          WarningCode = "approval-expired"
	WarnApprovalAlreadyResolved  WarningCode = "approval-already-resolved"
	WarnSecretNotReplayed        WarningCode = "secret-not-replayed"
)

// CodeOf is the code of a warning that reports an error the call survived.
func CodeOf(c errs.Code) WarningCode { return WarningCode(c) }

// Meta describes the invocation.
type Meta struct {
	DurationMS int64  `json:"duration_ms"`
	RequestID  string `json:"request_id"`
	Mode       string `json:"mode,omitempty"`
}

// Envelope is the product: agents parse it.
type Envelope struct {
	EnvelopeVersion string          `json:"envelope_version"`
	CLIVersion      string          `json:"cli_version"`
	OK              bool            `json:"ok"`
	Kind            string          `json:"envelope_kind"`
	Data            json.RawMessage `json:"data"`
	Hints           []string        `json:"hints"`
	Warnings        []Warning       `json:"warnings"`
	Meta            Meta            `json:"meta"`
}

// KindError is the envelope_kind of every failure.
const KindError = "error"

// New builds a success envelope around data (marshalled once here, so the
// same bytes travel on every transport).
func New(kind string, data any, warnings []Warning, hints []string) (Envelope, error) {
	raw, ok := data.(json.RawMessage)
	if !ok {
		b, err := MarshalData(data)
		if err != nil {
			return Envelope{}, err
		}
		raw = b
	}
	return Envelope{
		EnvelopeVersion: Version, CLIVersion: CLIVersion, OK: true, Kind: kind,
		Data: raw, Hints: nonNil(hints), Warnings: nonNilW(warnings),
	}, nil
}

// Fail builds the error envelope for err, presented through the one
// table (internal/present): its remediation is never empty.
func Fail(err error, warnings []Warning) Envelope {
	e := present.Explain(err)
	b, _ := json.Marshal(e)
	return Envelope{
		EnvelopeVersion: Version, CLIVersion: CLIVersion, OK: false, Kind: KindError,
		Data: b, Hints: []string{}, Warnings: nonNilW(warnings),
	}
}

// MarshalData encodes a payload compactly without HTML escaping, the way
// every transport carries it.
func MarshalData(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// CLIVersion is set at build time with -ldflags.
var CLIVersion = "0.1.0-dev"

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilW(s []Warning) []Warning {
	if s == nil {
		return []Warning{}
	}
	return s
}

// ErrorOf rebuilds the error an error envelope carries, so the CLI exits
// with the same code a local call would.
func ErrorOf(env Envelope) *errs.Error {
	var e errs.Error
	if err := json.Unmarshal(env.Data, &e); err != nil || e.Code == "" {
		return errs.E(errs.Internal, "the server sent an error envelope without a code")
	}
	return &e
}
