package linearize

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// Target says which request id a callback or expire names.
type Target int

// Targets.
const (
	Latest  Target = iota // the entity's most recent request
	Older                 // an earlier one: a duplicate or a late callback
	Unknown               // an id the store never issued
)

// Step is one generated client action.
type Step struct {
	Kind   Kind
	Entity int // index into the scenario's entities
	Action ledger.Action
	Target Target
	Tick   time.Duration // > 0: advance the clock instead of calling
	Extend time.Duration // heartbeat: --extend
}

// Scenario is what one property-based example runs: fresh entities and a
// list of steps per concurrent client.
type Scenario struct {
	Entities int
	// Prelude runs first, sequentially, as client 0 (recorded too): it
	// sets up races such as "spawn issued, then its deadline passed".
	Prelude []Step
	Clients [][]Step
}

func (s Scenario) usesApprovals() bool {
	for _, c := range append([][]Step{s.Prelude}, s.Clients...) {
		for _, st := range c {
			if st.Tick == 0 && st.Kind >= Ask && st.Kind <= ApprovalExpire {
				return true
			}
		}
	}
	return false
}

// Ops counts the invocations a scenario makes (ticks excluded).
func (s Scenario) Ops() int {
	n := 0
	for _, c := range append([][]Step{s.Prelude}, s.Clients...) {
		for _, st := range c {
			if st.Tick == 0 {
				n++
			}
		}
	}
	return n
}

// Result is one checked history.
type Result struct {
	Ops int // invocations recorded
	// Indeterminate counts the invocations whose outcome is unknown (a
	// kill or a dropped response; indeterminate.go), checked as such or,
	// for an ask or a guess whose id is unknown, only counted.
	Indeterminate int
	Checked       int // porcupine operations after splitting sweeps per entity
	Outcome       porcupine.CheckResult
	Stats         map[string]int // what the operations saw: applied, duplicate, lost-to-timeout, late, timed-out, restored, …
	Visualise     string         // path of the HTML visualisation when the check failed
	Detail        string         // the failing partitions' operations, in call order
	// Outline is every recorded operation in call order without the ids
	// the store drew: what a replay must repeat.
	Outline []string
}

// recorder collects operations with a logical clock for their real-time order.
type recorder struct {
	mu        sync.Mutex
	seq       atomic.Int64
	ops       []porcupine.Operation
	unchecked atomic.Int64 // indeterminate asks and guesses: no id, no partition
}

func (r *recorder) add(op porcupine.Operation) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// requests remembers the request ids issued per entity, in issue order.
type requests struct {
	mu      sync.Mutex
	ids     map[string][]string // entity -> spawn request ids; approvalsKey -> approval ids
	session string
	calls   atomic.Int64
}

// approvalsKey and guessesKey file approval and guess ids among the request ids.
const (
	approvalsKey = "apr"
	guessesKey   = "guess"
)

func (q *requests) add(entity, id string) {
	q.mu.Lock()
	q.ids[entity] = append(q.ids[entity], id)
	q.mu.Unlock()
}

func (q *requests) has(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids[key]) > 0
}

func (q *requests) pick(entity string, t Target, salt int) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	list := q.ids[entity]
	switch {
	case t == Unknown || len(list) == 0:
		return ids.New(ids.Spawn, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	case t == Older && len(list) > 1:
		return list[salt%(len(list)-1)]
	}
	return list[len(list)-1]
}

// Run executes the scenario against b and checks its history. Unexpected
// failures (transport errors, error codes the protocol never answers
// with) are returned as errors: they are bugs too, but not of ordering.
func Run(ctx context.Context, b Backend, sc Scenario, checkTimeout time.Duration) (Result, error) {
	return RunScheduled(ctx, b, sc, nil, checkTimeout)
}

