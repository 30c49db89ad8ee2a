package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// skewedSpawn is a spawn issued in a clock test, and the real time just
// before the command that issued it started.
type skewedSpawn struct {
	entity, request string
	before          time.Time
	callback        bool // answered by a callback (else left to the sweep, or raced)
}

// issueSkewed concludes a claim and assumes it, from a CLI whose clock is
// moved by offset (DONT_FAULT_CLOCK_OFFSET, a test build's).
func (p *testProject) issueSkewed(t *testing.T, offset time.Duration, statement string) skewedSpawn {
	t.Helper()
	env := []string{"DONT_FAULT_CLOCK_OFFSET=" + offset.String()}
	id := p.runEnv(env, "conclude", statement).str("id")
	before := time.Now()
	r := p.runEnv(env, "assume", id, "--json")
	if r.exit != 0 || r.str("request_id") == "" {
		t.Fatalf("assume %s: exit %d %s", id, r.exit, r.stdout)
	}
	return skewedSpawn{entity: id, request: r.str("request_id"), before: before}
}

// callbackSkewed sends the subagent's callback from a CLI with the clock
// offset, and says whether it was applied.
func (p *testProject) callbackSkewed(offset time.Duration, s skewedSpawn) bool {
	r := p.runEnv([]string{"DONT_FAULT_CLOCK_OFFSET=" + offset.String()},
		"dismiss", s.entity, "--evidence", "https://example.org/clock", "--request-id", s.request, "--json")
	res, _ := r.data()["resolution"].(map[string]any)
	return r.exit == 0 && res["outcome"] == string(spawn.CallbackApplied)
}

// resolvedSpawns reads the spawns from the store, without sweeping, until
// every one is resolved (the resolvers are the processes under test).
func resolvedSpawns(t *testing.T, p *testProject, spawns []skewedSpawn, within time.Duration) (map[string]spawn.Spawn, map[string][]ledger.Event) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		got, pending := map[string]spawn.Spawn{}, 0
		for _, s := range spawns {
			sp, err := st.GetSpawn(ctx, s.request)
			if err != nil {
				t.Fatal(err)
			}
			got[s.request] = sp
			if sp.State == spawn.Pending {
				pending++
			}
		}
		if pending == 0 {
			events := map[string][]ledger.Event{}
			for _, s := range spawns {
				evs, err := st.Events(ctx, s.entity)
				if err != nil {
					t.Fatal(err)
				}
				events[s.request] = evs
			}
			return got, events
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spawns still pending %s after they were issued", pending, within)
		}
		time.Sleep(20 * time.Millisecond) // polling the store for the server's sweep; no order is assumed
	}
}

// terminals counts a request's terminal events.
func terminals(evs []ledger.Event, request string) int {
	n := 0
	for _, e := range evs {
		if e.RequestID == request && (e.Kind == ledger.EvSpawnResolved || e.Kind == ledger.EvSpawnTimeout ||
			e.Kind == ledger.EvSpawnCancelled || e.Kind == ledger.EvSpawnFailed) {
			n++
		}
	}
	return n
}

