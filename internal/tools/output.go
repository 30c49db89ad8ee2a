package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// Output is what a tool call returns to its transport: the envelope's
// kind, data, warnings and hints. The service returns typed results; the
// run functions of this package build an Output from them, so that kinds,
// hints and the commands they suggest are written in one place for every
// transport.
type Output struct {
	Kind     string
	Data     any
	Warnings []envelope.Warning
	Hints    []string
	// trailingWarnings and trailingHints count the tool's own warnings and
	// hints that follow those of a sweep run after the call (sweepAfter,
	// sweepAgain); zero puts the sweep's last.
	trailingWarnings, trailingHints int
	// sweepAgain asks for one more sweep after a call that swept first: a
	// direct-mode spawn, whose in-process callback sweeps like a callback.
	sweepAgain bool
}

// sweepOrder is when the sweep-first policy runs a tool's sweep.
type sweepOrder int

const (
	noSweep sweepOrder = iota
	// sweepBefore: the sweep runs first; its warnings and hints lead.
	sweepBefore
	// sweepAfter: the call resolves its own request (or answers its own
	// question) before the sweep runs, so that a late callback or answer
	// whose request has no committed resolver still applies; the sweep's
	// warnings and hints follow the call's.
	sweepAfter
)

// always is the sweep policy of a tool that sweeps first whatever its
// arguments.
func always(Args) sweepOrder { return sweepBefore }

// afterCallback is the policy of the ledger verbs: a callback (a request
// id given) sweeps after itself, every other call first.
func afterCallback(a Args) sweepOrder {
	if a.Str("request_id") != "" {
		return sweepAfter
	}
	return sweepBefore
}

// CallOptions are what a transport hands one call beside its arguments.
// They are explicit: the context carries only the caller's identity
// (service.WithPrincipal) and the call's cancellation (docs/design.md,
// "What the context carries").
type CallOptions struct {
	// Key is the call's Idempotency-Key (internal/httpapi), with Name,
	// Fingerprint, Encode and MayDefer set; nil: none. For a tool whose
	// write is one commit of the service (CommitsKey), or an exclusive
	// one, the service commits the response with the call's writes:
	// execute sets Key.Respond to present it as this package does.
	Key *idempotency.Pending
	// Asked is told the question escalate asks once it exists, before the
	// call waits for its answer (the CLI's countdown, MCP's progress);
	// nil: no one.
	Asked func(approvals.Approval)
}

// execute runs one call: the gate (admit; gate nil: none, for Call), the
// arguments' validation, and the tool under its cross-cutting policy: its
// argument check, its need for the approvals port, and the sweep every
// invocation of a sweeping tool runs (expired spawns resolved by timeout,
// due questions ended). The sweep never fails the call; its failure is a
// warning. Every transport reaches the service through it, one frame
// below its own entry: from a transport to spawn.Apply is this, the
// tool's run, the service method and its executor (docs/design.md,
// "Where a spawn is resolved").
func execute(ctx context.Context, s *service.Service, name string, raw map[string]any, gate *confirm.Arrival, o CallOptions) (Output, error) {
	t, ok := Lookup(name)
	if !ok {
		return Output{}, unknownTool(name)
	}
	if o.Key != nil && o.Key.Encode != nil {
		// A call held for confirmation commits its answer with the held call.
		o.Key.Respond = respond(presentBy(held), o.Key.Encode, nil, nil)
	}
	raw, held, ran, err := admit(ctx, s, t, raw, gate, o.Key)
	if ran {
		return held, err
	}
	a, err := t.Validate(raw)
	if err != nil {
		return Output{}, err
	}
	if t.check != nil {
		if err := t.check(a); err != nil {
			return Output{}, err
		}
	}
	if t.approvals {
		if err := s.CheckApprovals(); err != nil {
			return Output{}, err
		}
	}
	order := noSweep
	if t.sweep != nil {
		order = t.sweep(a)
	}
	var lead []envelope.Warning
	var hints []string
	if order == sweepBefore {
		lead, hints = sweep(s.SweepFirst(ctx))
	}
	if o.Key != nil && o.Key.Encode != nil {
		o.Key.Respond = t.responder(o.Key.Encode, lead, hints)
	}
	var out Output
	if t.runWith != nil {
		out, err = t.runWith(ctx, s, a, o)
	} else {
		out, err = t.run(ctx, s, a)
	}
	switch order {
	case sweepBefore:
		out.Warnings = append(lead, out.Warnings...)
		out.Hints = append(hints, out.Hints...)
		if err == nil && out.sweepAgain {
			out.mergeAfter(sweep(s.SweepFirst(ctx)))
		}
	case sweepAfter:
		out.mergeAfter(sweep(s.SweepAfter(ctx)))
	}
	out.Warnings = nextSteps(out.Warnings)
	return out, err
}

