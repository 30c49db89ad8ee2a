package dynamo

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// backoff is capped exponential backoff with full jitter: attempt n waits
// a uniformly random time in [0, min(cap, base·2ⁿ)).
type backoff struct {
	attempts  int
	base, cap time.Duration
}

// defaultBackoff gives up after 8 attempts and at most about 4 s of
// waiting in all: well inside a Lambda invocation and DynamoDB's 10-minute
// ClientRequestToken window.
var defaultBackoff = backoff{attempts: 8, base: 25 * time.Millisecond, cap: time.Second}

func (b backoff) sleep(ctx context.Context, attempt int) error {
	d := b.base << min(attempt, 30)
	if d > b.cap || d <= 0 {
		d = b.cap
	}
	return sleepCtx(ctx, time.Duration(rand.Int64N(int64(d)+1)))
}

// noSDKRetries turns the SDK's own retryer off for one call: the store
// retries itself, so that what is retried, and with which
// ClientRequestToken, is decided in one place.
func noSDKRetries(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// do runs call, retrying what DynamoDB says is worth retrying.
func (s *Store) do(ctx context.Context, call func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := call(ctx)
		if err == nil || !retryable(err) || attempt+1 >= s.retry.attempts || ctx.Err() != nil {
			return err
		}
		if err := s.retry.sleep(ctx, attempt); err != nil {
			return err
		}
	}
}

// retryableCodes are error codes that say "the same request may succeed
// later": throttling, capacity, conflicts with other transactions, a
// transaction with the same token still running, and server faults.
var retryableCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"RequestLimitExceeded":                   true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
	"InternalServerError":                    true,
	"InternalFailure":                        true,
	"ServiceUnavailable":                     true,
}

// retryableReasons are cancellation reasons of a transaction that was not
// applied for a passing cause; ConditionalCheckFailed is not among them.
var retryableReasons = map[string]bool{
	"TransactionConflict":           true,
	"ThrottlingError":               true,
	"ProvisionedThroughputExceeded": true,
	"RequestLimitExceeded":          true,
}

func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		passing := false
		for _, r := range tce.CancellationReasons {
			code := aws.ToString(r.Code)
			switch {
			case code == "" || code == "None":
			case retryableReasons[code]:
				passing = true
			default:
				return false // a condition failed, or the request is invalid
			}
		}
		return passing
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if retryableCodes[api.ErrorCode()] {
			return true
		}
	}
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 {
		return true
	}
	// The request may or may not have reached DynamoDB: a lost response.
	// Retrying is safe because every write is either conditional and
	// checked (transactions carry a ClientRequestToken) or idempotent.
	var send *smithyhttp.RequestSendError
	if errors.As(err, &send) {
		return true
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// newRequestToken is one Commit's ClientRequestToken (at most 36 characters).
func newRequestToken() string {
	var b [16]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