// Two processes on one project whose clocks disagree: the CLIs that issue
// the spawns run a second behind dont serve (which sweeps every 50 ms).
// A spawn times out no earlier, in real time, than its timeout less that
// skew (the documented tolerance: docs/design.md, 5.5), callbacks from a
// CLI a second ahead are applied, a callback raced against the server's
// sweep at the moment the server's clock says due either wins or is
// refused, and every spawn has exactly one terminal event.
func TestSkewedClocksTimeOutNoEarlierThanTheSkewAndNeverTwice(t *testing.T) {
	t.Parallel()
	const timeout, skew = 6 * time.Second, time.Second
	n := 6
	if testing.Short() {
		n = 4
	}
	p := newProject(t, "DONT_SPAWN_TIMEOUT="+timeout.String())
	p.serve(t) // the server's clock is the real one
	var spawns []skewedSpawn
	for i := 0; i < n; i++ {
		s := p.issueSkewed(t, -skew, fmt.Sprintf("claim %d under a skewed clock", i))
		if i%3 == 0 {
			s.callback = true
			if !p.callbackSkewed(skew, s) {
				t.Fatalf("a callback from a CLI a second ahead, well before the expiry, was not applied (%s)", s.request)
			}
		}
		spawns = append(spawns, s)
	}
	// Race a callback against the server's sweep where the server's
	// clock says due; either may win.
	raced := spawns[len(spawns)-1]
	if !raced.callback {
		time.Sleep(time.Until(raced.before.Add(timeout - skew)))
		p.callbackSkewed(-skew, raced)
	}
	got, events := resolvedSpawns(t, p, spawns, 30*time.Second)
	timedOut := 0
	for _, s := range spawns {
		sp := got[s.request]
		if k := terminals(events[s.request], s.request); k != 1 {
			t.Errorf("%s has %d terminal events, want 1", s.request, k)
		}
		if !sp.IssuedAt.Before(s.before.Add(-skew / 2)) {
			t.Errorf("%s issued at %s by a clock a second behind, not before %s: the clock offset was not applied", s.request, sp.IssuedAt, s.before)
		}
		if s.callback && sp.Outcome != spawn.CallbackApplied {
			t.Errorf("%s: outcome %s, want its callback applied", s.request, sp.Outcome)
		}
		if sp.Outcome != spawn.TimeoutRestored {
			continue
		}
		timedOut++
		// The resolvers' clocks are the real one (serve, doctor) or a
		// second behind (the CLIs): ResolvedAt is at most the real time.
		if earliest := s.before.Add(timeout - skew); sp.ResolvedAt == nil || sp.ResolvedAt.Before(earliest) {
			t.Errorf("%s timed out at %v, before %s (issued after %s with a %s timeout, clocks %s apart)", s.request, sp.ResolvedAt, earliest, s.before, timeout, skew)
		}
	}
	if timedOut == 0 {
		t.Fatal("no spawn timed out: the test checked no expiry")
	}
}

// Every process on a machine whose clock jumps back: spawns issued before
// the jump time out late (by the jump), never early; a callback after
// their real expiry but before the jumped clocks say due is applied; each
// has one terminal event, and no resolver timed a spawn out before its own
// clock passed the expiry.
func TestAClockThatJumpsBackDelaysTimeoutsAndNeverEndsASpawnTwice(t *testing.T) {
	t.Parallel()
	const timeout, jump = 2 * time.Second, 5 * time.Second
	p := newProject(t, "DONT_SPAWN_TIMEOUT="+timeout.String())
	srv := p.serve(t)
	var spawns []skewedSpawn
	for i := 0; i < 4; i++ {
		spawns = append(spawns, p.issueSkewed(t, 0, fmt.Sprintf("claim %d before the jump", i)))
	}
	issued := time.Now() // every spawn was issued (and its expiry set) before this
	// The jump: the server restarts reading a clock `jump` behind (a
	// process's wall clock read after the jump), as does every CLI.
	srv.cmd.Process.Signal(syscall.SIGKILL)
	srv.cmd.Wait()
	p.serve(t, "DONT_FAULT_CLOCK_OFFSET=-"+jump.String())
	// After the real expiry of every spawn, before the jumped clocks say
	// the last one is due.
	last := len(spawns) - 1
	time.Sleep(time.Until(issued.Add(timeout + 200*time.Millisecond)))
	if time.Now().After(spawns[last].before.Add(timeout + jump - time.Second)) {
		t.Fatal("the machine was too slow to place the callback before the jumped clock's expiry")
	}
	spawns[last].callback = true
	if !p.callbackSkewed(-jump, spawns[last]) {
		t.Fatalf("a callback after the real expiry but before the jumped clock's was refused: the spawn ended early")
	}
	got, events := resolvedSpawns(t, p, spawns, 30*time.Second)
	for _, s := range spawns {
		sp := got[s.request]
		if k := terminals(events[s.request], s.request); k != 1 {
			t.Errorf("%s has %d terminal events, want 1", s.request, k)
		}
		if s.callback {
			continue
		}
		if sp.Outcome != spawn.TimeoutRestored {
			t.Errorf("%s: outcome %s, want a timeout", s.request, sp.Outcome)
			continue
		}
		if sp.ResolvedAt == nil || sp.ResolvedAt.Before(sp.ExpiresAt) {
			t.Errorf("%s timed out at %v by a clock that had not reached its expiry %s", s.request, sp.ResolvedAt, sp.ExpiresAt)
		}
		// ResolvedAt is the jumped clock's: the real time was jump later.
		if real := sp.ResolvedAt.Add(jump); real.Before(s.before.Add(timeout + jump)) {
			t.Errorf("%s timed out at real %s, before its expiry plus the jump", s.request, real)
		}
	}
}
