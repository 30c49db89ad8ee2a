package hooks

import (
	"time"
)

// The retry schedule: a capped exponential backoff with jitter, for up to
// RetryFor after the first attempt; then the delivery is failed.
const (
	BackoffBase = 5 * time.Second
	BackoffCap  = time.Hour
	RetryFor    = 24 * time.Hour
	// AttemptTimeout bounds one attempt, connection to last byte.
	AttemptTimeout = 5 * time.Second
	// MaxResponseBody is how much of a response is read (and logged).
	MaxResponseBody = 4 << 10
)

// Backoff is the wait before attempt n+1 after n failed attempts (n >= 1):
// BackoffBase·2^(n-1), capped at BackoffCap, scaled by a jitter in
// [0.5, 1.0) drawn from j ∈ [0, 1).
func Backoff(n int, j float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := BackoffBase
	for i := 1; i < n && d < BackoffCap; i++ {
		d *= 2
	}
	d = min(d, BackoffCap)
	if j < 0 || j >= 1 {
		j = 0
	}
	return time.Duration(float64(d) * (0.5 + j/2))
}

// Outcome is how one attempt ended.
type Outcome string

// The outcomes.
const (
	Delivered Outcome = "delivered" // a 2xx
	Retry     Outcome = "retry"     // 5xx, 408, 429, a timeout or a broken connection
	Rejected  Outcome = "rejected"  // any other status, or a refused address: retrying cannot help
)

// Classify says what an attempt's status means (0: no response).
func Classify(status int) Outcome {
	switch {
	case status >= 200 && status < 300:
		return Delivered
	case status == 0, status == 408, status == 429, status >= 500:
		return Retry
	}
	return Rejected
}

// DeliveryState is where a delivery stands.
type DeliveryState string

// The delivery states.
const (
	StatePending   DeliveryState = "pending"
	StateDelivered DeliveryState = "delivered"
	StateFailed    DeliveryState = "failed"
)

// Delivery is one message to one hook.
type Delivery struct {
	MessageID  string        `json:"message_id"`
	HookID     string        `json:"hook_id"`
	Type       EventType     `json:"type"`
	State      DeliveryState `json:"state"`
	Attempts   int           `json:"attempts"`
	CreatedAt  time.Time     `json:"created_at"`
	NextAt     time.Time     `json:"next_attempt_at"`
	LastStatus int           `json:"last_status,omitempty"`
	LastError  string        `json:"last_error,omitempty"`
}

// Attempt is one entry of the delivery log.
type Attempt struct {
	MessageID string    `json:"message_id"`
	HookID    string    `json:"hook_id"`
	N         int       `json:"attempt"`
	At        time.Time `json:"at"`
	Status    int       `json:"status,omitempty"`
	LatencyMS int64     `json:"latency_ms"`
	Outcome   Outcome   `json:"outcome"`
	Error     string    `json:"error,omitempty"`
}

// Next is the delivery after attempt a (at now): delivered; failed when
// rejected or when the next try would fall after RetryFor from the
// delivery's creation; else pending until the backoff (or the receiver's
// Retry-After, if longer and within the cap) has passed.
func Next(d Delivery, a Attempt, retryAfter time.Duration, j float64) Delivery {
	d.Attempts = a.N
	d.LastStatus = a.Status
	d.LastError = a.Error
	switch a.Outcome {
	case Delivered:
		d.State = StateDelivered
		return d
	case Rejected:
		d.State = StateFailed
		return d
	}
	wait := Backoff(a.N, j)
	if retryAfter > wait {
		wait = min(retryAfter, BackoffCap)
	}
	next := a.At.Add(wait)
	if next.Sub(d.CreatedAt) > RetryFor {
		d.State = StateFailed
		return d
	}
	d.State, d.NextAt = StatePending, next
	return d
}
