package approvals

import "time"

// DefaultMinTimeout is the shortest deadline a requester may ask for when
// the person sets no minimum: long enough to read a question and answer
// it, so that a requester cannot rush the person (docs/approvals.md,
// "Deadlines that fit the channel").
const DefaultMinTimeout = 30 * time.Second

// DeadlineRange is the person's range for a question's deadline: the
// default a requester gets when it asks for none, and the shortest and
// longest it may ask for. Only a person sets it (approval_timeout,
// approval_timeout_min, approval_timeout_max).
type DeadlineRange struct {
	Min, Default, Max time.Duration
}

// Normal fills what the person left unset and makes the range hold its
// default: Default is DefaultTimeout, Max is Default (a requester may ask
// for no longer than the default unless the person widens it), Min is
// DefaultMinTimeout, or Default if that is shorter. A minimum above the
// default, or a maximum below it, is moved to the default: the default is
// always a deadline one may ask for.
func (r DeadlineRange) Normal() DeadlineRange {
	if r.Default <= 0 {
		r.Default = DefaultTimeout
	}
	if r.Max <= 0 || r.Max < r.Default {
		r.Max = r.Default
	}
	if r.Min <= 0 {
		r.Min = DefaultMinTimeout
	}
	if r.Min > r.Default {
		r.Min = r.Default
	}
	return r
}

// Pick is the deadline of a question whose requester asked for asked (0:
// none): the default, or asked if the range holds it (bounds included).
// ok is false for a deadline outside the range: the request is refused,
// never clamped, so that a requester never waits on a deadline it did not
// ask for.
func (r DeadlineRange) Pick(asked time.Duration) (time.Duration, bool) {
	r = r.Normal()
	if asked == 0 {
		return r.Default, true
	}
	if asked < r.Min || asked > r.Max {
		return 0, false
	}
	return asked, true
}
