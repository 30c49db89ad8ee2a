// Package settings holds the rules of dont's duration settings: what a
// value may be, whichever source gives it — .dont/config.toml, an
// environment variable of the CLI, `dont serve` or a Lambda function, or
// an operator's argument. Every source parses with the one Duration it
// sets, so that a value one accepts the others accept too. It does no I/O.
package settings

import (
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/errs"
)

// Duration is a setting whose value is a positive Go duration ("90s",
// "24h"), and its bounds.
type Duration struct {
	// Max bounds the value, included; 0 leaves it unbounded.
	Max time.Duration
	// Off says that "0" is a value too, and turns the setting off.
	Off bool
	// Example is a good value, for messages and remediation.
	Example string
}

// Where the settings that more than one front end reads come from: the
// CLI, `dont serve` and the Lambda functions read the same variables.
const (
	EnvSpawnTimeout    = "DONT_SPAWN_TIMEOUT"
	KeySpawnTimeout    = "spawn_timeout" // in .dont/config.toml and an operator's set_project
	EnvSpawnMaxLease   = "DONT_SPAWN_MAX_LEASE"
	KeySpawnMaxLease   = "spawn_max_lease" // in .dont/config.toml
	EnvApprovalTimeout = "DONT_APPROVAL_TIMEOUT"
	// EnvApprovalTimeoutMin and EnvApprovalTimeoutMax bound the deadline
	// a requester may ask for (approval_timeout_min, approval_timeout_max).
	EnvApprovalTimeoutMin = "DONT_APPROVAL_TIMEOUT_MIN"
	EnvApprovalTimeoutMax = "DONT_APPROVAL_TIMEOUT_MAX"
	EnvSubscriberLease    = "DONT_SUBSCRIBER_LEASE"
)

// DefaultSpawnTimeout is the spawn timeout of a project that sets none.
const DefaultSpawnTimeout = 24 * time.Hour

// DefaultSpawnMaxLease bounds how far heartbeats may move a spawn's
// expiry, counted from its issue, in a project that sets none.
const DefaultSpawnMaxLease = 7 * 24 * time.Hour

// The duration settings.
var (
	// SpawnMaxLease is the longest a spawn may live, from its issue, however
	// often it heartbeats (spawn_max_lease, DONT_SPAWN_MAX_LEASE).
	SpawnMaxLease = Duration{Max: 720 * time.Hour, Example: "168h"}
	// SpawnHeartbeat is a heartbeat's --extend: how far from now it moves
	// the expiry (never backwards; capped by SpawnMaxLease).
	SpawnHeartbeat = Duration{Max: 720 * time.Hour, Example: "10m"}
	// SpawnTimeout is how long a spawn waits for its callback
	// (spawn_timeout, DONT_SPAWN_TIMEOUT, an operator's set_project).
	SpawnTimeout = Duration{Max: 720 * time.Hour, Example: "24h"}
	// ApprovalTimeout is an escalation question's deadline
	// (DONT_APPROVAL_TIMEOUT).
	ApprovalTimeout = Duration{Example: "120s"}
	// ApprovalTimeoutMin is the shortest deadline a requester may ask for
	// (approval_timeout_min, DONT_APPROVAL_TIMEOUT_MIN; default 30s, or
	// approval_timeout if shorter).
	ApprovalTimeoutMin = Duration{Max: 720 * time.Hour, Example: "30s"}
	// ApprovalTimeoutMax is the longest deadline a requester may ask for
	// (approval_timeout_max, DONT_APPROVAL_TIMEOUT_MAX; default
	// approval_timeout).
	ApprovalTimeoutMax = Duration{Max: 720 * time.Hour, Example: "15m"}
	// SubscriberLease is how recently a reader of a session's frames makes
	// it watched (DONT_SUBSCRIBER_LEASE).
	SubscriberLease = Duration{Example: "10s"}
	// ApprovalPoll is how often waits and long-polls re-read the table in
	// AWS (DONT_APPROVAL_POLL).
	ApprovalPoll = Duration{Example: "200ms"}
	// FrameRetention is how long approval frames are kept after their
	// question's deadline (frame_retention, DONT_FRAME_RETENTION); 0 keeps
	// them for good. On SQLite a session is forgotten whole once that long
	// has passed since its last question's deadline (retention.go of
	// internal/store/sqlite); on DynamoDB each frame carries ttl.
	FrameRetention = Duration{Off: true, Example: "720h"}
	// DeliveryRetention is how long a finished webhook delivery, and each
	// delivery-log attempt, is kept after it (delivery_retention,
	// DONT_DELIVERY_RETENTION); 0 keeps them for good. A pending delivery
	// is never removed.
	DeliveryRetention = Duration{Off: true, Example: "720h"}
)

