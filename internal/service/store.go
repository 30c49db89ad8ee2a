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
