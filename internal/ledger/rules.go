package ledger

import (
	"regexp"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/errs"
)

// Action is a status-changing verb.
type Action string

// Status-changing verbs, named by their effect; the values are the CLI
// verbs. `dont trust` = doubt it; `dont dismiss` (the doubt) = verify it.
const (
	Doubt  Action = "trust"
	Verify Action = "dismiss"
	Lock   Action = "lock"
	Ignore Action = "ignore"
	Reopen Action = "reopen"
)

// EventKind is the event an action records.
func (a Action) EventKind() EventKind {
	switch a {
	case Doubt:
		return EvTrusted
	case Verify:
		return EvDismissed
	case Lock:
		return EvLocked
	case Ignore:
		return EvIgnored
	}
	return EvReopened
}

// The clauses an invalid transition reports unmet first; what the caller
// can run next for each is internal/present's.
const (
	UnmetVerifiedFirst = "status must be verified"
	UnmetLockedIsFinal = "locked entities are final"
	UnmetReopenFirst   = "ignored entities must be reopened first"
)

// Next returns the status an action moves from to, or an invalid-transition error.
func Next(id string, from Status, a Action) (Status, error) {
	var to Status
	allowed := false
	switch a {
	case Doubt:
		to, allowed = Doubted, !from.Terminal()
	case Verify:
		to, allowed = Verified, !from.Terminal()
	case Lock:
		to, allowed = Locked, from == Verified
	case Ignore:
		to, allowed = Ignored, !from.Terminal()
	case Reopen:
		to, allowed = Unverified, from != Unverified && from != Locked
	}
	if allowed {
		return to, nil
	}
	e := errs.E(errs.InvalidTransition, string(a)+" is not allowed from "+string(from)).On(id).In("ledger.next")
	switch {
	case a == Lock && !from.Terminal():
		e.Unmet(UnmetVerifiedFirst)
	case from == Locked:
		e.Unmet(UnmetLockedIsFinal)
	case from == Ignored:
		e.Unmet(UnmetReopenFirst)
	default:
		e.Unmet("status must not already be " + string(from))
	}
	return "", e
}

// CascadesStale reports whether a dependent in status s goes stale when a
// dependency is doubted.
func CascadesStale(s Status) bool { return s == Unverified || s == Verified }

// CheckReason refuses an empty reason and a reason made only of hedges
// ("maybe wrong", "seems off"): doubt must name a specific flaw. The same
// rule judges a provider's verdict (internal/llm): IsHedge.
func CheckReason(id, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errs.E(errs.EmptyReason, "a reason is required").On(id).Unmet("reason must not be empty")
	}
	if IsHedge(reason) {
		return errs.E(errs.HedgeReason, "the reason only hedges: "+strings.TrimSpace(reason)).On(id).
			Unmet("reason must name a specific flaw, source or counter-example")
	}
	return nil
}

// CheckEvidence accepts well-formed URIs and CURIEs (WellFormedEvidence).
// It never touches the network.
func CheckEvidence(id string, evidence []string) error {
	if len(evidence) == 0 {
		return errs.E(errs.InvalidEvidence, "at least one `evidence` is required").On(id).Unmet("evidence must not be empty")
	}
	for _, ev := range evidence {
		if !WellFormedEvidence(ev) {
			return errs.E(errs.InvalidEvidence, "not a URI or CURIE: "+quote(ev)).On(id).
				Unmet("evidence must be scheme:… or prefix:local with no spaces; scheme://… names a host (file:///… a path)")
		}
	}
	return nil
}

// curieRe matches a term's CURIE (prefix:local); it is compiled on first
// use: every CLI run pays for package initialisation, few check a term.
var curieRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*:[^\s]+$`) })

// CheckCurie accepts prefix:local.
func CheckCurie(curie string) error {
	if !curieRe().MatchString(curie) || strings.HasPrefix(curie, "claim:") || strings.HasPrefix(curie, "term:") {
		return errs.E(errs.InvalidArgument, "not a CURIE: "+quote(curie)).Unmet("a term is named prefix:local, e.g. ex:Widget")
	}
	return nil
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return "\"" + s + "\""
}
