package httpapi_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
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

// A keyed call whose tool truly spans time (hooks.test: the key is
// claimed, the test message queued, sent to the receiver, and the
// response completed) and that died between its send and its completion
// was applied: its retry, once the claim is stale, must not send the
// receiver a second test message. It is refused with
// idempotency-outcome-unknown instead.
func TestAKeyedCallCutBetweenItsWriteAndItsResponseIsNotAppliedAgain(t *testing.T) {
	store := &cutAfterWrite{}
	a := newAPI(t, func(o *httpapi.Options) {
		b := o.Backend.(httpapi.SingleProject)
		store.Store = b.Project.Idempotency
		b.Project.Idempotency = store
		o.Backend = b
	})
	sender := &countingSender{}
	a.svc.HooksConfig = service.HooksConfig{Store: a.store, Sender: sender}
	admin := a.tokens["admin"]
	add := tokenCreate{"hooks.add", admin, "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "add-1"}
	hook := add.send(a)
	if hook.status != 200 {
		t.Fatalf("hooks.add: %d %s", hook.status, hook.raw)
	}
	test := tokenCreate{"hooks.test", admin, "hooks.test", `{"args":{"id":"` + hook.str("hook_id") + `"},"cli_confirmed":true}`, "cut-1"}
	store.cut.Store(true)
	if first := test.send(a); first.status != 200 {
		t.Fatalf("hooks.test: %d %s", first.status, first.raw)
	}
	store.cut.Store(false)
	if again := test.send(a); again.status != 409 || again.code() != "idempotency-in-progress" {
		t.Fatalf("a retry while the claim is fresh: %d %s", again.status, again.raw)
	}
	store.late.Store(int64(2 * idempotency.StaleClaim))
	again := test.send(a)
	if again.status != 409 || again.code() != string(httpapi.IdempotencyOutcomeUnknown) || len(again.data()["remediation"].([]any)) == 0 {
		t.Fatalf("a retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := sender.sent.Load(); n != 1 {
		t.Fatalf("the receiver got %d test messages, want 1", n)
	}
}
