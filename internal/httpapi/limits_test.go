package httpapi_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
)

// An agent flooding the API, on its own token or across many, is answered
// 429 with Retry-After and an error envelope, and nothing it sent is
// applied; once its bucket refills it is served again.
func TestAFloodBeyondTheRateLimitGets429WithRetryAfterAndChangesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		opts httpapi.Options
	}{
		{"per token", httpapi.Options{RatePerSecond: 2, Burst: 2, TotalPerSecond: -1}},
		{"in total", httpapi.Options{RatePerSecond: -1, TotalPerSecond: 3, TotalBurst: 3}},
		{"per project", httpapi.Options{RatePerSecond: -1, TotalPerSecond: -1, ProjectPerSecond: 3, ProjectBurst: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			a := newAPI(t, func(o *httpapi.Options) {
				o.RatePerSecond, o.Burst, o.TotalPerSecond, o.TotalBurst = c.opts.RatePerSecond, c.opts.Burst, c.opts.TotalPerSecond, c.opts.TotalBurst
				o.ProjectPerSecond, o.ProjectBurst = c.opts.ProjectPerSecond, c.opts.ProjectBurst
				o.Clock = func() time.Time { return now }
			})
			tokens := []string{a.tokens["harness"], a.tokens["approver"], a.tokens["admin"]}
			served, refused := 0, 0
			for i := 0; i < 6; i++ {
				tok := tokens[0]
				if c.name != "per token" { // the project's tokens together, or every token
					tok = tokens[i%3]
				}
				before := a.eventCount()
				r := a.call(tok, "list", nil)
				if r.status == 200 {
					served++
					continue
				}
				refused++
				if r.status != 429 || r.code() != "rate-limited" {
					t.Fatalf("refusal %d: %d %s", i, r.status, r.raw)
				}
				if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
					t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
				}
				if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
					t.Fatalf("no remediation: %s", r.raw)
				}
				if h := a.call(tokens[0], "conclude", map[string]any{"statement": "flooded"}); h.status != 429 || a.eventCount() != before {
					t.Fatalf("a write in the flood: %d %s, %d events after %d", h.status, h.raw, a.eventCount(), before)
				}
			}
			if served == 0 || refused == 0 {
				t.Fatalf("%d served, %d refused", served, refused)
			}
			now = now.Add(2 * time.Second)
			if r := a.call(tokens[0], "list", nil); r.status != 200 {
				t.Fatalf("after the bucket refilled: %d %s", r.status, r.raw)
			}
		})
	}
}
