package linearize

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
)

// A sweep at or after a question's deadline that leaves it pending (a read
// after it still finds it pending) is
// legal only when it said it could not end it, or when the backend's index
// may not show the question yet (IndexLag after the ask, in real time);
// otherwise the history is rejected.
func TestASweepMayLeaveADueQuestionOnlyIfItSaidSoOrTheIndexMayLag(t *testing.T) {
	const timeout = int64(10 * time.Second)
	const id = "apr_1"
	history := func(sweepWall int64, out Output) []porcupine.Operation {
		return []porcupine.Operation{
			{ClientId: 0, Call: 1, Return: 2,
				Input:  Input{Kind: Ask, Entity: id, CallClock: 0, RetClock: 0, CallWall: 100, RetWall: 200},
				Output: Output{Approval: id, State: approvals.Pending, Asked: true, Deadline: timeout}},
			{ClientId: 1, Call: 3, Return: 4,
				Input:  Input{Kind: Sweep, Entity: id, CallClock: timeout + 1, RetClock: timeout + 1, CallWall: sweepWall, RetWall: sweepWall + 1},
				Output: out},
			// A read after the sweep still finds it pending, so no hidden
			// sweep (the one every call runs first) ended it before.
			{ClientId: 1, Call: 5, Return: 6,
				Input:  Input{Kind: ApprovalShow, Entity: id, CallClock: timeout + 2, RetClock: timeout + 2, CallWall: sweepWall + 2, RetWall: sweepWall + 3},
				Output: Output{State: approvals.Pending}},
		}
	}
	soon, later := int64(200+time.Millisecond), int64(200+3*time.Second)
	for _, c := range []struct {
		name  string
		lag   time.Duration
		wall  int64
		out   Output
		legal bool
	}{
		{"a silent sweep, no lag", 0, soon, Output{}, false},
		{"a sweep that said its questions' part failed", 0, soon, Output{QuestionsFailed: true}, true},
		{"a sweep that named the question it could not end", 0, soon, Output{Unswept: []string{id}}, true},
		{"a sweep that named another question", 0, soon, Output{Unswept: []string{"apr_2"}}, false},
		{"a silent sweep within the index lag", 2 * time.Second, soon, Output{}, true},
		{"a silent sweep after the index lag", 2 * time.Second, later, Output{}, false},
	} {
		m := Model{Timeout: timeout, IndexLag: int64(c.lag)}.porcupine()
		if got := porcupine.CheckOperations(m, history(c.wall, c.out)); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.legal)
		}
	}
}

// The model knows the two-person rule (docs/approvals.md, "Two people"):
// first refusal or second approval wins; one answerer approving twice
// counts once.
func TestTheModelAcceptsOnlyFirstRefusalOrSecondApprovalOnATwoPersonQuestion(t *testing.T) {
	const timeout = int64(10 * time.Second)
	const id = "apr_2p"
	ask := porcupine.Operation{ClientId: 0, Call: 1, Return: 2,
		Input:  Input{Kind: Ask, Entity: id, CallWall: 1, RetWall: 2},
		Output: Output{Approval: id, State: approvals.Pending, Asked: true, Deadline: timeout, TwoPerson: true}}
	approve := func(call int64, by string, out Output) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Call: call, Return: call + 1,
			Input: Input{Kind: Answer, Entity: id, Action: verdictAction(approvals.Approved), By: by, CallClock: 1, RetClock: 1}, Output: out}
	}
	refuse := func(call int64, by string, out Output) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Call: call, Return: call + 1,
			Input: Input{Kind: Answer, Entity: id, Action: verdictAction(approvals.Refused), By: by, CallClock: 1, RetClock: 1}, Output: out}
	}
	first := Output{State: approvals.Pending, Applied: true, Warnings: []envelope.WarningCode{secondApprovalNeeded}}
	again := Output{State: approvals.Pending, Warnings: []envelope.WarningCode{alreadyApprovedByYou}}
	approved := Output{State: approvals.Resolved, Verdict: approvals.Approved, Applied: true}
	refused := Output{State: approvals.Resolved, Verdict: approvals.Refused, Applied: true}
	for _, c := range []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"alice, then bob approve", []porcupine.Operation{ask, approve(10, "alice", first), approve(20, "bob", approved)}, true},
		{"alice's first approval ends it", []porcupine.Operation{ask, approve(10, "alice", approved)}, false},
		{"alice approves twice and it ends", []porcupine.Operation{ask, approve(10, "alice", first), approve(20, "alice", approved)}, false},
		{"alice approves twice, counted once", []porcupine.Operation{ask, approve(10, "alice", first), approve(20, "alice", again)}, true},
		{"alice approves, carol refuses", []porcupine.Operation{ask, approve(10, "alice", first), refuse(20, "carol", refused)}, true},
		{"two firsts", []porcupine.Operation{ask, approve(10, "alice", first), approve(20, "bob", first)}, false},
	} {
		m := Model{Timeout: timeout}.porcupine()
		if got := porcupine.CheckOperations(m, c.ops); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.legal)
		}
	}
}