// responder is how a keyed call's response is made from the result the
// service is about to commit (idempotency.Pending.Respond): presented as
// this package presents it (presentResult), led by the warnings and hints
// of the sweep that ran first, and encoded by the transport (encode):
// that is the response committed with the call, and the one sent. A sweep
// run after the call is not in it (its findings concern other spawns, and
// are not known at the commit).
func (t *Tool) responder(encode func(out any) (int, []byte, bool), lead []envelope.Warning, hints []string) func(result any, warns []envelope.Warning) (int, []byte, bool) {
	present := presentResult
	if t.answer != nil {
		present = t.answer
	}
	return respond(present, encode, lead, hints)
}

// respond is a keyed call's response made from the result the service is
// about to commit: present presents it, led by lead and hints, and encode
// encodes it.
func respond(present func(any, []envelope.Warning) (Output, bool), encode func(out any) (int, []byte, bool), lead []envelope.Warning, hints []string) func(result any, warns []envelope.Warning) (int, []byte, bool) {
	return func(result any, warns []envelope.Warning) (int, []byte, bool) {
		out, ok := present(result, warns)
		if !ok {
			return 0, nil, false
		}
		out.Warnings = nextSteps(append(append([]envelope.Warning{}, lead...), out.Warnings...))
		out.Hints = append(append([]string{}, hints...), out.Hints...)
		return encode(out)
	}
}

// presentResult is the Output of a result the service commits with its
// response: a callback's entity (entity), an answer (answered), a
// harness-mode spawn request (spawned).
func presentResult(result any, warns []envelope.Warning) (Output, bool) {
	warns = append([]envelope.Warning{}, warns...)
	switch r := result.(type) {
	case service.EntityView:
		out, _ := entity(r, warns, nil)
		return out, true
	case service.Answered:
		out, _ := answered(r, warns, nil)
		return out, true
	case service.Spawned:
		if r.Verdict != nil || r.Answered != nil {
			return Output{}, false
		}
		out, _ := spawned(r, warns, nil)
		return out, true
	}
	return Output{}, false
}

// presentConcluded is conclude's presentResult: the claim with its hint.
func presentConcluded(result any, warns []envelope.Warning) (Output, bool) {
	v, ok := result.(service.EntityView)
	if !ok {
		return Output{}, false
	}
	out, _ := concluded(v, nil)
	out.Warnings = append([]envelope.Warning{}, warns...)
	return out, true
}

func (o *Output) mergeAfter(w []envelope.Warning, h []string) {
	o.Warnings = insert(o.Warnings, len(o.Warnings)-o.trailingWarnings, w)
	o.Hints = insert(o.Hints, len(o.Hints)-o.trailingHints, h)
}

func insert[T any](s []T, at int, more []T) []T {
	if len(more) == 0 {
		return s
	}
	out := make([]T, 0, len(s)+len(more))
	out = append(out, s[:at]...)
	out = append(out, more...)
	return append(out, s[at:]...)
}

// sweep is what the sweep a tool call ran did, as warnings and hints.
func sweep(rep service.SweepReport, err error) ([]envelope.Warning, []string) {
	var warns []envelope.Warning
	var hints []string
	if err != nil {
		return append(warns, envelope.Warning{Code: envelope.WarnSweepFailed, Message: errs.As(err).Message}), nil
	}
	for _, t := range rep.TimedOut {
		h := t.RequestID + " timed out (" + string(t.Outcome) + ")"
		if t.EntityID != "" {
			h += "; " + t.EntityID + " is " + string(t.Status) + " — run dont assume " + t.EntityID + " for a new round"
		}
		hints = append(hints, h)
	}
	for _, t := range rep.Lost {
		warns = append(warns, envelope.Warning{Code: envelope.WarnSpawnDuplicate, RequestID: t.RequestID, Outcome: string(t.Outcome),
			Message: "the sweep found " + t.RequestID + " already resolved (" + string(t.Outcome) + "); the timeout changed nothing"})
	}
	return append(warns, rep.Warnings...), hints
}