// RunScheduled is Run with the clients' steps run one at a time, in an
// order drawn from sched, instead of concurrently (sched nil: Run): the
// replay of a failing history. With a controlled clock, the same seed
// gives the same calls in the same order, so the same responses.
func RunScheduled(ctx context.Context, b Backend, sc Scenario, sched *rand.Rand, checkTimeout time.Duration) (Result, error) {
	var res Result
	if l, ok := b.(Logging); ok {
		l.TakeLog() // an earlier scenario's
	}
	entities := make([]string, sc.Entities)
	for i := range entities {
		env, err := setupCall(ctx, b, "conclude", map[string]any{"statement": fmt.Sprintf("linearizability subject %d", i)})
		if err != nil || !env.OK {
			return res, fmt.Errorf("conclude: %v %s", err, env.Data)
		}
		var e ledger.Entity
		if err := json.Unmarshal(env.Data, &e); err != nil {
			return res, err
		}
		entities[i] = e.ID
	}
	rec := &recorder{}
	reqs := &requests{ids: map[string][]string{}}
	clock := b.Clock()
	if sc.usesApprovals() {
		if !b.Approvals() {
			return res, fmt.Errorf("%s keeps no approvals", b.Name())
		}
		env, err := setupCall(ctx, b, "sessions.open", map[string]any{"tier": "read-only", "name": "linearize"})
		if err != nil || !env.OK {
			return res, fmt.Errorf("sessions.open: %v %s", err, env.Data)
		}
		var ses struct {
			ID string `json:"session_id"`
		}
		if err := json.Unmarshal(env.Data, &ses); err != nil {
			return res, err
		}
		reqs.session = ses.ID
		// A live subscriber, so that questions are asked (the lease outlasts the run).
		if env, err := setupCall(ctx, b, "approvals.frames", map[string]any{"session": ses.ID, "subscriber": "linearize"}); err != nil || !env.OK {
			return res, fmt.Errorf("approvals.frames: %v %s", err, env.Data)
		}
	}
	for i, st := range sc.Prelude {
		if st.Tick > 0 {
			clock.Advance(st.Tick)
			continue
		}
		if err := invoke(ctx, b, 0, i, st, entities, reqs, rec); err != nil {
			return res, fmt.Errorf("prelude step %d (%s): %w", i, st.Kind, err)
		}
	}
	if sched != nil {
		if err := runInOrder(ctx, b, sc, sched, entities, reqs, rec); err != nil {
			return res, err
		}
		return checkAll(ctx, b, rec, reqs, entities, checkTimeout)
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(sc.Clients))
	for c, steps := range sc.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, st := range steps {
				if st.Tick > 0 {
					clock.Advance(st.Tick)
					continue
				}
				if err := invoke(ctx, b, c, i, st, entities, reqs, rec); err != nil {
					errc <- fmt.Errorf("client %d step %d (%s): %w", c, i, st.Kind, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return res, err
	}
	return checkAll(ctx, b, rec, reqs, entities, checkTimeout)
}

// checkAll checks the history, then the session's frame stream.
func checkAll(ctx context.Context, b Backend, rec *recorder, reqs *requests, entities []string, checkTimeout time.Duration) (Result, error) {
	res, err := check(b, rec, reqs, entities, checkTimeout)
	if err != nil || reqs.session == "" || res.Outcome != porcupine.Ok {
		return res, err
	}
	problem, err := checkFrameStream(ctx, b, reqs.session, reqs.ids[approvalsKey])
	if err != nil {
		return res, fmt.Errorf("frame stream: %w", err)
	}
	if problem != "" {
		res.Outcome = porcupine.Illegal
		res.Detail = "\nthe approvals frame stream: " + problem
	}
	return res, nil
}

// runInOrder runs the clients' steps one at a time: each turn, a client
// drawn from sched among those with steps left takes its next step.
func runInOrder(ctx context.Context, b Backend, sc Scenario, sched *rand.Rand, entities []string, reqs *requests, rec *recorder) error {
	next := make([]int, len(sc.Clients))
	for {
		var ready []int
		for c, steps := range sc.Clients {
			if next[c] < len(steps) {
				ready = append(ready, c)
			}
		}
		if len(ready) == 0 {
			return nil
		}
		c := ready[sched.IntN(len(ready))]
		i := next[c]
		next[c]++
		st := sc.Clients[c][i]
		if st.Tick > 0 {
			b.Clock().Advance(st.Tick)
			continue
		}
		if err := invoke(ctx, b, c, i, st, entities, reqs, rec); err != nil {
			return fmt.Errorf("client %d step %d (%s): %w", c, i, st.Kind, err)
		}
	}
}

// check checks the recorded history.
func check(b Backend, rec *recorder, reqs *requests, entities []string, checkTimeout time.Duration) (Result, error) {
	var res Result
	clock := b.Clock()
	res.Ops = len(rec.ops) + int(rec.unchecked.Load())
	res.Indeterminate = int(rec.unchecked.Load())
	for _, op := range rec.ops {
		if op.Output.(Output).Unknown {
			res.Indeterminate++
		}
	}
	res.Stats = stats(rec.ops)
	res.Outline = outline(rec.ops)
	history := splitSweeps(rec.ops, append(append(entities, reqs.ids[approvalsKey]...), reqs.ids[guessesKey]...))
	res.Checked = len(history)
	model := Model{Timeout: int64(b.Timeout()), Tolerance: clock.Tolerance(), IndexLag: int64(indexLag(b))}.porcupine()
	outcome, info := porcupine.CheckOperationsVerbose(model, history, checkTimeout)
	res.Outcome = outcome
	if outcome == porcupine.Illegal {
		res.Detail = failingPartitions(model, history)
		if l, ok := b.(Logging); ok {
			if text := l.TakeLog(); text != "" {
				res.Detail += "\nwhat the services logged during the run:\n" + text
			}
		}
		res.Visualise = visualise(model, info)
	}
	return res, nil
}

// visualise writes porcupine's HTML visualisation of a failed check and
// returns its path.
func visualise(model porcupine.Model, info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "dont-linearize-*.html")
	if err != nil {
		return ""
	}
	defer f.Close()
	porcupine.Visualize(model, info, f)
	path, _ := filepath.Abs(f.Name())
	return path
}

// invoke runs one step and records it.
func invoke(ctx context.Context, b Backend, client, i int, st Step, entities []string, reqs *requests, rec *recorder) error {
	clock := b.Clock()
	in := Input{Kind: st.Kind, Entity: entities[st.Entity], Action: st.Action}
	args := map[string]any{"id": in.Entity}
	tool := ""
	if st.Kind > Ask && st.Kind < Guess {
		if !reqs.has(approvalsKey) {
			return nil // no question asked yet
		}
		id := reqs.pick(approvalsKey, st.Target, client+i)
		in.Entity, args["id"] = id, id
	}
	if st.Kind == GuessAnswer {
		if !reqs.has(guessesKey) {
			return nil // no guess issued yet
		}
		in.RequestID = reqs.pick(guessesKey, st.Target, client+i)
		in.Entity = in.RequestID
	}
	switch st.Kind {
	case Heartbeat:
		in.RequestID, in.Extend = reqs.pick(in.Entity, st.Target, client+i), int64(st.Extend)
		tool, args = "spawns.heartbeat", map[string]any{"request_id": in.RequestID, "extend": st.Extend.String()}
	case SpawnCancel:
		in.RequestID = reqs.pick(in.Entity, st.Target, client+i)
		tool, args = "spawns.cancel", map[string]any{"request_id": in.RequestID, "reason": "superseded by a newer round"}
	case Guess:
		tool, args = "guess", map[string]any{"question": "what is the boiling point of water at sea level?", "n": 3, "mode": string(spawn.ModeHarness)}
	case GuessAnswer:
		tool, args = "answer", map[string]any{"request_id": in.RequestID, "candidate": []any{"100 C", "100 c", "99.97 C"}}
	case Ask:
		tool = "escalate"
		args = map[string]any{"session": reqs.session, "call": fmt.Sprintf("%s-call-%d", reqs.session, reqs.calls.Add(1)), "to": "workspace-write",
			"reason": "the build installs into /usr/local", "preview": "make install", "no_wait": true}
	case Answer:
		tool = map[ledger.Action]string{verdictAction(approvals.Approved): "approvals.approve", verdictAction(approvals.Refused): "approvals.refuse", verdictAction(approvals.Cancelled): "approvals.cancel"}[st.Action]
		if st.Action != verdictAction(approvals.Approved) {
			args["reason"] = "not for this call"
		} else {
			// An approve names what the person saw: read it first (a read,
			// not part of the recorded history).
			env, err := b.Call(ctx, client, "approvals.show", map[string]any{"id": args["id"]})
			if err != nil {
				if lossy(b) {
					return nil // the read was lost: this client skips its answer
				}
				return err
			}
			var v struct {
				ShownDigest string `json:"shown_digest"`
			}
			json.Unmarshal(env.Data, &v)
			args["shown_digest"] = v.ShownDigest
		}
	case ApprovalShow:
		tool = "approvals.show"
	case ApprovalExpire:
	case Assume:
		tool, args["mode"] = "assume", string(spawn.ModeHarness)
	case Callback, Move:
		tool = string(st.Action)
		switch st.Action {
		case ledger.Verify:
			args["evidence"] = []string{"https://example.org/boiling-point"}
		case ledger.Doubt, ledger.Reopen:
			args["reason"] = "ITS-90 puts the boiling point at 99.97 C"
		}
		if st.Kind == Callback {
			in.RequestID = reqs.pick(in.Entity, st.Target, client+i)
			args["request_id"] = in.RequestID
		}
	case Sweep:
		tool, args = "sweep", map[string]any{"limit": 100000}
		in.Entity = ""
	case Expire:
		in.RequestID = reqs.pick(in.Entity, st.Target, client+i)
	case Show:
		tool = "show"
	}

	call := rec.seq.Add(1)
	in.CallClock, in.CallWall = clock.Now(), wallNow()
	var out Output
	var err error
	if st.Kind == ApprovalExpire {
		var v approvals.Verdict
		var left time.Duration
		var ok bool
		v, left, ok, err = b.ExpireApproval(ctx, client, in.Entity)
		if !ok {
			return nil
		}
		out = Output{Verdict: v, NotDue: left > 0}
		if err != nil {
			out = Output{Err: string(errs.As(err).Code)}
		}
		err = nil
	} else if st.Kind == Expire {
		var r service.TimeoutResult
		var left time.Duration
		var ok bool
		r, left, ok, err = b.Expire(ctx, client, in.RequestID)
		if !ok {
			return nil // this backend has no queue-driven timeout
		}
		out = expireOutput(r, left, err)
		err = nil
	} else {
		var env envelope.Envelope
		env, err = b.Call(ctx, client, tool, args)
		if err == nil {
			out, err = parse(st.Kind, env)
		} else if lossy(b) {
			out, err = Output{Unknown: true}, nil
		}
	}
	in.RetClock, in.RetWall = clock.Now(), wallNow()
	ret := rec.seq.Add(1)
	if err != nil {
		return err
	}
	if out.Unknown {
		if st.Kind == Ask || st.Kind == Guess {
			rec.unchecked.Add(1)
			return nil
		}
		// Jepsen's :info: it may take effect at any point after its call.
		rec.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: math.MaxInt64})
		return nil
	}
	switch out.Err {
	case "", "spawn-pending", "invalid-transition", "spawn-not-found":
	default:
		return fmt.Errorf("unexpected error %s", out.Err)
	}
	if st.Kind == Assume && out.Err == "" {
		reqs.add(in.Entity, out.RequestID)
	}
	if st.Kind == Guess && out.Err == "" {
		in.Entity = out.RequestID
		reqs.add(guessesKey, out.RequestID)
	}
	if st.Kind == Ask {
		if out.Approval == "" {
			return fmt.Errorf("escalate answered without an approval id")
		}
		in.Entity = out.Approval
		reqs.add(approvalsKey, out.Approval)
	}
	rec.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	return nil
}

