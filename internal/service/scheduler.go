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

// ApprovalTimeoutScheduler is the optional extension of TimeoutScheduler
// that drives question deadlines from outside (a delayed queue message
// calling ExpireApproval). Embedded mode needs none: every invocation
// sweeps, and a waiting requester ends its own question at the deadline.
type ApprovalTimeoutScheduler interface {
	ScheduleApprovalTimeout(ctx context.Context, approvalID string, deadline time.Time) error
}
