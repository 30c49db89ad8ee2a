package service

import (
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
)

// DeadlineOutOfRange: a requester asked for a question deadline outside
// the person's range (approval_timeout_min … approval_timeout_max). It is
// refused, not clamped, before anything is asked or recorded.
const DeadlineOutOfRange errs.Code = "deadline-out-of-range"

// deadlineRange is the person's range for a question's deadline.
func (s *core) deadlineRange() approvals.DeadlineRange {
	return approvals.DeadlineRange{Min: s.Approvals.TimeoutMin, Default: s.approvalTimeout(), Max: s.Approvals.TimeoutMax}.Normal()
}

// questionTimeout is how long a question whose requester asked for asked
// (0: none) stays open, or deadline-out-of-range naming the range.
func (s *core) questionTimeout(asked time.Duration) (time.Duration, error) {
	r := s.deadlineRange()
	if d, ok := r.Pick(asked); ok {
		return d, nil
	}
	lo, hi := shortDuration(r.Min), shortDuration(r.Max)
	return 0, errs.E(DeadlineOutOfRange, "a deadline of "+shortDuration(asked)+" is outside the person's range "+lo+" to "+hi+
		" for this project; nothing was asked").
		Unmet(lo+" <= deadline <= "+hi).
		With("min", lo).With("max", hi).With("default", shortDuration(r.Default))
}

// shortDuration writes a duration without its zero tail: 15m, not 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if len(s) > 3 && s[len(s)-3:] == "m0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 3 && s[len(s)-3:] == "h0m" {
		s = s[:len(s)-2]
	}
	return s
}
