// Package linearize checks that dont's spawn protocol is linearizable: it
// records the invocations and responses of concurrent clients against a
// backend (SQLite in-process, the HTTP API, a real `dont serve`) and checks
// the history with porcupine against a sequential model of the resolver
// rules. The model is docs/design.md §5.4 written as a state machine:
//
//   - exactly one terminal resolver (callback or timeout) per request id;
//   - a resolver that loses changes nothing and sees the winner's outcome;
//   - a late callback with no committed resolver applies (with a
//     spawn-expired warning);
//   - a timeout restores the pre-spawn status only if the entity did not
//     move since the spawn moved it;
//   - a move of an entity under review is refused (an agent's) or ends
//     its spawn as cancelled (a person's);
//   - a heartbeat of a pending spawn that is not due moves its expiry to
//     now + extend if that is later, and changes nothing else; one that
//     finds the spawn resolved (or due: its sweep times it out first)
//     changes nothing and warns.
//
// Histories are partitioned by entity: every entity is an independent
// object, and a sweep is split into one operation per entity (a sweep is a
// series of one-spawn transactions inside its own interval, so its effect
// on one entity is atomic). Timeouts that other invocations' sweeps commit
// are invisible; the model lets one happen before any step once the spawn
// can have been due.
package linearize

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Kind is an operation of the workload.
type Kind int

// Operations.
const (
	Assume   Kind = iota // assume <entity>
	Callback             // dismiss|trust <entity> --request-id <id>
	Move                 // trust|dismiss|reopen|lock <entity> without a request id
	Sweep                // one entity's share of a sweep
	Expire               // the queue-driven timeout of one request (service.ExpireSpawn)
	Show                 // show <entity>

	// Tier escalation: the partition is the approval id.
	Ask            // escalate --no-wait: a question with a deadline
	Answer         // approvals approve|refuse|cancel <apr>
	ApprovalShow   // approvals show <apr>
	ApprovalExpire // the queue-driven timeout of one question (service.ExpireApproval)

	// Guess spawns: the partition is the request id.
	Guess       // guess "<question>": a spawn with no entity
	GuessAnswer // answer spawn:… --candidate …

	// SpawnCancel cancels a verification spawn (spawns cancel spawn:…); its
	// partition is the entity.
	SpawnCancel

	// Heartbeat moves a verification spawn's expiry (spawns heartbeat
	// spawn:… --extend D); its partition is the entity.
	Heartbeat
)

func (k Kind) String() string {
	return [...]string{"assume", "callback", "move", "sweep", "expire", "show", "ask", "answer", "approval-show", "approval-expire", "guess", "guess-answer", "spawn-cancel", "heartbeat"}[k]
}

// Input is one invocation. CallClock and RetClock are readings of the
// service's clock (ns) taken just before the call and just after the return.
type Input struct {
	Kind      Kind
	Entity    string
	Action    ledger.Action
	RequestID string
	CallClock int64
	RetClock  int64
	// CallWall and RetWall are real (monotonic) time, whatever the
	// backend's clock: an index's lag is in real time.
	CallWall int64
	RetWall  int64
	Extend   int64 // heartbeat: --extend (ns)
	// By is who answers (Answer): a two-person question counts approvals
	// of different answerers (approvals.Resolve).
	By string
}

// SweepEntry is what a sweep reports for one spawn.
type SweepEntry struct {
	Approval  bool // a question the sweep timed out (RequestID is its id)
	Entity    string
	RequestID string
	Outcome   string
	Restored  bool
	Status    ledger.Status
	Lost      bool // another resolver had committed first
}

