package approvals

import (
	"testing"
	"time"
)

func TestARequesterThatAsksForNoDeadlineGetsThePersonsDefault(t *testing.T) {
	for _, r := range []DeadlineRange{{}, {Default: 5 * time.Minute, Max: time.Hour}} {
		got, ok := r.Pick(0)
		if want := r.Normal().Default; !ok || got != want {
			t.Errorf("%+v: Pick(0) = %v, %v; want %v", r, got, ok, want)
		}
	}
	if got, _ := (DeadlineRange{}).Pick(0); got != DefaultTimeout {
		t.Fatalf("the default of an unset range is %v, want %v", got, DefaultTimeout)
	}
}

func TestWithoutAPersonSetMaximumNoRequesterMayAskForALongerDeadlineThanTheDefault(t *testing.T) {
	r := DeadlineRange{Default: 2 * time.Minute}
	if _, ok := r.Pick(2*time.Minute + time.Second); ok {
		t.Fatal("a deadline past the default was accepted without a person-set maximum")
	}
	if got, ok := r.Pick(2 * time.Minute); !ok || got != 2*time.Minute {
		t.Fatalf("the default itself: %v, %v", got, ok)
	}
}

func TestADeadlineInsideThePersonsRangeIsTakenAndOneOutsideIsRefusedNotClamped(t *testing.T) {
	r := DeadlineRange{Min: time.Minute, Default: 2 * time.Minute, Max: 15 * time.Minute}
	for _, c := range []struct {
		asked time.Duration
		ok    bool
	}{{time.Minute, true}, {15 * time.Minute, true}, {10 * time.Minute, true},
		{59 * time.Second, false}, {15*time.Minute + time.Nanosecond, false}, {-time.Second, false}} {
		got, ok := r.Pick(c.asked)
		if ok != c.ok || (ok && got != c.asked) || (!ok && got != 0) {
			t.Errorf("Pick(%v) = %v, %v; want ok=%v and the asked deadline itself", c.asked, got, ok, c.ok)
		}
	}
}

func TestTheRangeAlwaysHoldsItsDefault(t *testing.T) {
	n := DeadlineRange{Min: 10 * time.Minute, Default: 2 * time.Minute, Max: time.Minute}.Normal()
	if n.Min != 2*time.Minute || n.Max != 2*time.Minute {
		t.Fatalf("Normal = %+v, want min and max moved to the default", n)
	}
	if n := (DeadlineRange{Default: 10 * time.Second}).Normal(); n.Min != 10*time.Second {
		t.Fatalf("a default shorter than the default minimum: %+v", n)
	}
}