// nextSteps adds to a warning the command its code calls for: the service
// says what happened, and only presentation names what to run.
func nextSteps(warns []envelope.Warning) []envelope.Warning {
	for i, w := range warns {
		if w.Code == envelope.WarnSpawnLostToTimeout {
			warns[i].Message = w.Message + " — run dont assume again for a new round"
		}
	}
	return warns
}

// The presentation of each typed result.

func entity(v service.EntityView, warns []envelope.Warning, err error) (Output, error) {
	return Output{Kind: string(v.Kind), Data: v, Warnings: warns}, err
}

func concluded(v service.EntityView, err error) (Output, error) {
	out := Output{Kind: string(v.Kind), Data: v}
	if err == nil {
		out.Hints = []string{"dont assume " + v.ID + "  # ask a clean-context subagent to verify it"}
	}
	return out, err
}

func issued(sp service.IssuedSpawn, err error) (Output, error) {
	if err != nil {
		return Output{}, err
	}
	state := sp.Spawn.ID + " is " + string(sp.Spawn.State)
	if sp.Spawn.Outcome != "" {
		state += " (" + string(sp.Spawn.Outcome) + ")"
	}
	if sp.Spawn.State == spawn.Pending {
		state += "; it expires at " + sp.Spawn.ExpiresAt.Format(time.RFC3339)
	}
	return Output{Kind: envelope.KindSpawnRequest, Data: sp.Request, Hints: []string{state}}, nil
}

func answered(a service.Answered, warns []envelope.Warning, err error) (Output, error) {
	if err != nil {
		return Output{Warnings: warns}, err
	}
	if a.Claim == nil {
		return Output{Kind: envelope.KindSpawn, Data: a, Warnings: warns}, nil
	}
	return Output{Kind: envelope.KindAnswer, Data: a, Warnings: warns,
		Hints: []string{"dont assume " + a.Claim.ID + "  # verify the top answer"}}, nil
}

func spawned(sp service.Spawned, warns []envelope.Warning, err error) (Output, error) {
	switch {
	case err != nil:
		return Output{Warnings: warns}, err
	case sp.Verdict != nil:
		out, _ := entity(*sp.Verdict, warns, nil)
		out.Hints = []string{"dont show " + sp.Verdict.ID + " --history  # the " + sp.Provider + " verdict is on the " + string(sp.Event) + " event"}
		out.sweepAgain, out.trailingHints = true, 1
		return out, nil
	case sp.Answered != nil:
		out, err := answered(*sp.Answered, warns, nil)
		out.sweepAgain = true
		return out, err
	}
	return Output{Kind: envelope.KindSpawnRequest, Data: sp.Request, Warnings: warns}, nil
}

func session(v service.SessionView, err error) (Output, error) {
	return Output{Kind: envelope.KindSession, Data: v}, err
}

func opened(v service.SessionView, err error) (Output, error) {
	out, err := session(v, err)
	if err == nil {
		out.Hints = []string{
			"dont approvals watch --session " + v.ID + "  # in another terminal: a person answers escalations here",
			"dont escalate --session " + v.ID + " --call <call-id> --to <tier> --reason \"…\" -- <command>  # ask for one wider tier for one call"}
	}
	return out, err
}

// escalated is an escalation's result: a question asked without waiting,
// or the grant of one that ended approved (every other ending is an error).
func escalated(v service.ApprovalView, warns []envelope.Warning, err error) (Output, error) {
	switch {
	case err != nil:
		return Output{Warnings: warns}, err
	case v.GrantedTier != "":
		return Output{Kind: envelope.KindEscalation, Data: v, Warnings: warns,
			Hints: []string{"run call " + v.CallID + " at " + string(v.GrantedTier) + "; the session stays at its default tier for every other call"}}, nil
	case v.State == approvals.Pending:
		return Output{Kind: envelope.KindApproval, Data: v, Warnings: warns,
			Hints: []string{"dont approvals wait " + v.ID + "  # blocks until the verdict: exit 0 with the granted tier, 1 otherwise"}}, nil
	}
	return Output{Kind: envelope.KindApproval, Data: v, Warnings: warns}, nil
}