// Output is one response, read from the envelope the same way for every backend.
type Output struct {
	Err       string // error code; "" when ok
	RequestID string // assume: the issued request id
	ExpiresAt int64  // assume: expires_at (ns)
	Status    ledger.Status
	Pending   string        // show: pending_spawn
	Applied   bool          // callback: resolution.applied
	Outcome   spawn.Outcome // callback / expire: the resolution's outcome
	Won       bool          // expire: this call committed the timeout
	Restored  bool          // cancel: the pre-spawn status came back
	NotDue    bool          // expire: the spawn is not due yet
	Moved     bool          // heartbeat: this call moved the expiry (to ExpiresAt)
	Warnings  []envelope.WarningCode
	// WarningIDs and WarningOutcomes are, for each warning, the request
	// it names and the outcome it carries ("" if none; warnings.go).
	WarningIDs      []string
	WarningOutcomes []string
	Entries         []SweepEntry // sweep
	// Unswept names the questions a sweep said it could not end (an
	// approval-channel-error warning naming one); QuestionsFailed is a
	// sweep whose questions' part failed as a whole (sweep-failed).
	Unswept         []string
	QuestionsFailed bool
	Notes           []string // sweep: what those warnings said
	// Tier escalation.
	Approval string          // ask: the approval id
	State    approvals.State // pending | resolved
	Verdict  approvals.Verdict
	Asked    bool
	Deadline int64
	// TwoPerson (ask): the person's two-person rule covers the question.
	TwoPerson bool
	// Unknown: the call's outcome is unknown (indeterminate.go): the
	// server was killed under it or its response was dropped.
	Unknown bool
}

// state is one entity's model state. It is never mutated: steps copy.
type state struct {
	status   ledger.Status
	pending  string
	exp      int64
	expSlack int64 // the expiry is known only to lie in [exp, exp+expSlack] (indeterminate.go)
	pre      ledger.Status
	moved    bool                     // the entity moved since the pending spawn moved it
	resolved map[string]spawn.Outcome // request id -> winning outcome
	guess    bool                     // a guess spawn's partition: no entity to restore

	// An approval partition: "" before its ask, then pending or resolved.
	aState    approvals.State
	verdict   approvals.Verdict
	deadline  int64
	askedWall int64 // when the ask returned, in real time
	// A two-person question: who approved first ("" before anyone did).
	twoPerson bool
	first     string
}

// Model is the sequential specification, parametrised by the spawn timeout
// and the tolerance of the clock readings (0 for a controlled clock).
type Model struct {
	Timeout   int64
	Tolerance int64
	// IndexLag, when positive, is how long in real time after a question's
	// ask a sweep may still not see it (an eventually consistent index of
	// due questions): such a sweep may leave a due question pending. Zero
	// requires every sweep linearized after the ask to see it.
	IndexLag int64
}

func (m Model) porcupine() porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: partition,
		Init: func() []any {
			return []any{state{status: ledger.Unverified, resolved: map[string]spawn.Outcome{}}}
		},
		Step: func(st, in, out any) []any {
			return m.step(st.(state), in.(Input), out.(Output))
		},
		Equal:             equal,
		DescribeOperation: describe,
		DescribeState: func(st any) string {
			s := st.(state)
			if s.aState != "" {
				return fmt.Sprintf("approval %s %s deadline@%d", s.aState, s.verdict, s.deadline/1e6)
			}
			return fmt.Sprintf("%s pending=%s exp@%d moved=%v resolved=%v", s.status, short(s.pending), s.exp/1e6, s.moved, len(s.resolved))
		},
	}
	return nd.ToModel()
}

func partition(history []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		e := op.Input.(Input).Entity
		if _, ok := by[e]; !ok {
			keys = append(keys, e)
		}
		by[e] = append(by[e], op)
	}
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}

func equal(a, b any) bool {
	x, y := a.(state), b.(state)
	if x.status != y.status || x.pending != y.pending || x.exp != y.exp || x.expSlack != y.expSlack || x.pre != y.pre || x.moved != y.moved || len(x.resolved) != len(y.resolved) ||
		x.aState != y.aState || x.verdict != y.verdict || x.deadline != y.deadline || x.askedWall != y.askedWall || x.guess != y.guess {
		return false
	}
	for k, v := range x.resolved {
		if y.resolved[k] != v {
			return false
		}
	}
	return true
}

// timeout is the state after the timeout resolver commits on s.pending.
func timeout(s state) state { return closeSpawn(s, spawn.TimeoutRestored) }

// closeSpawn ends s.pending without a callback (timeout or cancel): the
// pre-spawn status comes back only if the entity did not move since.
func closeSpawn(s state, outcome spawn.Outcome) state {
	n := s
	if !s.moved && !s.guess {
		n.status = s.pre
	}
	n.resolved = with(s.resolved, s.pending, outcome)
	n.pending, n.exp, n.expSlack, n.pre, n.moved = "", 0, 0, "", false
	return n
}

