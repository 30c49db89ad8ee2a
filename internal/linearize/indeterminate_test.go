package linearize

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// A callback whose response was lost may have applied or not: a later
// read may find either status; but not a status the callback could not
// have produced, and the spawn it resolved is still resolved only once.
func TestAnIndeterminateCallbackIsCheckedAsPossiblyApplied(t *testing.T) {
	const timeout = int64(10 * time.Second)
	const e, req = "claim_1", "spawn_1"
	history := func(read Output) []porcupine.Operation {
		return []porcupine.Operation{
			{ClientId: 0, Call: 1, Return: 2, Input: Input{Kind: Assume, Entity: e},
				Output: Output{RequestID: req, ExpiresAt: timeout, Status: ledger.Unverified}},
			{ClientId: 1, Call: 3, Return: math.MaxInt64, Input: Input{Kind: Callback, Entity: e, Action: ledger.Verify, RequestID: req},
				Output: Output{Unknown: true}},
			{ClientId: 0, Call: 4, Return: 5, Input: Input{Kind: Show, Entity: e, CallClock: 1, RetClock: 1}, Output: read},
		}
	}
	for _, c := range []struct {
		name  string
		read  Output
		legal bool
	}{
		{"not applied: still under review", Output{Status: spawn.UnderReview(ledger.Unverified), Pending: req}, true},
		{"applied: verified", Output{Status: ledger.Verified}, true},
		{"a status the callback cannot produce", Output{Status: ledger.Doubted}, false},
		{"under review with another spawn", Output{Status: spawn.UnderReview(ledger.Unverified), Pending: "spawn_2"}, false},
	} {
		if got := porcupine.CheckOperations(Model{Timeout: timeout}.porcupine(), history(c.read)); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.legal)
		}
	}
}

// An assume whose response was lost may have issued a spawn no client
// knows: a read may show it pending, under any new id; a second assume
// is then refused as pending; a duplicate callback naming an old request
// still has to be told the old winner.
func TestAnIndeterminateAssumeMayLeaveAnUnknownSpawnPending(t *testing.T) {
	const timeout = int64(10 * time.Second)
	const e = "claim_1"
	ops := []porcupine.Operation{
		{ClientId: 0, Call: 1, Return: math.MaxInt64, Input: Input{Kind: Assume, Entity: e}, Output: Output{Unknown: true}},
		{ClientId: 1, Call: 2, Return: 3, Input: Input{Kind: Show, Entity: e, CallClock: 1, RetClock: 1},
			Output: Output{Status: spawn.UnderReview(ledger.Unverified), Pending: "spawn_9"}},
		{ClientId: 1, Call: 4, Return: 5, Input: Input{Kind: Assume, Entity: e, CallClock: 2, RetClock: 2}, Output: Output{Err: "spawn-pending"}},
	}
	if !porcupine.CheckOperations(Model{Timeout: timeout}.porcupine(), ops) {
		t.Fatal("a spawn the lost assume issued was not allowed")
	}
	ops[2].Output = Output{RequestID: "spawn_10", ExpiresAt: timeout + 2, Status: spawn.UnderReview(ledger.Unverified)}
	if porcupine.CheckOperations(Model{Timeout: timeout}.porcupine(), ops) {
		t.Fatal("a second spawn was issued while the first was pending, and the check passed")
	}
}

// A duplicate callback must be warned about its own request, with the
// winner's outcome: a spawn-duplicate warning naming another spawn (or
// another outcome) does not stand for it.
func TestALoserWarnedAboutAnotherSpawnIsRejected(t *testing.T) {
	const timeout = int64(10 * time.Second)
	const e, req = "claim_1", "spawn_1"
	history := func(ids, outcomes []string) []porcupine.Operation {
		return []porcupine.Operation{
			{ClientId: 0, Call: 1, Return: 2, Input: Input{Kind: Assume, Entity: e},
				Output: Output{RequestID: req, ExpiresAt: timeout, Status: ledger.Unverified}},
			{ClientId: 0, Call: 3, Return: 4, Input: Input{Kind: Callback, Entity: e, Action: ledger.Verify, RequestID: req},
				Output: Output{Applied: true, Outcome: spawn.CallbackApplied, Status: ledger.Verified}},
			{ClientId: 1, Call: 5, Return: 6, Input: Input{Kind: Callback, Entity: e, Action: ledger.Doubt, RequestID: req},
				Output: Output{Outcome: spawn.CallbackApplied, Status: ledger.Verified, Warnings: []envelope.WarningCode{envelope.WarnSpawnDuplicate},
					WarningIDs: ids, WarningOutcomes: outcomes}},
		}
	}
	m := Model{Timeout: timeout}.porcupine()
	if !porcupine.CheckOperations(m, history([]string{req}, []string{string(spawn.CallbackApplied)})) {
		t.Fatal("the right warning was rejected")
	}
	if porcupine.CheckOperations(m, history([]string{"spawn_2"}, []string{string(spawn.CallbackApplied)})) {
		t.Fatal("a warning naming another spawn passed for the loser's own")
	}
	if porcupine.CheckOperations(m, history([]string{req}, []string{string(spawn.TimeoutRestored)})) {
		t.Fatal("a warning naming another winner passed")
	}
}