// decided places the note after the warnings of the sweep the answer runs
// after itself: settling's warnings, the sweep's, then the note.
func decided(d service.Decided, warns []envelope.Warning, err error) (Output, error) {
	if err != nil {
		return Output{Warnings: warns}, err
	}
	out := Output{Kind: envelope.KindApproval, Data: d.View, Warnings: warns}
	if d.Note != nil {
		out.Warnings = append(out.Warnings, *d.Note)
		out.trailingWarnings = 1
	}
	return out, nil
}

func approval(v service.ApprovalView, err error) (Output, error) {
	return Output{Kind: envelope.KindApproval, Data: v}, err
}

func audited(rep approvals.AuditReport, err error) (Output, error) {
	if err != nil {
		return Output{}, err
	}
	return Output{Kind: envelope.KindApprovalsAudit, Data: rep,
		Hints: []string{"checked " + plural(rep.Requests, "request", "requests") + " (" + plural(rep.Questions, "question", "questions") + ") and " +
			plural(rep.Frames, "frame", "frames") + " in " + plural(rep.Sessions, "session", "sessions") + ": every question has exactly one ending frame"}}, nil
}

func token(v service.TokenView, err error) (Output, error) {
	return Output{Kind: envelope.KindToken, Data: v}, err
}

// CreatedToken is the output of tokens.create, for a caller that creates
// a token without a tool call (the operator event of the API function).
func CreatedToken(v service.TokenView, err error) (Output, error) {
	out, err := token(v, err)
	if err == nil {
		out.Hints = []string{"the token is shown once; store it now (export DONT_TOKEN=…)"}
	}
	return out, err
}

func held(v service.HeldView, err error) (Output, error) {
	if err != nil {
		return Output{}, err
	}
	return Output{Kind: envelope.KindConfirmation, Data: v, Hints: []string{
		"nothing ran yet: " + v.Tool + " needs confirmation; an approver runs it once with: dont confirmations confirm " + v.ID,
		"or drops it with: dont confirmations refuse " + v.ID + " (it expires at " + v.ExpiresAt.Format(time.RFC3339) + ")",
	}}, nil
}

func confirmation(v service.ConfirmationView, err error) (Output, error) {
	return Output{Kind: envelope.KindConfirmation, Data: v}, err
}

// data is the presentation of a result that needs no hint.
func data[T any](kind string) func(T, error) (Output, error) {
	return func(v T, err error) (Output, error) { return Output{Kind: kind, Data: v}, err }
}

func withWarnings[T any](kind string) func(T, []envelope.Warning, error) (Output, error) {
	return func(v T, w []envelope.Warning, err error) (Output, error) {
		return Output{Kind: kind, Data: v, Warnings: w}, err
	}
}

// presentAs is the presentResult of a tool that answers withWarnings(kind):
// its result of type T, with the service's warnings.
func presentAs[T any](kind string) func(any, []envelope.Warning) (Output, bool) {
	return func(result any, warns []envelope.Warning) (Output, bool) {
		v, ok := result.(T)
		if !ok {
			return Output{}, false
		}
		out, _ := withWarnings[T](kind)(v, append([]envelope.Warning{}, warns...), nil)
		return out, true
	}
}

// plural is n with its noun: "1 request", "2 requests".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// presentBy is the answer (Tool.answer) of a tool that presents its
// result with f: the response a keyed call commits with its record.
func presentBy[T any](f func(T, error) (Output, error)) func(any, []envelope.Warning) (Output, bool) {
	return func(result any, warns []envelope.Warning) (Output, bool) {
		v, ok := result.(T)
		if !ok {
			return Output{}, false
		}
		out, err := f(v, nil)
		if err != nil {
			return Output{}, false
		}
		out.Warnings = append(append([]envelope.Warning{}, warns...), out.Warnings...)
		return out, true
	}
}
