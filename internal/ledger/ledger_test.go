package ledger

import (
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
)

func TestStatusLattice(t *testing.T) {
	cases := []struct {
		from Status
		a    Action
		to   Status // "" means refused
	}{
		{Unverified, Doubt, Doubted}, {Verified, Doubt, Doubted}, {Stale, Doubt, Doubted}, {Locked, Doubt, ""}, {Ignored, Doubt, ""},
		{Unverified, Verify, Verified}, {Doubted, Verify, Verified}, {Stale, Verify, Verified}, {Locked, Verify, ""}, {Ignored, Verify, ""},
		{Verified, Lock, Locked}, {Unverified, Lock, ""}, {Doubted, Lock, ""}, {Locked, Lock, ""},
		{Unverified, Ignore, Ignored}, {Doubted, Ignore, Ignored}, {Locked, Ignore, ""}, {Ignored, Ignore, ""},
		{Ignored, Reopen, Unverified}, {Doubted, Reopen, Unverified}, {Unverified, Reopen, ""}, {Locked, Reopen, ""},
	}
	for _, c := range cases {
		got, err := Next("claim:x", c.from, c.a)
		if c.to == "" {
			if !errs.Is(err, errs.InvalidTransition) || len(present.Explain(err).Remediation) == 0 {
				t.Errorf("%s from %s: got %s %v, want invalid-transition with remediation", c.a, c.from, got, err)
			}
			continue
		}
		if err != nil || got != c.to {
			t.Errorf("%s from %s: got %s %v, want %s", c.a, c.from, got, err, c.to)
		}
	}
}

func TestReasonsMustNameAFlaw(t *testing.T) {
	for _, r := range []string{"", "   ", "maybe wrong", "Seems off.", "I'm not sure", "idk, could be wrong?", "hmm"} {
		if CheckReason("claim:x", r) == nil {
			t.Errorf("reason %q accepted", r)
		}
	}
	for _, r := range []string{"ITS-90 gives 99.97 C at 1 atm", "the cited paper was retracted in 2021", "counter-example: n=7"} {
		if err := CheckReason("claim:x", r); err != nil {
			t.Errorf("reason %q refused: %v", r, err)
		}
	}
}

func TestEvidenceIsAWellFormedURIOrCurie(t *testing.T) {
	for _, ev := range []string{"https://example.org/a", "doi:10.1000/182", "file:/tmp/x", "urn:isbn:0451450523", "ex:Widget", "git:abc123"} {
		if err := CheckEvidence("claim:x", []string{ev}); err != nil {
			t.Errorf("%q refused: %v", ev, err)
		}
	}
	for _, ev := range []string{"", "plain words", "https://", "http:///nohost", "e", ":x", "1ab:x", "https://exa mple.org"} {
		if CheckEvidence("claim:x", []string{ev}) == nil {
			t.Errorf("%q accepted", ev)
		}
	}
	if CheckEvidence("claim:x", nil) == nil {
		t.Error("no evidence accepted")
	}
}

func TestFoldReplaysStatusChanges(t *testing.T) {
	evs := []Event{{To: Unverified}, {Kind: EvSpawnRequested}, {To: Verified}, {Kind: EvSpawnResolved}, {To: Doubted}}
	if got := Fold(evs); got != Doubted {
		t.Fatalf("Fold = %s", got)
	}
}

func TestActionsAreNamedByEffectAndKeepTheirWireNames(t *testing.T) {
	// `dont trust` = doubt it; `dont dismiss` (the doubt) = verify it.
	if Doubt != "trust" || Verify != "dismiss" || Doubt.EventKind() != "trusted" || Verify.EventKind() != "dismissed" {
		t.Fatalf("wire names changed: %s→%s, %s→%s", Doubt, Doubt.EventKind(), Verify, Verify.EventKind())
	}
	for _, k := range EventKinds {
		if !k.Valid() {
			t.Errorf("%s is not valid", k)
		}
	}
	if EventKind("trust").Valid() || EntityKind("spawn").Valid() {
		t.Error("an unknown kind is valid")
	}
}