// Lossy is a Backend whose calls may fail without an answer (a server
// killed under them, a response dropped after the commit): a transport
// error is then an operation with an unknown outcome, not a failure.
type Lossy interface {
	LosesResponses() bool
}

func lossy(b Backend) bool {
	l, ok := b.(Lossy)
	return ok && l.LosesResponses()
}

// setupCall is a scenario's setup call; on a lossy backend it is retried
// until it is answered (a lost conclude leaves an extra, unused entity).
func setupCall(ctx context.Context, b Backend, tool string, args map[string]any) (envelope.Envelope, error) {
	for attempt := 0; ; attempt++ {
		env, err := b.Call(ctx, 0, tool, args)
		if err == nil || !lossy(b) || attempt >= 50 {
			return env, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func expireOutput(r service.TimeoutResult, left time.Duration, err error) Output {
	if err != nil {
		return Output{Err: string(errs.As(err).Code)}
	}
	return Output{Outcome: r.Outcome, Status: r.Status, Won: r.Committed, NotDue: left > 0 || (r.Outcome == "" && !r.Committed)}
}

// parse reads a response envelope into an Output.
func parse(k Kind, env envelope.Envelope) (Output, error) {
	var out Output
	for _, w := range env.Warnings {
		out.Warnings = append(out.Warnings, w.Code)
		out.WarningIDs = append(out.WarningIDs, w.RequestID)
		out.WarningOutcomes = append(out.WarningOutcomes, w.Outcome)
	}
	if !env.OK {
		var e errs.Error
		if err := json.Unmarshal(env.Data, &e); err != nil {
			return out, err
		}
		out.Err = string(e.Code)
		return out, nil
	}
	switch k {
	case Assume, Guess:
		var r spawn.Request
		if err := json.Unmarshal(env.Data, &r); err != nil {
			return out, err
		}
		out.RequestID, out.ExpiresAt = r.RequestID, r.ExpiresAt.UnixNano()
	case Heartbeat:
		var v service.HeartbeatResult
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return out, err
		}
		out.Moved, out.Outcome, out.ExpiresAt = v.Moved, v.Outcome, v.ExpiresAt.UnixNano()
	case SpawnCancel:
		var v service.CancelResult
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return out, err
		}
		out.Applied, out.Outcome, out.Restored, out.Status = v.Applied, v.Outcome, v.Restored, v.Status
	case GuessAnswer:
		var v struct {
			Resolution *service.Resolution `json:"resolution"`
		}
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return out, err
		}
		if v.Resolution != nil {
			out.Applied, out.Outcome = v.Resolution.Applied, v.Resolution.Outcome
		}
	case Ask, Answer, ApprovalShow:
		var v service.ApprovalView
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return out, err
		}
		out.Approval, out.State, out.Verdict, out.Asked = v.ID, v.State, v.Verdict, v.Asked
		if v.Asked {
			out.Deadline = v.Deadline.UnixNano()
		}
		if v.Applied != nil {
			out.Applied = *v.Applied
		}
	case Sweep:
		var rep service.SweepReport
		if err := json.Unmarshal(env.Data, &rep); err != nil {
			return out, err
		}
		for _, w := range env.Warnings {
			switch {
			case w.Code == envelope.WarnSweepFailed:
				out.QuestionsFailed = true
			case w.Code == envelope.CodeOf(service.ApprovalChannelError) && w.RequestID != "":
				out.Unswept = append(out.Unswept, w.RequestID)
			default:
				continue
			}
			out.Notes = append(out.Notes, w.Message)
		}
		if rep.Approvals != nil {
			for _, id := range rep.Approvals.TimedOut {
				out.Entries = append(out.Entries, SweepEntry{Approval: true, Entity: id, RequestID: id, Outcome: string(approvals.TimedOut)})
			}
		}
		partition := func(t service.TimeoutResult) string {
			if t.EntityID == "" {
				return t.RequestID // a guess spawn is its own partition
			}
			return t.EntityID
		}
		for _, t := range rep.TimedOut {
			out.Entries = append(out.Entries, SweepEntry{Entity: partition(t), RequestID: t.RequestID, Outcome: string(t.Outcome), Restored: t.Restored, Status: t.Status})
		}
		for _, t := range rep.Lost {
			out.Entries = append(out.Entries, SweepEntry{Entity: partition(t), RequestID: t.RequestID, Outcome: string(t.Outcome), Lost: true})
		}
	default:
		var v service.EntityView
		if err := json.Unmarshal(env.Data, &v); err != nil {
			return out, err
		}
		out.Status, out.Pending = v.Status, v.PendingSpawn
		if v.Resolution != nil {
			out.Applied, out.Outcome = v.Resolution.Applied, v.Resolution.Outcome
		}
	}
	return out, nil
}

