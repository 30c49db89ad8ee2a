package linearize

import (
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Indeterminate operations (Jepsen's :info). A call whose server was
// killed under it, or whose response a proxy dropped after the commit,
// has an unknown outcome: it may have applied or not. Such an operation
// is recorded with Output.Unknown and a return time after every other
// operation's (porcupine then lets it take effect at any point after its
// call), and the model allows both: the state unchanged, or any state the
// operation could have led to. Its clock reading at return is when the
// client saw the failure: the effect, if any, happened before that (the
// process that could apply it was dead, or the proxy had the response).
//
// A question or a guess whose ask is indeterminate has no known id, so no
// later operation names it and it joins no partition: it is counted, not
// checked. A spawn whose assume is indeterminate may be pending under an
// id no client knows (unknownSpawn), with an expiry known only to lie in
// a range (state.expSlack); the first response that names the entity's
// pending spawn (a show, a sweep's entry) binds it.

// unknownSpawn stands for the request id of a spawn an indeterminate
// assume may have issued.
const unknownSpawn = "?"

// bindPending names the pending spawn an indeterminate assume issued,
// once a response shows its id.
func bindPending(s state, id string) state {
	if s.pending == unknownSpawn && id != "" {
		if _, known := s.resolved[id]; !known {
			s.pending = id
		}
	}
	return s
}

// resolvedAs is the winning outcome of id, allowing for a spawn that an
// unseen resolver ended while its id was still unknown.
func resolvedAs(s state, id string) (spawn.Outcome, bool) {
	if won, ok := s.resolved[id]; ok {
		return won, true
	}
	won, ok := s.resolved[unknownSpawn]
	return won, ok
}

// stepUnknown is every state an indeterminate operation can leave: each
// start step allows (an unseen sweep's timeout first), then the
// operation not applied, or applied.
func (m Model) stepUnknown(s state, in Input) []any {
	starts := []state{s}
	if m.mayBeDue(s, in) {
		starts = append(starts, timeout(s))
	}
	if m.approvalMayBeDue(s, in) {
		starts = append(starts, approvalTimeout(s))
	}
	var next []any
	for _, p := range starts {
		next = append(next, p)
		for _, n := range m.applyUnknown(p, in) {
			next = append(next, n)
		}
	}
	return next
}

// applyUnknown lists the states the operation leads to if it applied.
func (m Model) applyUnknown(s state, in Input) []state {
	switch in.Kind {
	case Assume:
		if s.status.Terminal() || s.pending != "" {
			return nil
		}
		n := s
		n.pending, n.pre, n.moved = unknownSpawn, s.status, false
		n.exp = in.CallClock + m.Timeout - m.Tolerance
		n.expSlack = in.RetClock + m.Timeout + m.Tolerance - n.exp
		n.status = spawn.UnderReview(s.status)
		return []state{n}
	case Callback, GuessAnswer:
		if in.RequestID != s.pending || s.pending == "" {
			return nil
		}
		n := s
		if in.Kind == Callback {
			to, err := ledger.Next("", s.status, in.Action)
			if err != nil {
				return nil
			}
			n.status = to
			n.pre, n.moved = "", false
		}
		n.resolved = with(s.resolved, s.pending, spawn.CallbackApplied)
		n.pending, n.exp, n.expSlack = "", 0, 0
		return []state{n}
	case Move:
		to, err := ledger.Next("", s.status, in.Action)
		if err != nil {
			return nil
		}
		n := s
		n.status = to
		if s.pending != "" && !s.guess {
			n.resolved = with(s.resolved, s.pending, spawn.Cancelled)
			n.pending, n.exp, n.expSlack, n.pre, n.moved = "", 0, 0, "", false
		}
		return []state{n}
	case Sweep, Expire:
		if in.Kind == Expire && in.RequestID != s.pending {
			return nil
		}
		if m.mayBeDue(s, in) {
			return []state{timeout(s)}
		}
		if m.approvalMayBeDue(s, in) {
			return []state{approvalTimeout(s)}
		}
	case ApprovalExpire:
		if m.approvalMayBeDue(s, in) {
			return []state{approvalTimeout(s)}
		}
	case Heartbeat:
		if in.RequestID != s.pending || s.pending == "" {
			return nil
		}
		n := s
		if hi := in.RetClock + in.Extend + m.Tolerance; hi > s.exp+s.expSlack {
			n.expSlack = hi - s.exp
		}
		return []state{n}
	case SpawnCancel:
		if in.RequestID != s.pending || s.pending == "" {
			return nil
		}
		return []state{closeSpawn(s, spawn.Cancelled)}
	case Answer:
		if s.aState != approvals.Pending {
			return nil
		}
		var out []state
		if in.CallClock-m.Tolerance < s.deadline {
			n := s
			n.aState, n.verdict = approvals.Resolved, approvals.Verdict(in.Action)
			out = append(out, n)
		}
		if m.approvalMayBeDue(s, in) {
			out = append(out, approvalTimeout(s))
		}
		return out
	}
	return nil
}
