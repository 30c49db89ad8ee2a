package invariants

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/service"
)

// Verify sweeps svc's store until nothing is due, then reads it and checks
// every rule as of the final sweep's time. It is what `dont doctor` runs
// and what every concurrency test and load run ends with.
//
// A live server may resolve a spawn between the reads of one check (its
// timers fire at each expiry), which tears the snapshot. A broken invariant
// persists; a torn read does not: so when the first check finds something,
// Verify checks again and reports only what both checks found.
func Verify(ctx context.Context, svc *service.Service) (Report, error) {
	first, err := verifyOnce(ctx, svc)
	if err != nil || first.OK() {
		return first, err
	}
	second, err := verifyOnce(ctx, svc)
	if err != nil {
		return Report{}, err
	}
	seen := map[[2]string]bool{}
	for _, v := range first.Violations {
		seen[[2]string{v.Rule, v.ID}] = true
	}
	both := []Violation{}
	for _, v := range second.Violations {
		if seen[[2]string{v.Rule, v.ID}] {
			both = append(both, v)
		}
	}
	second.Violations = both
	return second, nil
}

func verifyOnce(ctx context.Context, svc *service.Service) (Report, error) {
	now, err := SweepAll(ctx, svc)
	if err != nil {
		return Report{}, err
	}
	d, err := Read(ctx, svc.Store)
	if err != nil {
		return Report{}, err
	}
	return Check(d, now), nil
}

// SweepAll runs sweeps until one finds nothing due, and returns the time
// the last one ran at: nothing pending may be due at that time.
func SweepAll(ctx context.Context, svc *service.Service) (time.Time, error) {
	for range 1000 {
		now := svc.Clock
		at := time.Now().UTC()
		if now != nil {
			at = now().UTC()
		}
		rep, err := svc.Sweep(ctx, 1000)
		if err != nil {
			return at, err
		}
		if len(rep.TimedOut) == 0 && len(rep.Lost) == 0 {
			return at, nil
		}
	}
	return time.Time{}, context.DeadlineExceeded
}

// TB is the part of testing.TB that Require uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Require fails the test if svc's store breaks any invariant after a sweep.
func Require(t TB, svc *service.Service) Report {
	t.Helper()
	rep, err := Verify(context.Background(), svc)
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("invariants: %s", rep.Error())
	}
	return rep
}
