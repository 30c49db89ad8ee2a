package approvals

import "sort"

// Rules a hop check can refuse by. Each is also the error code the
// requester receives and the cause recorded on the refused request.
const (
	RuleUnknownTier  Cause = "unknown-tier"            // the target names no tier
	RuleOtherSession Cause = "call-of-another-session" // the call belongs to another session
	RuleRatchet      Cause = "hop-ratchet"             // the call was already widened once
	RulePending      Cause = "escalation-pending"      // the call already has an open question
	RuleNotInRow     Cause = "hop-not-allowed"         // the target is not in the row of the call's current tier
)

// Call is what is known about one call id when an escalation for it
// arrives, derived from the approval records (CallOf).
type Call struct {
	ID string `json:"call_id"`
	// Owner is the session the call belongs to ("" if never seen).
	Owner string `json:"owner,omitempty"`
	// Current is the tier the call stands at: its grant if it was widened,
	// else the requesting session's default.
	Current Tier `json:"current_tier"`
	// Widened names the approval that widened the call, if any.
	Widened string `json:"widened_by,omitempty"`
	// Pending names the call's open question, if any.
	Pending string `json:"pending,omitempty"`
}

// CallOf derives the state of callID for a request from session (whose
// default tier is sessionTier) out of every approval record that names the
// call. A call belongs to the session of its first record, except records
// that were themselves refused for naming another session's call.
func CallOf(session string, sessionTier Tier, callID string, records []Approval) Call {
	rs := append([]Approval(nil), records...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].CreatedAt.Before(rs[j].CreatedAt) })
	c := Call{ID: callID, Current: sessionTier}
	for _, r := range rs {
		if r.CallID != callID || r.Cause == RuleOtherSession {
			continue
		}
		if c.Owner == "" {
			c.Owner = r.SessionID
		}
		if r.SessionID != c.Owner {
			continue
		}
		if r.State == Pending {
			c.Pending = r.ID
		}
		if g, ok := r.Grant(); ok {
			c.Widened, c.Current = r.ID, g
		}
	}
	return c
}

// Refusal is a hop check's "no". It happens before any question exists:
// there is nothing to approve.
type Refusal struct {
	Rule    Cause
	Message string
}

func (r *Refusal) Error() string { return string(r.Rule) + ": " + r.Message }

// ValidateHop decides whether session may ask to widen call to target.
// It runs before the channel is consulted, at execution: the value is
// per-call, so no schema can decide it. In order, it refuses a target that
// names no tier, a call that belongs to another session, a second
// widening of a call already widened (the ratchet), a call whose question
// is still open, and a target outside the row of the call's current tier
// (which includes every non-widening target).
func ValidateHop(session string, call Call, to Tier) *Refusal {
	switch {
	case !to.Valid():
		return &Refusal{RuleUnknownTier, "unknown tier " + quote(string(to)) + "; tiers are " + TierNames(Tiers)}
	case call.Owner != "" && call.Owner != session:
		return &Refusal{RuleOtherSession, "call " + quote(call.ID) + " belongs to another session; a grant never crosses sessions"}
	case call.Widened != "":
		return &Refusal{RuleRatchet, "call " + quote(call.ID) + " was already widened to " + string(call.Current) + " by " + call.Widened + "; a call is widened at most once"}
	case call.Pending != "":
		return &Refusal{RulePending, "call " + quote(call.ID) + " already has an open question " + call.Pending}
	case !Reachable(call.Current, to):
		return &Refusal{RuleNotInRow, "the call stands at " + string(call.Current) + ", whose row reaches " + TierNames(hops[call.Current]) + ", not " + string(to)}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}
