// Package approvals holds the rules of tier escalation with human approval
// (docs/design.md §6): the three confinement tiers and their
// hop table, which escalations may become questions at all (ValidateHop),
// how an answer becomes a verdict before anything acts on it, the
// deadline, first-answer-wins, the one constructor of ending frames and
// the audit of the frame log. It imports only the standard library and
// does no I/O.
package approvals

import (
	"fmt"
	"strings"
	"time"
)

// Tier is a sandbox confinement tier.
type Tier string

// The tiers, narrowest first.
const (
	ReadOnly         Tier = "read-only"
	WorkspaceWrite   Tier = "workspace-write"
	DangerFullAccess Tier = "danger-full-access"
)

// Tiers lists every tier, narrowest first.
var Tiers = []Tier{ReadOnly, WorkspaceWrite, DangerFullAccess}

// hops is the hop table of docs/design.md §6.1, exactly:
//
//	read-only          -> workspace-write, danger-full-access
//	workspace-write    -> danger-full-access
//	danger-full-access -> (nothing)
//
// One hop is one row lookup, not one step: read-only reaches
// danger-full-access directly because its row lists it.
var hops = map[Tier][]Tier{
	ReadOnly:         {WorkspaceWrite, DangerFullAccess},
	WorkspaceWrite:   {DangerFullAccess},
	DangerFullAccess: {},
}

// Valid reports whether t is one of the three tiers (exact spelling).
func (t Tier) Valid() bool {
	_, ok := hops[t]
	return ok
}

// Hops returns the row of the hop table for from: the tiers one
// escalation may reach from there. Unknown tiers reach nothing.
func Hops(from Tier) []Tier {
	return append([]Tier(nil), hops[from]...)
}

// Reachable reports whether to is in the row of from.
func Reachable(from, to Tier) bool {
	for _, t := range hops[from] {
		if t == to {
			return true
		}
	}
	return false
}