// splitSweeps turns each sweep into one operation per scenario entity,
// carrying only that entity's entries, over the sweep's own interval.
func splitSweeps(ops []porcupine.Operation, entities []string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		in := op.Input.(Input)
		if in.Kind != Sweep {
			out = append(out, op)
			continue
		}
		o := op.Output.(Output)
		for _, e := range entities {
			sub := Output{Err: o.Err, Warnings: o.Warnings, Unswept: o.Unswept, QuestionsFailed: o.QuestionsFailed}
			for _, en := range o.Entries {
				if en.Entity == e {
					sub.Entries = append(sub.Entries, en)
				}
			}
			in2 := in
			in2.Entity = e
			out = append(out, porcupine.Operation{ClientId: op.ClientId, Input: in2, Call: op.Call, Output: sub, Return: op.Return})
		}
	}
	return out
}

// outline describes ops in call order, without request ids.
func outline(ops []porcupine.Operation) []string {
	sorted := slices.Clone(ops)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	out := make([]string, 0, len(sorted))
	for _, op := range sorted {
		in, o := op.Input.(Input), op.Output.(Output)
		out = append(out, fmt.Sprintf("client %d: %s %s target-known=%v @%d..%d -> err=%s status=%s pending=%v applied=%v outcome=%s won=%v notdue=%v state=%s verdict=%s warnings=%v entries=%d unknown=%v",
			op.ClientId, in.Kind, in.Action, in.RequestID != "", in.CallClock, in.RetClock, o.Err, o.Status, o.Pending != "", o.Applied, o.Outcome, o.Won, o.NotDue, o.State, o.Verdict, o.Warnings, len(o.Entries), o.Unknown))
	}
	return out
}

