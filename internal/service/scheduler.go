package service

import (
	"context"
	"time"
)

// TimeoutScheduler is told about every new spawn so that expiry can be
// driven from outside (SQS in AWS). Embedded mode needs none: every
// invocation sweeps.
type TimeoutScheduler interface {
	ScheduleTimeout(ctx context.Context, requestID string, expiresAt time.Time) error
}

// TimeoutCanceller is the optional extension of TimeoutScheduler that
// forgets a spawn's timer once the spawn is resolved, so that the timer
// neither holds memory until the expiry nor reads the store then (dont
// serve's timers). A delayed SQS message cannot be taken back: the
// sweeper that receives it finds the spawn resolved and does nothing.
type TimeoutCanceller interface {
	CancelTimeout(requestID string)
}

// ApprovalTimeoutScheduler is the optional extension of TimeoutScheduler
// that drives question deadlines from outside (a delayed queue message
// calling ExpireApproval). Embedded mode needs none: every invocation
// sweeps, and a waiting requester ends its own question at the deadline.
type ApprovalTimeoutScheduler interface {
	ScheduleApprovalTimeout(ctx context.Context, approvalID string, deadline time.Time) error
}
