package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// fakeNow is a clock the test moves.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// One harness running 16 subagents on `dont serve`: each lifecycle is an
// assume on the harness token and a callback on that spawn's own token
// (its own bucket). The floor of bench/serveload — the same durable work
// done the simplest way on the same driver — commits ~2,500 lifecycles a
// second on two cores, which no `dont serve` there exceeds; the defaults
// let that rate through without a single refusal, even when the harness
// makes the callbacks on its own token too (two requests a lifecycle).
func TestTheDefaultLimitsLetOneHarnessRunSixteenSubagentsAtTheServersCapacity(t *testing.T) {
	const lifecycles = 2400 // a second of them
	for _, callbacksOnTheHarnessToken := range []bool{false, true} {
		clock := &fakeNow{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		perToken := newLimiter(DefaultRatePerSecond, DefaultBurst, clock.now)
		total := newLimiter(DefaultTotalPerSecond, DefaultTotalBurst, clock.now)
		refused := 0
		take := func(key string) {
			if _, ok := total.allow(""); !ok {
				refused++
			}
			if _, ok := perToken.allow(key); !ok {
				refused++
			}
		}
		for s := 0; s < 5; s++ { // five seconds of steady load
			for i := 0; i < lifecycles; i++ {
				clock.t = clock.t.Add(time.Second / lifecycles)
				take("tok:harness")
				if callbacksOnTheHarnessToken {
					take("tok:harness")
				} else {
					take(fmt.Sprintf("spawn:%d-%d", s, i))
				}
			}
		}
		if refused != 0 {
			t.Errorf("callbacks on the harness token %v: %d calls refused at %d lifecycles/s", callbacksOnTheHarnessToken, refused, lifecycles)
		}
	}
}

// A flood beyond the server's capacity, from one token or from many, is
// still refused, with how long to wait.
func TestAFloodBeyondTheDefaultLimitsIsRefusedWithAWait(t *testing.T) {
	clock := &fakeNow{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name  string
		l     *limiter
		rate  int
		burst int
		key   func(i int) string
	}{
		{"one token", newLimiter(DefaultRatePerSecond, DefaultBurst, clock.now), DefaultRatePerSecond, DefaultBurst, func(int) string { return "tok:agent" }},
		{"many tokens", newLimiter(DefaultTotalPerSecond, DefaultTotalBurst, clock.now), DefaultTotalPerSecond, DefaultTotalBurst, func(int) string { return "" }},
	} {
		allowed := 0
		var wait time.Duration
		n := 4 * c.rate // a second of four times the limit
		for i := 0; i < n; i++ {
			clock.t = clock.t.Add(time.Second / time.Duration(n))
			if d, ok := c.l.allow(c.key(i)); ok {
				allowed++
			} else if d > wait {
				wait = d
			}
		}
		if max := c.burst + c.rate + 1; allowed > max || allowed == n || wait <= 0 {
			t.Errorf("%s: %d of %d allowed (at most %d), longest wait %v", c.name, allowed, n, max, wait)
		}
	}
}

// A callback token's bucket is keyed by its spawn: one per spawn ever
// called back would pile up in a long-running server. Refilled buckets
// are dropped, so the map follows the recent callers, not all of them.
func TestTheLimiterForgetsBucketsThatRefilled(t *testing.T) {
	clock := &fakeNow{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	l := newLimiter(DefaultRatePerSecond, DefaultBurst, clock.now)
	for i := 0; i < 100_000; i++ {
		clock.t = clock.t.Add(time.Millisecond)
		if _, ok := l.allow(fmt.Sprint("spawn:", i)); !ok {
			t.Fatal("a fresh bucket refused its first call")
		}
	}
	if n := l.size(); n > 4*pruneAt {
		t.Fatalf("%d buckets kept after 100,000 spawns' callbacks, one a millisecond", n)
	}
	// A bucket still refilling is kept: forgetting it would hand out a new burst.
	if _, ok := l.allow("spawn:99999"); !ok {
		t.Fatal("refused")
	}
	l.prune(clock.t)
	if _, kept := l.buckets["spawn:99999"]; !kept {
		t.Fatal("a bucket that has not refilled was dropped")
	}
}
