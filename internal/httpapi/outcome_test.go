package httpapi_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// cutAfterWrite passes an idempotency.Store through, except that while
// cut is set a Complete is lost — the server died between the call's
// write and the key's completion — and that Claim and Lookup run late
// after the record was made (the transport's clock reads its time late
// earlier).
type cutAfterWrite struct {
	idempotency.Store
	cut  atomic.Bool
	late atomic.Int64
}

func (c *cutAfterWrite) Complete(ctx context.Context, key string, status int, body []byte) error {
	if c.cut.Load() {
		return nil
	}
	return c.Store.Complete(ctx, key, status, body)
}

func (c *cutAfterWrite) Claim(ctx context.Context, key, fp string, now time.Time) (*idempotency.Record, error) {
	return c.Store.Claim(ctx, key, fp, now.Add(time.Duration(c.late.Load())))
}

func (c *cutAfterWrite) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	late := time.Duration(c.late.Load())
	r, err := c.Store.Lookup(ctx, key, now.Add(late))
	if r != nil {
		r.At = r.At.Add(-late) // as the transport's clock reads it
	}
	return r, err
}

// countingSender answers every webhook attempt with 200 and counts them.
type countingSender struct{ sent atomic.Int64 }

func (c *countingSender) Send(context.Context, string, string, string, time.Time, []byte) service.SendResult {
	c.sent.Add(1)
	return service.SendResult{Status: 200}
}
