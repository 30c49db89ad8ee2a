// Package runner is `dont spawns run`: a reference harness that turns
// spawn requests into running subagents. For each request it starts the
// configured agent command as a subprocess in its own process group, with
// a clean environment (the prompt, DONT_REQUEST_ID, DONT_ENDPOINT, the
// spawn's callback token as DONT_TOKEN, and only the caller's variables
// the profile allows), heartbeats the spawn while the process lives, kills
// the group at the deadline or when interrupted, reaps every child and
// reports how the spawn ended. It reaches dont through the Dont port (the
// CLI wires the embedded store or an endpoint); it is an adapter at the
// edge and knows no store or transport (docs/harnesses.md).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
}

// Outcome is how one run ended.
type Outcome string

// Outcomes of a run.
const (
	// Resolved: the spawn ended with the subagent's callback.
	Resolved Outcome = "resolved"
	// TimedOut: the deadline came first; the agent was killed and the
	// spawn timed out (spawn_timeout).
	TimedOut Outcome = "timed-out"
	// Unresolved: the agent exited 0 without resolving; the spawn is
	// still pending, until its timeout.
	Unresolved Outcome = "unresolved"
	// AgentFailed: the agent could not start, or exited non-zero, without
	// resolving; the spawn is still pending.
	AgentFailed Outcome = "agent-failed"
	// EndedElsewhere: another resolver (a cancel, say) ended the spawn;
	// the agent was stopped.
	EndedElsewhere Outcome = "ended-elsewhere"
	// Interrupted: the runner was interrupted (Ctrl-C); the agent was
	// killed and the spawn left pending, to its timeout.
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
	// Killed says why the runner killed the agent: deadline, interrupt or
	// ended-elsewhere.
	Killed     string    `json:"killed,omitempty"`
	Heartbeats int       `json:"heartbeats"`
	ExpiresAt  time.Time `json:"expires_at"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at"`
	Error      string    `json:"error,omitempty"`
}

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
	// variables Profile.Env names reach the agent.
	Environ []string
	// Dir is the agent's working directory ("": the runner's).
	Dir string
	// MaxParallel bounds the agents running at once (default 1).
	MaxParallel int
	// Heartbeat is how often a living agent's spawn is heartbeaten (0:
	// never: the run is bounded by the spawn's expiry as issued); Extend
	// is each heartbeat's --extend (default 3 × Heartbeat).
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
}

// Variables the runner sets for the agent; the caller's are never passed
// under these names.
var ownVars = []string{"DONT_REQUEST_ID", "DONT_ENDPOINT", "DONT_TOKEN", "DONT_HARNESS", "DONT_ALLOWED_TOOLS", "DONT_ENTITY_ID"}

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
// has exited and been reaped.
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
	rendered, err := r.Profile.Render(req, r.Endpoint)
	if err != nil {
		run.Outcome, run.Error = AgentFailed, err.Error()
		return run
	}
	cmd := exec.Command(rendered.Argv[0], rendered.Argv[1:]...)
	cmd.Env = r.environ(req)
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(rendered.Stdin)
	out := r.output()
	cmd.Stdout, cmd.Stderr = out, out
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		run.Outcome, run.Error = AgentFailed, "cannot start the agent: "+err.Error()
		return r.finish(ctx, run, nil)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // every started process is reaped here

	var beat <-chan time.Time
	if r.Heartbeat > 0 {
		t := time.NewTicker(r.Heartbeat)
		defer t.Stop()
		beat = t.C
	}
	deadline := time.NewTimer(time.Until(run.ExpiresAt))
	defer deadline.Stop()
	var waitErr error
	for done := false; !done; {
		select {
		case waitErr = <-exited:
			killGroup(cmd) // what it left running in its group goes with it
			done = true
		case <-ctx.Done():
			run.Killed = "interrupt"
			waitErr = r.kill(cmd, exited)
			done = true
		case <-deadline.C:
			run.Killed = "deadline"
			waitErr = r.kill(cmd, exited)
			done = true
		case <-beat:
			hb, err := r.heartbeat(ctx, req.RequestID)
			if err != nil {
				continue // the deadline still bounds the run
			}
			run.Heartbeats++
			if hb.State != spawn.Pending {
				if hb.Outcome != spawn.CallbackApplied {
					run.Killed = "ended-elsewhere"
					waitErr = r.kill(cmd, exited)
					done = true
				}
				beat = nil // resolved by the agent: it is finishing
				continue
			}
			if hb.ExpiresAt.After(run.ExpiresAt) {
				run.ExpiresAt = hb.ExpiresAt
				deadline.Reset(time.Until(run.ExpiresAt))
			}
		}
	}
	code := exitCode(waitErr)
	run.ExitCode = &code
	return r.finish(ctx, run, waitErr)
}

// finish reads how the spawn ended (the read sweeps first, so a spawn
// past its expiry is timed out by it) and names the run's outcome.
func (r *Runner) finish(ctx context.Context, run Run, waitErr error) Run {
	interrupted := run.Killed == "interrupt"
	rctx := ctx
	if interrupted {
		rctx = context.WithoutCancel(ctx) // the outcome is still reported
	}
	sp, err := r.record(rctx, run.RequestID)
	// Killed at the deadline by this clock, the store's may be a moment
	// behind: read again, briefly, until its sweep has timed the spawn out.
	for i := 0; i < 10 && err == nil && run.Killed == "deadline" && sp.State == spawn.Pending && !sp.ExpiresAt.After(run.ExpiresAt); i++ {
		time.Sleep(200 * time.Millisecond)
		sp, err = r.record(rctx, run.RequestID)
	}
	if err != nil {
		if run.Outcome == "" {
			run.Outcome = AgentFailed
		}
		if run.Error == "" {
			run.Error = "cannot read the spawn after the run: " + err.Error()
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
	case sp.Outcome == spawn.TimeoutRestored:
		run.Outcome = TimedOut
	case sp.State == spawn.Resolved:
		run.Outcome = EndedElsewhere
	case interrupted:
		run.Outcome = Interrupted
	case waitErr != nil:
		run.Outcome = AgentFailed
	default:
		run.Outcome = Unresolved
	}
	return run
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
		killGroup(cmd) // whatever it left behind in its group
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
	for _, k := range ownVars {
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
}

func (r *Runner) heartbeat(ctx context.Context, id string) (heartbeatResult, error) {
	var hb heartbeatResult
	extend := r.Extend
	if extend <= 0 {
		extend = 3 * r.Heartbeat
	}
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
