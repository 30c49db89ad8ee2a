package spawn

import "errors"

// Verdict is the terminal action of a verification (assume/overlook) in
// direct mode: the same choice a harness subagent makes by running `dont
// dismiss` or `dont trust`. A provider in direct mode returns one; the
// service records it through the callback path.
type Verdict struct {
	// Action is ActionDismiss (the claim holds: dismiss the doubt) or
	// ActionTrust (trust the doubt: the claim does not hold).
	Action string `json:"action"`
	// Evidence lists URIs or CURIEs supporting a dismiss.
	Evidence []string `json:"evidence,omitempty"`
	// Reason is the specific reason for a trust (optional note for a dismiss).
	Reason string `json:"reason,omitempty"`
}

// Verdict actions.
const (
	ActionDismiss = "dismiss"
	ActionTrust   = "trust"
)

// The failures of a direct-mode provider that the service tells apart.
// A provider's errors match them with errors.Is; any other error is a
// provider that gave no answer.
var (
	// ErrProviderTimeout: a request to the provider outlived its
	// per-request timeout or the caller's deadline.
	ErrProviderTimeout = errors.New("provider request timed out")
	// ErrUnusableVerdict: the provider answered a verification, but no
	// valid verdict could be read from the answer.
	ErrUnusableVerdict = errors.New("unusable verdict")
	// ErrUnusableCandidates: the provider answered a guess, but not with
	// enough usable answers.
	ErrUnusableCandidates = errors.New("unusable candidates")
)