func with(m map[string]spawn.Outcome, k string, v spawn.Outcome) map[string]spawn.Outcome {
	out := make(map[string]spawn.Outcome, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// mayBeDue: the pending spawn can have been due before this operation's
// linearization point (which is at or before its return).
func (m Model) mayBeDue(s state, in Input) bool {
	return s.pending != "" && in.RetClock+m.Tolerance >= s.exp
}

// mustBeDue: the pending spawn was due when this operation started.
func (m Model) mustBeDue(s state, in Input) bool {
	return s.pending != "" && in.CallClock-m.Tolerance >= s.exp+s.expSlack
}

// step returns every state the entity can be in after the operation, or
// none if the response is impossible.
func (m Model) step(s state, in Input, out Output) []any {
	if out.Unknown {
		return m.stepUnknown(s, in)
	}
	starts := []state{s}
	if m.mayBeDue(s, in) {
		starts = append(starts, timeout(s)) // an unseen sweep got there first
	}
	if m.approvalMayBeDue(s, in) {
		starts = append(starts, approvalTimeout(s)) // likewise for a question
	}
	var next []any
	for _, p := range starts {
		if n, ok := m.apply(p, in, out); ok {
			next = append(next, n)
		}
	}
	return next
}

func (m Model) apply(s state, in Input, out Output) (state, bool) {
	switch in.Kind {
	case Assume:
		switch {
		case s.status.Terminal():
			return s, out.Err == "invalid-transition"
		case s.pending != "":
			return s, out.Err == "spawn-pending"
		case out.Err != "":
			return s, false
		}
		if _, dup := s.resolved[out.RequestID]; dup || out.RequestID == "" {
			return s, false
		}
		if out.ExpiresAt < in.CallClock+m.Timeout-m.Tolerance || out.ExpiresAt > in.RetClock+m.Timeout+m.Tolerance {
			return s, false
		}
		n := s
		n.pending, n.exp, n.pre, n.moved = out.RequestID, out.ExpiresAt, s.status, false
		n.status = spawn.UnderReview(s.status)
		return n, true

	case Callback:
		if in.RequestID == s.pending {
			to, err := ledger.Next("", s.status, in.Action)
			if err != nil {
				return s, out.Err == "invalid-transition"
			}
			if out.Err != "" || !out.Applied || out.Outcome != spawn.CallbackApplied || out.Status != to {
				return s, false
			}
			late := warned(out, envelope.CodeOf(errs.SpawnExpired), in.RequestID, "")
			if late && in.RetClock+m.Tolerance <= s.exp || !late && in.CallClock-m.Tolerance > s.exp+s.expSlack {
				return s, false
			}
			n := s
			n.status = to
			n.resolved = with(s.resolved, s.pending, spawn.CallbackApplied)
			n.pending, n.exp, n.expSlack, n.pre, n.moved = "", 0, 0, "", false
			return n, true
		}
		won, ok := s.resolved[in.RequestID]
		if !ok {
			return s, out.Err == "spawn-not-found"
		}
		warn := envelope.WarnSpawnDuplicate
		if won == spawn.TimeoutRestored {
			warn = envelope.WarnSpawnLostToTimeout
		}
		return s, out.Err == "" && !out.Applied && out.Outcome == won && out.Status == s.status && warned(out, warn, in.RequestID, string(won))

	case Move:
		if s.pending != "" && !s.guess {
			// Under review, an agent's move is refused (a harness token's,
			// on the HTTP backends); a person's (the owner's, in process)
			// stands and ends the spawn as cancelled in the same commit
			// (docs/design.md §5.3). A due spawn times out first.
			if out.Err == string(errs.SpawnPending) {
				return s, !m.mustBeDue(s, in)
			}
		}
		to, err := ledger.Next("", s.status, in.Action)
		if err != nil {
			return s, out.Err == "invalid-transition"
		}
		if out.Err != "" || out.Status != to {
			return s, false
		}
		n := s
		n.status = to
		if s.pending != "" && !s.guess {
			n.resolved = with(s.resolved, s.pending, spawn.Cancelled)
			n.pending, n.exp, n.expSlack, n.pre, n.moved = "", 0, 0, "", false
		}
		return n, true

	case Sweep:
		if out.Err != "" {
			return s, false
		}
		if s.aState != "" { // an approval's share of the sweep
			for _, e := range out.Entries {
				if !e.Approval || s.aState != approvals.Pending || !m.approvalMayBeDue(s, in) {
					return s, false
				}
				s = approvalTimeout(s)
			}
			return s, !m.sweepMustEnd(s, in, out)
		}
		for _, e := range out.Entries {
			if e.Lost {
				if won, ok := resolvedAs(s, e.RequestID); !ok || string(won) != e.Outcome {
					return s, false
				}
				continue
			}
			s = bindPending(s, e.RequestID)
			if e.RequestID != s.pending || !m.mayBeDue(s, in) || e.Outcome != string(spawn.TimeoutRestored) || e.Restored != (!s.moved && !s.guess) {
				return s, false
			}
			s = timeout(s)
			if e.Status != s.status {
				return s, false
			}
		}
		return s, !m.mustBeDue(s, in)

	case Expire:
		if in.RequestID == s.pending {
			switch {
			case out.Err != "":
				return s, false
			case out.NotDue:
				return s, !m.mustBeDue(s, in)
			case !out.Won || !m.mayBeDue(s, in) || out.Outcome != spawn.TimeoutRestored:
				return s, false
			}
			n := timeout(s)
			return n, out.Status == n.status
		}
		won, ok := s.resolved[in.RequestID]
		if !ok {
			return s, out.Err == "spawn-not-found"
		}
		return s, out.Err == "" && !out.Won && !out.NotDue && out.Outcome == won

	case Show:
		s = bindPending(s, out.Pending)
		return s, out.Err == "" && out.Status == s.status && out.Pending == s.pending

	case Heartbeat:
		if in.RequestID == s.pending && s.pending != "" {
			if out.Err != "" || out.Outcome != "" || warned(out, envelope.WarnSpawnHeartbeatLate, in.RequestID, "") || m.mustBeDue(s, in) {
				return s, false
			}
			if !out.Moved {
				// now + extend was not later than the expiry
				if out.ExpiresAt < s.exp || out.ExpiresAt > s.exp+s.expSlack || in.CallClock+in.Extend-m.Tolerance > out.ExpiresAt {
					return s, false
				}
				s.exp, s.expSlack = out.ExpiresAt, 0
				return s, true
			}
			if out.ExpiresAt <= s.exp || out.ExpiresAt < in.CallClock+in.Extend-m.Tolerance || out.ExpiresAt > in.RetClock+in.Extend+m.Tolerance {
				return s, false
			}
			n := s
			n.exp, n.expSlack = out.ExpiresAt, 0
			return n, true
		}
		won, ok := s.resolved[in.RequestID]
		if !ok {
			return s, out.Err == "spawn-not-found"
		}
		return s, out.Err == "" && !out.Moved && out.Outcome == won && warned(out, envelope.WarnSpawnHeartbeatLate, in.RequestID, string(won))

	case SpawnCancel:
		if in.RequestID == s.pending && s.pending != "" {
			if out.Err != "" || !out.Applied || out.Outcome != spawn.Cancelled || out.Restored != !s.moved {
				return s, false
			}
			n := closeSpawn(s, spawn.Cancelled)
			return n, out.Status == n.status
		}
		won, ok := s.resolved[in.RequestID]
		if !ok {
			return s, out.Err == "spawn-not-found"
		}
		warn := envelope.WarnSpawnDuplicate
		if won == spawn.TimeoutRestored {
			warn = envelope.WarnSpawnLostToTimeout
		}
		return s, out.Err == "" && !out.Applied && out.Outcome == won && warned(out, warn, in.RequestID, string(won))

	case Guess:
		if s.guess || s.pending != "" || len(s.resolved) > 0 || out.Err != "" || out.RequestID == "" {
			return s, false
		}
		if out.ExpiresAt < in.CallClock+m.Timeout-m.Tolerance || out.ExpiresAt > in.RetClock+m.Timeout+m.Tolerance {
			return s, false
		}
		s.guess, s.status, s.pending, s.exp = true, "", out.RequestID, out.ExpiresAt
		return s, true

	case GuessAnswer:
		if _, known := s.resolved[in.RequestID]; !known && in.RequestID != s.pending {
			return s, out.Err == "spawn-not-found"
		}
		if out.Err != "" {
			return s, false
		}
		if in.RequestID == s.pending {
			late := warned(out, envelope.CodeOf(errs.SpawnExpired), in.RequestID, "")
			if !out.Applied || out.Outcome != spawn.CallbackApplied || late && in.RetClock+m.Tolerance <= s.exp || !late && in.CallClock-m.Tolerance > s.exp+s.expSlack {
				return s, false
			}
			n := s
			n.resolved = with(s.resolved, s.pending, spawn.CallbackApplied)
			n.pending, n.exp, n.expSlack = "", 0, 0
			return n, true
		}
		won, ok := s.resolved[in.RequestID]
		warn := envelope.WarnSpawnDuplicate
		if won == spawn.TimeoutRestored {
			warn = envelope.WarnSpawnLostToTimeout
		}
		return s, ok && !out.Applied && out.Outcome == won && warned(out, warn, in.RequestID, string(won))

	case Ask:
		switch {
		case s.aState != "" || out.Err != "":
			return s, false
		case out.State == approvals.Pending:
			if !out.Asked || out.Deadline < in.CallClock+m.Timeout-m.Tolerance || out.Deadline > in.RetClock+m.Timeout+m.Tolerance {
				return s, false
			}
			s.aState, s.deadline, s.askedWall, s.twoPerson = approvals.Pending, out.Deadline, in.RetWall, out.TwoPerson
		default: // refused before it was asked (no live subscriber): already ended
			s.aState, s.verdict = approvals.Resolved, out.Verdict
		}
		return s, true

	case Answer:
		if out.Err != "" {
			return s, false
		}
		switch s.aState {
		case approvals.Resolved:
			return s, !out.Applied && out.Verdict == s.verdict && warned(out, envelope.WarnApprovalAlreadyResolved, in.Entity, string(s.verdict))
		case approvals.Pending:
			if n, ok, decided := m.twoPersonApproval(s, in, out); decided {
				return n, ok
			}
			if out.Applied {
				if string(out.Verdict) != string(in.Action) || in.CallClock-m.Tolerance >= s.deadline {
					return s, false
				}
				s.aState, s.verdict = approvals.Resolved, out.Verdict
				return s, true
			}
			// The answer came at or after the deadline: it ended the question as timed-out.
			if out.Verdict != approvals.TimedOut || !warned(out, envelope.WarnApprovalExpired, in.Entity, "") || !m.approvalMayBeDue(s, in) {
				return s, false
			}
			return approvalTimeout(s), true
		}
		return s, false

	case ApprovalShow:
		return s, out.Err == "" && out.State == s.aState && out.Verdict == s.verdict

	case ApprovalExpire:
		switch {
		case out.Err != "":
			return s, false
		case out.NotDue:
			return s, s.aState == approvals.Pending && !m.approvalMustBeDue(s, in)
		case s.aState == approvals.Pending:
			if out.Verdict != approvals.TimedOut || !m.approvalMayBeDue(s, in) {
				return s, false
			}
			return approvalTimeout(s), true
		}
		return s, s.aState == approvals.Resolved && out.Verdict == s.verdict
	}
	return s, false
}

// twoPersonApproval steps an approval of a pending two-person question
// that did not end it: the first approval (recorded, still pending) or a
// second one by the first approver (counted once). decided is false for
// every other answer, which steps as for any question: a refusal ends it,
// and so does the second approval by another answerer, the first having
// been recorded.
func (m Model) twoPersonApproval(s state, in Input, out Output) (state, bool, bool) {
	if !s.twoPerson || string(in.Action) != string(approvals.Approved) {
		return s, false, false
	}
	switch {
	case out.State != approvals.Pending:
		// It ended the question: only as the second approval of another
		// answerer (or at the deadline, which steps as for any question).
		if out.Applied && (s.first == "" || s.first == in.By) {
			return s, false, true
		}
		return s, false, false
	case in.CallClock-m.Tolerance >= s.deadline:
		return s, false, true // an answer past the deadline leaves nothing pending
	case s.first == "":
		if !out.Applied || !slices.Contains(out.Warnings, secondApprovalNeeded) {
			return s, false, true
		}
		s.first = in.By
		return s, true, true
	default:
		return s, s.first == in.By && !out.Applied && slices.Contains(out.Warnings, alreadyApprovedByYou), true
	}
}

// The warnings of a two-person question's approvals that leave it open
// (internal/service, approvaltwoperson.go).
const (
	secondApprovalNeeded envelope.WarningCode = "second-approval-needed"
	alreadyApprovedByYou envelope.WarningCode = "already-approved-by-you"
)

func (m Model) approvalMayBeDue(s state, in Input) bool {
	return s.aState == approvals.Pending && in.RetClock+m.Tolerance >= s.deadline
}

func (m Model) approvalMustBeDue(s state, in Input) bool {
	return s.aState == approvals.Pending && in.CallClock-m.Tolerance >= s.deadline
}

// sweepMustEnd says whether a sweep had to end a pending question: it was
// due at the sweep's call, the sweep reported no failure for it, and (with
// IndexLag) the index had had that long to show it.
func (m Model) sweepMustEnd(s state, in Input, out Output) bool {
	if out.QuestionsFailed || slices.Contains(out.Unswept, in.Entity) {
		return false
	}
	if m.IndexLag > 0 && in.CallWall < s.askedWall+m.IndexLag {
		return false
	}
	return m.approvalMustBeDue(s, in)
}

// approvalTimeout is the state after a question ends at its deadline.
func approvalTimeout(s state) state {
	s.aState, s.verdict = approvals.Resolved, approvals.TimedOut
	return s
}

func describe(in, out any) string {
	i, o := in.(Input), out.(Output)
	var b strings.Builder
	fmt.Fprintf(&b, "%s", i.Kind)
	if i.Action != "" {
		fmt.Fprintf(&b, " %s", i.Action)
	}
	if i.RequestID != "" {
		fmt.Fprintf(&b, " %s", short(i.RequestID))
	}
	fmt.Fprintf(&b, " @%d..%d -> ", i.CallClock/1e6, i.RetClock/1e6)
	if o.Unknown {
		b.WriteString("unknown (indeterminate)")
		return b.String()
	}
	switch {
	case o.Err != "":
		b.WriteString("error " + o.Err)
	case i.Kind == Assume || i.Kind == Guess:
		fmt.Fprintf(&b, "%s exp@%d", short(o.RequestID), o.ExpiresAt/1e6)
	case i.Kind == Ask || i.Kind == Answer || i.Kind == ApprovalShow || i.Kind == ApprovalExpire:
		fmt.Fprintf(&b, "%s %s applied=%v asked=%v deadline@%d notdue=%v %v", o.State, o.Verdict, o.Applied, o.Asked, o.Deadline/1e6, o.NotDue, o.Warnings)
	case i.Kind == Heartbeat:
		fmt.Fprintf(&b, "extend %dms: moved=%v exp@%d outcome=%s %v", i.Extend/1e6, o.Moved, o.ExpiresAt/1e6, o.Outcome, o.Warnings)
	case i.Kind == Sweep:
		for _, e := range o.Entries {
			fmt.Fprintf(&b, "[%s %s lost=%v restored=%v %s]", short(e.RequestID), e.Outcome, e.Lost, e.Restored, e.Status)
		}
	default:
		fmt.Fprintf(&b, "%s applied=%v outcome=%s won=%v notdue=%v pending=%s %v", o.Status, o.Applied, o.Outcome, o.Won, o.NotDue, short(o.Pending), o.Warnings)
	}
	for k, id := range o.WarningIDs {
		if id != "" || at(o.WarningOutcomes, k) != "" {
			fmt.Fprintf(&b, " {%s names %s %s}", o.Warnings[k], short(id), at(o.WarningOutcomes, k))
		}
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 10 {
		return id[:6] + "…" + id[len(id)-4:]
	}
	return id
}