// Targets is the set a tool schema may advertise as reachable in
// principle: every tier that appears in some row. The hop table, not the
// schema, decides what one call may reach (the schema is a menu, not a gate).
func Targets() []Tier {
	var out []Tier
	for _, t := range Tiers {
		for _, from := range Tiers {
			if Reachable(from, t) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// TierNames joins tier names for messages and help.
func TierNames(ts []Tier) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	if len(s) == 0 {
		return "(nothing)"
	}
	return strings.Join(s, ", ")
}

// Session is a sandboxed agent session. Its Tier is the default every call
// starts at; the server is its authority and a grant never writes it back.
type Session struct {
	ID       string    `json:"session_id"`
	Name     string    `json:"name,omitempty"`
	Tier     Tier      `json:"tier"`
	OpenedBy string    `json:"opened_by,omitempty"`
	OpenedAt time.Time `json:"opened_at"`
}

// Verdict is how an escalation ended. The answer set is defined before
// any client: approved, refused, timed-out, cancelled.
type Verdict string

// Verdicts.
const (
	Approved  Verdict = "approved"
	Refused   Verdict = "refused"
	TimedOut  Verdict = "timed-out"
	Cancelled Verdict = "cancelled"
)

// Valid reports whether v is one of the four verdicts.
func (v Verdict) Valid() bool {
	switch v {
	case Approved, Refused, TimedOut, Cancelled:
		return true
	}
	return false
}

// State is where an approval record stands.
type State string

// States of an approval record.
const (
	Pending  State = "pending"
	Resolved State = "resolved"
)

// Valid reports whether s is one of the states.
func (s State) Valid() bool { return s == Pending || s == Resolved }

// Cause says why a verdict was reached.
type Cause string

// Causes say why a verdict was reached. Hop refusals use their Rule as cause.
const (
	CauseAnswer       Cause = "answer"            // a person answered
	CauseUnreadable   Cause = "unreadable-answer" // the answer could not be read: a refusal
	CauseNoSubscriber Cause = "no-subscriber"     // nobody could have answered: a refusal
	CauseChannelError Cause = "channel-error"     // the store failed while asking or waiting: a refusal
	CauseDeadline     Cause = "deadline"          // nobody answered in time
	CauseRequester    Cause = "requester"         // the requester withdrew (Ctrl-C, approvals cancel)
	// CauseClientGone: the client that asked went away while waiting (an
	// MCP client cancelled its request or disconnected). The question is
	// cancelled like a withdrawal, but the person is told why.
	CauseClientGone Cause = "client-gone"
)

// Valid reports whether c is one of the causes or one of the hop rules.
func (c Cause) Valid() bool {
	switch c {
	case CauseAnswer, CauseUnreadable, CauseNoSubscriber, CauseChannelError, CauseDeadline, CauseRequester, CauseClientGone,
		RuleUnknownTier, RuleOtherSession, RuleRatchet, RulePending, RuleNotInRow:
		return true
	}
	return false
}

// Approval is the stored record of one escalation request. When Asked it
// was a question: delivered to the session's subscribers with a deadline.
// A request refused before it could be asked (a hop refusal, no live
// subscriber, a store error) is recorded with Asked false and is already
// resolved; it has no frames.
type Approval struct {
	ID        string `json:"approval_id"`
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id"`
	// From is the tier the call stood at when it asked.
	From Tier `json:"from_tier,omitempty"`
	// To is the target as requested (it may be no tier at all).
	To        Tier      `json:"to_tier"`
	Preview   string    `json:"preview,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Requester string    `json:"requester,omitempty"`
	Asked     bool      `json:"asked"`
	State     State     `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	Deadline  time.Time `json:"deadline"`
	// RemindAt, if set, is when the second line is told of the question
	// if nobody has answered it by then (ReminderAt).
	RemindAt *time.Time `json:"remind_at,omitempty"`
	// TwoPerson says the person's two-person rule covers the question
	// (TwoPersonFrom): it is approved only by two different approvers.
	TwoPerson bool `json:"two_person,omitempty"`
	// FirstApproval is the first of a two-person question's approvals,
	// recorded while it stays pending.
	FirstApproval *FirstApproval `json:"first_approval,omitempty"`

	Verdict    Verdict    `json:"verdict,omitempty"`
	Cause      Cause      `json:"cause,omitempty"`
	Detail     string     `json:"detail,omitempty"`
	AnsweredBy string     `json:"answered_by,omitempty"`
	Answer     string     `json:"answer,omitempty"` // the raw answer as received, bounded
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Announced is set by the store when the ending frame is appended.
	Announced bool `json:"announced"`
}

// Grant is the tier an approval grants to its one call. Only an approved
// approval yields a tier: a refusal never does, so a refused command is
// never run at all (running it at the narrower tier would do the wider
// tier's work by accident: docs/design.md §6.2).
func (a Approval) Grant() (Tier, bool) {
	if a.State == Resolved && a.Verdict == Approved && a.To.Valid() {
		return a.To, true
	}
	return "", false
}

// DefaultTimeout is a question's deadline: a host who walked away has not
// approved anything.
const DefaultTimeout = 120 * time.Second

// Expired reports whether a's deadline has passed at now. The deadline
// itself counts as passed.
func Expired(a Approval, now time.Time) bool { return !now.Before(a.Deadline) }

// Remaining is the time left before a's deadline, never negative.
func Remaining(a Approval, now time.Time) time.Duration {
	if d := a.Deadline.Sub(now); d > 0 {
		return d
	}
	return 0
}

// Decision is an answer already mapped to a verdict.
type Decision struct {
	Verdict Verdict
	Cause   Cause
	By      string
	Detail  string
	Answer  string
}

// maxAnswer bounds the raw answer kept on the record.
const maxAnswer = 200

// VerdictOf maps an answer to a decision before anything acts on it. Only
// an explicit yes approves: true, "approve", "approved", "yes", "y",
// "allow". An explicit no refuses: false, "refuse", "refused", "no", "n",
// "deny". Anything else — an unknown word, a number, a structure, nothing
// at all — is unreadable, and an unreadable answer is a refusal.
func VerdictOf(answer any) Decision {
	raw := fmt.Sprint(answer)
	if len(raw) > maxAnswer {
		raw = raw[:maxAnswer] + "…"
	}
	switch v := answer.(type) {
	case bool:
		if v {
			return Decision{Verdict: Approved, Cause: CauseAnswer, Answer: raw}
		}
		return Decision{Verdict: Refused, Cause: CauseAnswer, Answer: raw}
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "approve", "approved", "yes", "y", "allow":
			return Decision{Verdict: Approved, Cause: CauseAnswer, Answer: raw}
		case "refuse", "refused", "no", "n", "deny":
			return Decision{Verdict: Refused, Cause: CauseAnswer, Answer: raw}
		}
	}
	return Decision{Verdict: Refused, Cause: CauseUnreadable, Answer: raw,
		Detail: "the answer could not be read as approve or refuse; an unreadable answer is a refusal"}
}

// FirstApproval is who approved a two-person question first, and when.
type FirstApproval struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Resolve applies a decision to a pending approval at now. ok is false
// when a is no longer pending: the first answer won and later answers
// change nothing (the caller reports the recorded verdict). A decision at
// or after the deadline is a timeout whatever it said.
//
// A two-person question (TwoPerson) ends on the first refusal or the
// second approval: the first approval is recorded on a, which stays
// pending (ok true); an approval by the approver who approved first counts
// once and changes nothing (ok false, a still pending). Any other decision
// — a refusal, a cancel, the deadline — ends it as for any question.
func Resolve(a Approval, d Decision, now time.Time) (Approval, bool) {
	if a.State != Pending {
		return a, false
	}
	if a.Asked && Expired(a, now) && d.Verdict != TimedOut {
		d = Decision{Verdict: TimedOut, Cause: CauseDeadline, Answer: d.Answer, By: d.By,
			Detail: "the answer arrived at or after the deadline " + a.Deadline.Format(time.RFC3339Nano) + "; it was not applied"}
	}
	if a.TwoPerson && d.Verdict == Approved {
		switch {
		case a.FirstApproval == nil:
			a.FirstApproval = &FirstApproval{By: d.By, At: now}
			return a, true
		case a.FirstApproval.By == d.By:
			return a, false
		}
		d.Detail = "approved by " + a.FirstApproval.By + " and " + d.By + " (two-person rule)"
	}
	if d.Verdict == TimedOut && d.Cause == "" {
		d.Cause = CauseDeadline
	}
	a.State, a.Verdict, a.Cause, a.Detail = Resolved, d.Verdict, d.Cause, d.Detail
	a.AnsweredBy, a.Answer = d.By, d.Answer
	t := now
	a.ResolvedAt = &t
	return a, true
}
