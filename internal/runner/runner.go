// Package runner is `dont spawns run`: a reference harness that turns
// spawn requests into running subagents. For each request it starts the
// configured agent command as a subprocess in its own process group, in a
// fresh private folder outside the project, with a clean environment (the
// prompt, DONT_REQUEST_ID, DONT_ENDPOINT, the spawn's callback token as
// DONT_TOKEN, and only the caller's variables the profile allows). It
// heartbeats the spawn only while the agent shows progress (output, or
// calls on its token), kills the agent and every descendant at a hard
// deadline whatever the heartbeats, or when interrupted, and cancels a
// spawn its agent ended without resolving, so that no claim stays held
// by an agent that is gone. It reaches dont through the Dont port (the
// CLI wires the embedded store or an endpoint); it is an adapter at the
// edge and knows no store or transport (docs/harnesses.md).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/spawn"
)

// Dont is how the runner reaches dont: one tool call, its envelope. A
// transport failure is an error; a refusal is an envelope that is not ok.
type Dont interface {
	Call(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error)
	// CallConfirmed is a gated call (the runner's spawns.cancel) that the
	// runner's own invocation confirms: the person who started it chose
	// that a spawn its agent leaves unresolved is cancelled.
	CallConfirmed(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error)
}

// Outcome is how one run ended.
type Outcome string

// Outcomes of a run.
const (
	// Resolved: the spawn ended with the subagent's callback.
	Resolved Outcome = "resolved"
	// TimedOut: the run's deadline or the spawn's expiry came first; the
	// agent was killed and the spawn cancelled by the runner (or timed
	// out by the store, spawn_timeout).
	TimedOut Outcome = "timed-out"
	// Unresolved: the agent exited 0 without resolving; the runner
	// cancelled the spawn.
	Unresolved Outcome = "unresolved"
	// AgentFailed: the agent could not start, or exited non-zero, without
	// resolving; the runner cancelled the spawn.
	AgentFailed Outcome = "agent-failed"
	// EndedElsewhere: another resolver (a cancel, say) ended the spawn;
	// the agent was stopped.
	EndedElsewhere Outcome = "ended-elsewhere"
	// Interrupted: the runner was interrupted (Ctrl-C); the agent was
	// killed and the spawn cancelled.
	Interrupted Outcome = "interrupted"
	// Skipped: the spawn was not pending when the run would have started.
	Skipped Outcome = "skipped"
)