// The retention settings' sources. Both are person-only (trust.go): an
// agent that shortened them would erase the record of the questions it
// asked and of who was paged; one that lengthened them grows the store
// toward a full disk, where every write stops.
const (
	EnvFrameRetention    = "DONT_FRAME_RETENTION"
	KeyFrameRetention    = "frame_retention"
	EnvDeliveryRetention = "DONT_DELIVERY_RETENTION"
	KeyDeliveryRetention = "delivery_retention"
)

// EnvApprovalRemindAt and KeyApprovalRemindAt are the share of a
// question's deadline after which, if nobody has answered, the hooks that
// hear approval.reminder are told (0 < share < 1; unset: no reminders).
// A person-only setting: an agent that set it could silence the second
// line, or page it at once.
const (
	EnvApprovalRemindAt = "DONT_APPROVAL_REMIND_AT"
	KeyApprovalRemindAt = "approval_remind_at"
)

// ParseShare reads a share of a deadline: a number strictly between 0
// and 1 ("0.5"), or reports false.
func ParseShare(v string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 0 && f < 1) {
		return 0, false
	}
	return f, true
}

// ShareFromSource reads the share named name (a variable or a config key);
// a bad value is config-invalid, and the remediation sets a good one.
func ShareFromSource(name, v string) (float64, error) {
	f, ok := ParseShare(v)
	if !ok {
		return 0, errs.E(errs.ConfigInvalid, name+" must be a number between 0 and 1 (such as 0.5, half the deadline), got "+strconv.Quote(v),
			errs.Step{Command: KeyApprovalRemindAt + " = 0.5  # in your own ~/.config/dont/config.toml", Description: "remind the second line halfway to the deadline, or remove it for no reminders"}).
			Unmet("0 < " + name + " < 1")
	}
	return f, nil
}

// Parse reads v (surrounding space ignored), or reports false when it is
// not a value of d.
func (d Duration) Parse(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if d.Off && v == "0" {
		return 0, true
	}
	got, err := time.ParseDuration(v)
	if err != nil || got <= 0 || (d.Max > 0 && got > d.Max) {
		return 0, false
	}
	return got, true
}

// Rule says in words what a value of d is: "a positive Go duration",
// "a positive Go duration up to 720h", with "or 0 to turn it off" when d
// allows it.
func (d Duration) Rule() string {
	rule := "a positive Go duration"
	if d.Max > 0 {
		rule += " up to " + short(d.Max)
	}
	if d.Off {
		rule += ", or 0 to turn it off"
	}
	return rule
}

// clause is the unmet clause of a bad value of d named name.
func (d Duration) clause(name string) string {
	if d.Max > 0 {
		return "0 < " + name + " <= " + short(d.Max)
	}
	return name + " > 0"
}

func (d Duration) message(name, v string) string {
	return name + " must be " + d.Rule() + " (such as " + d.Example + "), got " + strconv.Quote(v)
}

// FromEnv reads the value of the environment variable name. A bad value
// is config-invalid, and the remediation sets a good one.
func (d Duration) FromEnv(name, v string) (time.Duration, error) {
	got, ok := d.Parse(v)
	if !ok {
		return 0, errs.E(errs.ConfigInvalid, d.message(name, v),
			errs.Step{Command: "export " + name + "=" + d.Example, Description: "set " + d.Rule() + ", or unset it for the default"}).Unmet(d.clause(name))
	}
	return got, nil
}

// FromConfig reads the value of key in .dont/config.toml. A bad value is
// config-invalid.
func (d Duration) FromConfig(key, v string) (time.Duration, error) {
	got, ok := d.Parse(v)
	if !ok {
		return 0, errs.E(errs.ConfigInvalid, d.message(key, v),
			errs.Step{Command: key + " = " + strconv.Quote(d.Example) + "  # in .dont/config.toml", Description: "set " + d.Rule() + ", or remove it for the default"}).Unmet(d.clause(key))
	}
	return got, nil
}

// FromArgument reads the argument name of an operation. A bad value is
// invalid-argument; steps, if any, are the caller's remediation.
func (d Duration) FromArgument(name, v string, steps ...errs.Step) (time.Duration, error) {
	got, ok := d.Parse(v)
	if !ok {
		if len(steps) == 0 {
			steps = []errs.Step{{Command: name + "=" + d.Example, Description: "give " + name + " as " + d.Rule()}}
		}
		return 0, errs.E(errs.InvalidArgument, d.message(name, v), steps...).Unmet(d.clause(name))
	}
	return got, nil
}

// short writes a duration without its zero tail: 720h, not 720h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