// stats counts what the recorded operations saw, to show that a run
// exercised the races it claims to.
func stats(ops []porcupine.Operation) map[string]int {
	m := map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		m["op:"+in.Kind.String()]++
		if out.Unknown {
			m["indeterminate:"+in.Kind.String()]++
			continue
		}
		if out.Err != "" {
			m["error:"+out.Err]++
		}
		for _, w := range out.Warnings {
			m["warning:"+string(w)]++
		}
		for _, n := range out.Notes {
			m["sweep-could-not: "+n]++
		}
		switch {
		case in.Kind == Callback && out.Applied:
			m["callback-applied"]++
		case in.Kind == Expire && out.Won:
			m["expire-won"]++
		case in.Kind == Expire && out.NotDue:
			m["expire-not-due"]++
		case in.Kind == Answer && out.Applied:
			m["answer-applied:"+string(out.Verdict)]++
		case in.Kind == Answer:
			m["answer-lost-to:"+string(out.Verdict)]++
		case in.Kind == GuessAnswer && out.Applied:
			m["guess-answer-applied"]++
		case in.Kind == SpawnCancel && out.Applied:
			m["cancel-applied"]++
		}
		for _, e := range out.Entries {
			switch {
			case e.Approval:
				m["sweep-question-timed-out"]++
			case e.Lost:
				m["sweep-lost"]++
			case e.Restored:
				m["sweep-timeout-restored"]++
			default:
				m["sweep-timeout-kept-newer-status"]++
			}
		}
	}
	return m
}

// failingPartitions lists, for each partition that is not linearizable on
// its own, its operations in call order.
func failingPartitions(model porcupine.Model, history []porcupine.Operation) string {
	var b strings.Builder
	for _, part := range partition(history) {
		if porcupine.CheckOperations(model, part) {
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		fmt.Fprintf(&b, "\npartition %s:\n", part[0].Input.(Input).Entity)
		for _, op := range part {
			fmt.Fprintf(&b, "  [%4d,%4d] client %d: %s\n", op.Call, op.Return, op.ClientId, describe(op.Input, op.Output))
		}
	}
	return b.String()
}