// Run is what happened to one spawn request.
type Run struct {
	RequestID    string        `json:"request_id"`
	EntityID     string        `json:"entity_id,omitempty"`
	Agent        string        `json:"agent"`
	Outcome      Outcome       `json:"outcome"`
	SpawnState   spawn.State   `json:"spawn_state,omitempty"`
	SpawnOutcome spawn.Outcome `json:"spawn_outcome,omitempty"`
	// ExitCode is the agent's exit status (-1: killed by a signal).
	ExitCode *int `json:"exit_code,omitempty"`
	// Killed says why the runner killed the agent.
	Killed Kill `json:"killed,omitempty"`
	// Cancelled is why the runner cancelled the spawn (its reason in the
	// spawn's history), when its agent ended without resolving it.
	Cancelled CancelReason `json:"cancelled,omitempty"`
	// Heartbeats were sent; HeartbeatsWithheld were due but the agent had
	// shown no progress since the last one.
	Heartbeats         int `json:"heartbeats"`
	HeartbeatsWithheld int `json:"heartbeats_withheld"`
	// ExpiresAt is the spawn's expiry as the runner last knew it;
	// DeadlineAt the run's hard deadline, which no heartbeat moves.
	ExpiresAt  time.Time `json:"expires_at"`
	DeadlineAt time.Time `json:"deadline_at,omitzero"`
	// Workdir is where the agent ran.
	Workdir   string    `json:"workdir,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Error     string    `json:"error,omitempty"`
}

// Kill is why the runner killed an agent.
type Kill string

// Why the runner killed an agent.
const (
	// KilledDeadline: the run's hard deadline (--deadline) came.
	KilledDeadline Kill = "deadline"
	// KilledExpired: the spawn's expiry came, no heartbeat having moved it.
	KilledExpired Kill = "expired"
	// KilledInterrupt: the runner was interrupted.
	KilledInterrupt Kill = "interrupt"
	// KilledEndedElsewhere: another resolver ended the spawn.
	KilledEndedElsewhere Kill = "ended-elsewhere"
)

// CancelReason is why the runner cancelled a spawn, recorded as the
// cancel's reason in the spawn's history.
type CancelReason string

// Why the runner cancels a spawn.
const (
	CancelDeadline    CancelReason = "deadline reached"
	CancelExpired     CancelReason = "the spawn's expiry passed"
	CancelInterrupted CancelReason = "the runner was interrupted"
	CancelNotStarted  CancelReason = "the agent could not start"
	CancelFailed      CancelReason = "the agent failed without resolving its spawn"
	CancelExited      CancelReason = "the agent exited without resolving its spawn"
)

// Report is every run of one invocation.
type Report struct {
	Count       int   `json:"count"`
	Resolved    int   `json:"resolved"`
	Interrupted bool  `json:"interrupted"`
	Runs        []Run `json:"runs"`
}

// OK reports whether every run resolved its spawn.
func (r Report) OK() bool { return !r.Interrupted && r.Resolved == r.Count }

// Runner runs agents for spawn requests.
type Runner struct {
	Dont    Dont
	Profile Profile
	// Endpoint is what the agent gets as DONT_ENDPOINT: the caller's own
	// endpoint, or the loopback server the CLI started for an embedded
	// store (docs/harnesses.md, "Embedded mode").
	Endpoint string
	// Environ is the caller's environment (KEY=value); only the
	// variables Profile.Env names reach the agent, never DONT_PROJECT_DIR.
	Environ []string
	// Dir is the agents' working directory ("": a fresh private folder
	// for each agent, made in the system's temporary folder and removed
	// after the agent's end). CheckDir, when set, refuses a folder from
	// which the owner's store would be found (the CLI: a .dont/ at or
	// above it); the runner applies it to the folders it makes.
	Dir      string
	CheckDir func(dir string) error
	// ProjectDir is the project folder, for a profile whose prompt names
	// it ({{.ProjectDir}}; "" when the runner has none).
	ProjectDir string
	// Deadline bounds each agent's run from its start, whatever the
	// heartbeats (0: the spawn's original timeout, expires_at − issued_at
	// of the request as the runner reads it). The spawn's expiry, which
	// no heartbeat moves past spawn_max_lease, bounds the run too.
	Deadline time.Duration
	// Calls counts the agents' calls on the API the runner serves them
	// (embedded mode); nil: only output shows progress.
	Calls *CallCounter
	// MaxParallel bounds the agents running at once (default 1).
	MaxParallel int
	// Heartbeat is how often the spawn of an agent that showed progress
	// since the last heartbeat is heartbeaten (0: never: the run is
	// bounded by the spawn's expiry as issued); Extend is each
	// heartbeat's --extend (default 3 × Heartbeat; never past the hard
	// deadline).
	Heartbeat time.Duration
	Extend    time.Duration
	// Grace is how long SIGTERM has before SIGKILL (default 5s).
	Grace time.Duration
	// Poll is how often Watch lists the pending spawns (default 2s).
	Poll time.Duration
	// Output receives the agents' stdout and stderr (nil: discarded).
	Output io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// CallbackToken, if set, makes the callback token of a spawn read by
	// its id (Fetch): a read never carries it (it is shown once, at
	// issue), so only a runner that holds the store itself — the embedded
	// one — can run a spawn it did not receive as issued.
	CallbackToken func(ctx context.Context, requestID string) (string, error)

	outMu sync.Mutex
	// procMu orders starting an agent with sweeping the runner's
	// descendants, so that a sweep never takes an agent being started
	// for an orphan; agents are the ones running.
	procMu    sync.Mutex
	agents    map[int]bool
	adoptOnce sync.Once
	adoptErr  error
}

// Variables the runner sets for the agent; the caller's are never passed
// under these names.
var ownVars = []string{"DONT_REQUEST_ID", "DONT_ENDPOINT", "DONT_TOKEN", "DONT_HARNESS", "DONT_ALLOWED_TOOLS", "DONT_ENTITY_ID"}

// neverPassed are the caller's variables no profile passes on: from
// DONT_PROJECT_DIR an agent's own dont would find the owner's store.
var neverPassed = []string{"DONT_PROJECT_DIR"}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Fetch reads the spawn request id as issued (show spawn:…). The read
// carries no callback token; CallbackToken, if set, makes it.
func (r *Runner) Fetch(ctx context.Context, id string) (spawn.Request, error) {
	req, err := r.fetch(ctx, id)
	if err != nil || req.Callback.Token != "" || r.CallbackToken == nil {
		return req, err
	}
	req.Callback.Token, err = r.CallbackToken(ctx, id)
	return req, err
}

func (r *Runner) fetch(ctx context.Context, id string) (spawn.Request, error) {
	var req spawn.Request
	env, err := r.Dont.Call(ctx, "show", map[string]any{"id": id})
	if err != nil {
		return req, err
	}
	if err := failed(env); err != nil {
		return req, err
	}
	if env.Kind != envelope.KindSpawnRequest {
		return req, fmt.Errorf("%s is not a spawn request (envelope_kind %s)", id, env.Kind)
	}
	return req, json.Unmarshal(env.Data, &req)
}

// RunAll runs every request, at most MaxParallel at once, and returns
// when every agent has been reaped.
func (r *Runner) RunAll(ctx context.Context, reqs []spawn.Request) Report {
	runs := make([]Run, len(reqs))
	sem := make(chan struct{}, r.parallel())
	var wg sync.WaitGroup
	for i, req := range reqs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			runs[i] = Run{RequestID: req.RequestID, EntityID: req.EntityID, Agent: r.Profile.Name, Outcome: Interrupted, ExpiresAt: req.ExpiresAt}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			runs[i] = r.RunOne(ctx, req)
		}()
	}
	wg.Wait()
	return report(runs, ctx.Err() != nil)
}

// Watch runs an agent for every spawn that becomes pending in the
// project, listing them every Poll, until ctx is done; then it kills the
// agents still running, reaps them and reports every run. A first listing
// that fails is returned as the error (a RefusedError for a refusal).
func (r *Runner) Watch(ctx context.Context) (Report, error) {
	poll := r.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	var mu sync.Mutex
	var runs []Run
	seen := map[string]bool{}
	sem := make(chan struct{}, r.parallel())
	var wg sync.WaitGroup
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for first := true; ; first = false {
		ids, err := r.pending(ctx)
		if err != nil && first {
			return report(nil, false), err // nothing started: a bad token or endpoint says so at once
		}
		// Later, a failed poll is transient: the next one tries again.
		for _, id := range ids {
			if seen[id] {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			seen[id] = true
			req, err := r.Fetch(ctx, id)
			if err != nil {
				<-sem
				mu.Lock()
				runs = append(runs, Run{RequestID: id, Agent: r.Profile.Name, Outcome: AgentFailed, Error: err.Error()})
				mu.Unlock()
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				run := r.RunOne(ctx, req)
				mu.Lock()
				runs = append(runs, run)
				mu.Unlock()
			}()
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return report(runs, true), nil
		case <-tick.C:
		}
	}
}

func (r *Runner) pending(ctx context.Context) ([]string, error) {
	env, err := r.Dont.Call(ctx, "spawns", map[string]any{"pending": true})
	if err != nil {
		return nil, err
	}
	if err := failed(env); err != nil {
		return nil, err
	}
	var list struct {
		Spawns []spawn.Spawn `json:"spawns"`
	}
	if err := json.Unmarshal(env.Data, &list); err != nil {
		return nil, err
	}
	var ids []string
	for _, sp := range list.Spawns {
		if sp.Mode == spawn.ModeHarness {
			ids = append(ids, sp.ID)
		}
	}
	return ids, nil
}

func (r *Runner) parallel() int {
	if r.MaxParallel <= 0 {
		return 1
	}
	return r.MaxParallel
}

func report(runs []Run, interrupted bool) Report {
	rep := Report{Count: len(runs), Runs: runs, Interrupted: interrupted}
	if rep.Runs == nil {
		rep.Runs = []Run{}
	}
	for _, run := range runs {
		if run.Outcome == Resolved {
			rep.Resolved++
		}
	}
	return rep
}

// RunOne runs the agent for one spawn request and returns once the agent
// and every process it started have ended and been reaped.
func (r *Runner) RunOne(ctx context.Context, req spawn.Request) (run Run) {
	run = Run{RequestID: req.RequestID, EntityID: req.EntityID, Agent: r.Profile.Name, ExpiresAt: req.ExpiresAt, StartedAt: r.now().UTC()}
	defer func() { run.EndedAt = r.now().UTC() }()
	if req.Callback.Token == "" {
		run.Outcome, run.Error = AgentFailed, "the spawn request carries no callback token: it is shown once, in the response that issued the spawn "+
			"(pipe that into dont spawns run: dont assume <id> --json | dont spawns run --agent <name>), or this store keeps no project secret"
		return run
	}
	// Where the spawn stands now (the read sweeps first: an expired one is
	// timed out by it), and its current expiry, which a heartbeat may have
	// moved since the request was issued.
	sp, err := r.record(ctx, req.RequestID)
	if err != nil {
		run.Outcome, run.Error = AgentFailed, err.Error()
		return run
	}
	if sp.State != spawn.Pending {
		run.Outcome, run.SpawnState, run.SpawnOutcome = Skipped, sp.State, sp.Outcome
		return run
	}
	run.ExpiresAt = sp.ExpiresAt
	run.DeadlineAt = r.deadline(req, sp)
	notStarted := func(why string) Run {
		run.Outcome, run.Error = AgentFailed, why
		return r.finish(ctx, run, nil)
	}
	if err := r.adopt(); err != nil {
		return notStarted("cannot become the subreaper of the agent's processes: " + err.Error())
	}
	rendered, err := r.Profile.RenderIn(req, r.Endpoint, r.ProjectDir)
	if err != nil {
		return notStarted(err.Error())
	}
	dir, removeDir, err := r.workdir()
	if err != nil {
		return notStarted(err.Error())
	}
	defer removeDir()
	run.Workdir = dir
	prog := &progress{calls: r.Calls, token: req.Callback.Token}
	r.Calls.track(req.Callback.Token)
	defer r.Calls.forget(req.Callback.Token)

	// The agent's stdin and output are pipes of the runner's own, not
	// exec's copying goroutines: Wait then returns when the agent exits,
	// even while a process it left behind holds them open.
	inR, inW, err := os.Pipe()
	if err != nil {
		return notStarted("cannot make the agent's stdin: " + err.Error())
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return notStarted("cannot make the agent's output: " + err.Error())
	}
	cmd := exec.Command(rendered.Argv[0], rendered.Argv[1:]...)
	cmd.Env = r.environ(req)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	ownGroup(cmd)
	r.procMu.Lock()
	err = cmd.Start()
	if err == nil {
		if r.agents == nil {
			r.agents = map[int]bool{}
		}
		r.agents[cmd.Process.Pid] = true
	}
	r.procMu.Unlock()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return notStarted("cannot start the agent: " + err.Error())
	}
	go func() { // ends when written, or when every reader is gone
		_, _ = io.WriteString(inW, rendered.Stdin)
		inW.Close()
	}()
	copied := make(chan struct{})
	go func() { defer close(copied); prog.copyOutput(r.output(), outR) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // the agent is reaped here; what it left, by the sweep

	waitErr := r.watch(ctx, req, cmd, exited, prog, &run)
	r.contain(cmd)
	select { // every writer is gone after the sweep; elsewhere one may have escaped it
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	outR.Close()
	<-copied
	code := exitCode(waitErr)
	run.ExitCode = &code
	return r.finish(ctx, run, waitErr)
}

// watch waits for the agent's end: its exit, the interrupt, the hard
// deadline, the spawn's expiry, or another resolver's end of the spawn;
// meanwhile it heartbeats the spawn at each tick when the agent showed
// progress since the last heartbeat. It kills the agent when it is the
// one to end it, and returns the agent's exit.
func (r *Runner) watch(ctx context.Context, req spawn.Request, cmd *exec.Cmd, exited <-chan error, prog *progress, run *Run) error {
	var beat <-chan time.Time
	if r.Heartbeat > 0 {
		t := time.NewTicker(r.Heartbeat)
		defer t.Stop()
		beat = t.C
	}
	hard := time.NewTimer(time.Until(run.DeadlineAt))
	defer hard.Stop()
	expiry := time.NewTimer(time.Until(run.ExpiresAt))
	defer expiry.Stop()
	var seen uint64 // progress at the last heartbeat
	kill := func(why Kill) error {
		run.Killed = why
		return r.kill(cmd, exited)
	}
	for {
		select {
		case err := <-exited:
			return err
		case <-ctx.Done():
			return kill(KilledInterrupt)
		case <-hard.C:
			return kill(KilledDeadline)
		case <-expiry.C:
			// The store decides the expiry: another heartbeat (the
			// agent's own, on its token) may have moved it; the hard
			// deadline bounds the run whatever it says.
			sp, err := r.record(ctx, req.RequestID)
			if err == nil && sp.State == spawn.Pending && sp.ExpiresAt.After(run.ExpiresAt) {
				run.ExpiresAt = sp.ExpiresAt
				expiry.Reset(time.Until(run.ExpiresAt))
				continue
			}
			return kill(KilledExpired)
		case <-beat:
			mark := prog.mark()
			if mark == seen {
				run.HeartbeatsWithheld++ // silent since the last one: let the spawn run out
				continue
			}
			extend := r.Extend
			if extend <= 0 {
				extend = 3 * r.Heartbeat
			}
			if left := time.Until(run.DeadlineAt); left < extend {
				extend = left // no expiry beyond the hard deadline
			}
			if extend <= 0 {
				continue
			}
			hb, err := r.heartbeat(ctx, req.RequestID, extend)
			if err != nil {
				continue // the deadlines still bound the run
			}
			seen = mark
			run.Heartbeats++
			if hb.State != spawn.Pending {
				if hb.Outcome != spawn.CallbackApplied {
					return kill(KilledEndedElsewhere)
				}
				beat = nil // resolved by the agent: it is finishing
				continue
			}
			if hb.ExpiresAt.After(run.ExpiresAt) {
				run.ExpiresAt = hb.ExpiresAt
				expiry.Reset(time.Until(run.ExpiresAt))
			}
			if !hb.LeaseEndsAt.IsZero() && hb.LeaseEndsAt.Before(run.DeadlineAt) {
				run.DeadlineAt = hb.LeaseEndsAt.UTC() // never beyond spawn_max_lease
				hard.Reset(time.Until(run.DeadlineAt))
			}
		}
	}
}

// deadline is the run's hard deadline: Deadline (or the spawn's original
// timeout) from now.
func (r *Runner) deadline(req spawn.Request, sp spawn.Spawn) time.Time {
	now := r.now()
	limit := r.Deadline
	if limit <= 0 {
		limit = req.ExpiresAt.Sub(req.IssuedAt)
		if req.IssuedAt.IsZero() || req.ExpiresAt.IsZero() {
			limit = sp.ExpiresAt.Sub(sp.IssuedAt)
		}
	}
	if limit <= 0 {
		return sp.ExpiresAt.UTC()
	}
	return now.Add(limit).UTC()
}

// adopt makes the runner the subreaper of its agents' processes, once.
func (r *Runner) adopt() error {
	r.adoptOnce.Do(func() { r.adoptErr = adopt() })
	return r.adoptErr
}

// contain kills what the agent left running: its process group, then
// every other descendant of the runner that is not a running agent's
// (docs/harnesses.md, "Containment"), and reaps them.
func (r *Runner) contain(cmd *exec.Cmd) {
	killGroup(cmd)
	r.procMu.Lock()
	defer r.procMu.Unlock()
	delete(r.agents, cmd.Process.Pid)
	sweep(r.agents)
}

// workdir is the agent's working directory and what removes it.
func (r *Runner) workdir() (string, func(), error) {
	if r.Dir != "" {
		return r.Dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "dont-agent-")
	if err != nil {
		return "", nil, fmt.Errorf("cannot make the agent's working directory: %w", err)
	}
	remove := func() { _ = os.RemoveAll(dir) }
	if r.CheckDir != nil {
		if err := r.CheckDir(dir); err != nil {
			remove()
			return "", nil, err
		}
	}
	return dir, remove, nil
}

// finish reads how the spawn ended (the read sweeps first, so a spawn
// past its expiry is timed out by it), cancels it if it is still pending
// (its agent is gone and every process it started with it), and names
// the run's outcome.
func (r *Runner) finish(ctx context.Context, run Run, waitErr error) Run {
	rctx := context.WithoutCancel(ctx) // interrupted, the spawn is still freed and reported
	sp, err := r.record(rctx, run.RequestID)
	// Killed at the spawn's expiry by this clock, the store's may be a
	// moment behind: read again, briefly, until its sweep has timed the
	// spawn out, so that the history says timeout.
	for i := 0; i < 10 && err == nil && run.Killed == KilledExpired && sp.State == spawn.Pending && !sp.ExpiresAt.After(run.ExpiresAt); i++ {
		time.Sleep(200 * time.Millisecond)
		sp, err = r.record(rctx, run.RequestID)
	}
	if err == nil && sp.State == spawn.Pending {
		why := cancelReason(run, waitErr)
		var cancelled bool
		if cancelled, err = r.cancel(rctx, run.RequestID, why); err == nil {
			if cancelled {
				run.Cancelled = why
			}
			sp, err = r.record(rctx, run.RequestID)
		}
	}
	if err != nil {
		if run.Outcome == "" {
			run.Outcome = AgentFailed
		}
		if run.Error == "" {
			run.Error = "cannot read or cancel the spawn after the run: " + err.Error()
		}
		return run
	}
	run.SpawnState, run.SpawnOutcome = sp.State, sp.Outcome
	if sp.State == spawn.Pending {
		run.ExpiresAt = sp.ExpiresAt
	}
	switch {
	case run.Outcome != "": // could not start
	case sp.Outcome == spawn.CallbackApplied:
		run.Outcome = Resolved
	case run.Killed == KilledDeadline || run.Killed == KilledExpired || sp.Outcome == spawn.TimeoutRestored:
		run.Outcome = TimedOut
	case sp.State == spawn.Resolved && run.Cancelled == "":
		run.Outcome = EndedElsewhere
	case run.Killed == KilledInterrupt:
		run.Outcome = Interrupted
	case waitErr != nil:
		run.Outcome = AgentFailed
	default:
		run.Outcome = Unresolved
	}
	return run
}

// cancelReason says why a spawn whose agent has ended is cancelled.
func cancelReason(run Run, waitErr error) CancelReason {
	switch {
	case run.Killed == KilledDeadline:
		return CancelDeadline
	case run.Killed == KilledExpired:
		return CancelExpired
	case run.Killed == KilledInterrupt:
		return CancelInterrupted
	case run.ExitCode == nil:
		return CancelNotStarted
	case waitErr != nil:
		return CancelFailed
	}
	return CancelExited
}

// kill ends the agent's process group: SIGTERM, then SIGKILL after the
// grace period, and waits for the agent to be reaped.
func (r *Runner) kill(cmd *exec.Cmd, exited <-chan error) error {
	grace := r.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	terminate(cmd)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
	}
	killGroup(cmd)
	return <-exited
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// environ is the agent's whole environment: the allowed variables of the
// caller, then the runner's own.
func (r *Runner) environ(req spawn.Request) []string {
	allowed := map[string]bool{}
	for _, k := range r.Profile.Env {
		allowed[k] = true
	}
	for _, k := range append(ownVars, neverPassed...) {
		allowed[k] = false
	}
	var env []string
	for _, kv := range r.Environ {
		k, _, _ := strings.Cut(kv, "=")
		if allowed[k] {
			env = append(env, kv)
		}
	}
	env = append(env,
		"DONT_REQUEST_ID="+req.RequestID,
		"DONT_ENDPOINT="+r.Endpoint,
		"DONT_TOKEN="+req.Callback.Token,
		"DONT_HARNESS=1",
		"DONT_ALLOWED_TOOLS="+strings.Join(req.Context.AllowedTools, ","),
	)
	if req.EntityID != "" {
		env = append(env, "DONT_ENTITY_ID="+req.EntityID)
	}
	return env
}

// heartbeatResult is what spawns heartbeat answers.
type heartbeatResult struct {
	State     spawn.State   `json:"state"`
	Outcome   spawn.Outcome `json:"outcome"`
	ExpiresAt time.Time     `json:"expires_at"`
	Moved     bool          `json:"moved"`
	// LeaseEndsAt: no heartbeat moves the expiry past it.
	LeaseEndsAt time.Time `json:"lease_ends_at"`
}

func (r *Runner) heartbeat(ctx context.Context, id string, extend time.Duration) (heartbeatResult, error) {
	var hb heartbeatResult
	args := map[string]any{"request_id": id, "extend": extend.String()}
	env, err := r.Dont.Call(ctx, "spawns.heartbeat", args)
	if err != nil {
		return hb, err
	}
	if err := failed(env); err != nil {
		return hb, err
	}
	return hb, json.Unmarshal(env.Data, &hb)
}

// cancel cancels a pending spawn with a reason; cancelled says whether
// this call ended it (another resolver may have come first).
func (r *Runner) cancel(ctx context.Context, id string, reason CancelReason) (cancelled bool, err error) {
	env, err := r.Dont.CallConfirmed(ctx, "spawns.cancel", map[string]any{"request_id": id, "reason": string(reason)})
	if err != nil {
		return false, err
	}
	if err := failed(env); err != nil {
		return false, err
	}
	var res struct {
		Applied bool `json:"applied"`
	}
	err = json.Unmarshal(env.Data, &res)
	return res.Applied, err
}

func (r *Runner) record(ctx context.Context, id string) (spawn.Spawn, error) {
	var sp spawn.Spawn
	env, err := r.Dont.Call(ctx, "spawns.manage", map[string]any{"op": "show", "request_id": id})
	if err != nil {
		return sp, err
	}
	if err := failed(env); err != nil {
		return sp, err
	}
	return sp, json.Unmarshal(env.Data, &sp)
}

// output is a writer shared by the agents, one write at a time.
func (r *Runner) output() io.Writer {
	if r.Output == nil {
		return io.Discard
	}
	return lockedWriter{mu: &r.outMu, w: r.Output}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// RefusedError is a dont call the runner made that was refused; Env is
// its error envelope.
type RefusedError struct{ Env envelope.Envelope }

func (e *RefusedError) Error() string {
	var d struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(e.Env.Data, &d)
	return d.Code + ": " + d.Message
}

func failed(env envelope.Envelope) error {
	if env.OK {
		return nil
	}
	return &RefusedError{Env: env}
}
