package service

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Reasoner is the provider port of direct mode: the LLM that does in-process
// what a harness's clean-context subagent would otherwise do. It is typed
// in the spawn rules' own types; internal/llm's providers satisfy it. Its
// errors say what failed with spawn.ErrProviderTimeout,
// spawn.ErrUnusableVerdict and spawn.ErrUnusableCandidates (errors.Is);
// any other error is a provider that gave no answer.
type Reasoner interface {
	// Name names the configured provider, for events and messages.
	Name() string
	// Judge answers a verification prompt with a dismiss-or-trust verdict.
	Judge(ctx context.Context, prompt string) (spawn.Verdict, error)
	// Candidates returns n candidate answers sampled at temperature.
	Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error)
}

// DefaultGuessTemperature is what a direct-mode guess samples at when the
// caller gives no --temperature: diverse candidates need sampling, and 1 is
// the providers' own default. The spawn records the value actually sent.
const DefaultGuessTemperature = 1.0

// cleanupTimeout bounds the write that closes a direct-mode spawn as failed
// after the caller's context was cancelled (Ctrl-C during the provider call).
const cleanupTimeout = 5 * time.Second

// Error codes of direct mode. All exit 3: the provider is an outside
// dependency, like the store; retrying, or switching to harness mode, is the
// caller's next step.
const (
	// ProviderError: the provider gave no answer (HTTP error, network
	// failure, rate limit after retries).
	ProviderError errs.Code = "provider-error"
	// ProviderTimeout: the provider did not answer within the per-request
	// timeout.
	ProviderTimeout errs.Code = "provider-timeout"
	// ProviderUnusable: the provider answered, but not with a usable verdict
	// or usable candidates.
	ProviderUnusable errs.Code = "provider-unusable"
)

// directInput fixes what direct mode sends before the spawn is issued, so
// that the stored spawn says exactly what the provider was asked.
func directInput(in SpawnInput) SpawnInput {
	if in.Kind == spawn.Guess && in.Temperature == nil {
		t := DefaultGuessTemperature
		in.Temperature = &t
	}
	return in
}

// direct does in-process, with the configured provider, what a harness's
// subagent would do with the spawn just issued, and resolves the spawn
// through the very callback path a subagent uses: Resolve's callback for
// assume/overlook, Answer's for guess. When the provider
// fails, times out or answers unusably, the spawn is closed as failed
// (spawn_failed), the entity keeps its pre-spawn status, and the error says
// so.
func (s *core) direct(ctx context.Context, sp spawn.Spawn, req spawn.Request) (Spawned, []envelope.Warning, error) {
	res := Spawned{Spawn: sp, Provider: s.Provider.Name()}
	if sp.Kind == spawn.Guess {
		a, warns, err := s.directGuess(ctx, sp)
		if err == nil {
			res.Answered = &a
		}
		return res, warns, err
	}
	v, ev, warns, err := s.directJudge(ctx, sp, req.Context.Prompt)
	if err == nil {
		res.Verdict, res.Event = &v, ev
	}
	return res, warns, err
}

// directJudge sends prompt, the very prompt the spawn request carries, to
// the provider's Judge.
func (s *core) directJudge(ctx context.Context, sp spawn.Spawn, prompt string) (EntityView, ledger.EventKind, []envelope.Warning, error) {
	v, err := s.Provider.Judge(ctx, prompt)
	if err != nil {
		w, err := s.failDirect(ctx, sp, s.providerFailure(ctx, sp, err))
		return EntityView{}, "", w, err
	}
	in := TransitionInput{EntityID: sp.EntityID, RequestID: sp.ID, Reason: v.Reason, Direct: true}
	switch v.Action {
	case spawn.ActionDismiss:
		in.Action, in.Evidence = ledger.Verify, v.Evidence
	case spawn.ActionTrust:
		in.Action = ledger.Doubt
	default:
		w, err := s.failDirect(ctx, sp, s.unusable(sp, "verdict action "+strconv.Quote(v.Action)+" is neither dismiss nor trust"))
		return EntityView{}, "", w, err
	}
	if err := s.checkTransitionInput(in); err != nil {
		// The ledger's own rules refuse what the provider said.
		w, err := s.failDirect(ctx, sp, s.unusable(sp, errs.As(err).Message))
		return EntityView{}, "", w, err
	}
	res, warns, err := (&Spawns{s}).Resolve(ctx, in)
	if err != nil {
		w, err := s.failDirect(ctx, sp, err)
		return EntityView{}, "", w, err
	}
	return res, in.Action.EventKind(), warns, nil
}

func (s *core) directGuess(ctx context.Context, sp spawn.Spawn) (Answered, []envelope.Warning, error) {
	temp := DefaultGuessTemperature
	if sp.Temperature != nil {
		temp = *sp.Temperature
	}
	// A harness subagent is asked for all n answers at once; a provider is
	// asked the question itself, n times (or once with n choices), so that
	// each candidate is sampled independently.
	cands, err := s.Provider.Candidates(ctx, sp.Question, sp.N, temp)
	if err != nil {
		w, err := s.failDirect(ctx, sp, s.providerFailure(ctx, sp, err))
		return Answered{}, w, err
	}
	res, warns, err := (&Spawns{s}).Answer(ctx, GuessAnswer{RequestID: sp.ID, Candidates: cands, Direct: true})
	if errs.Is(err, errs.InvalidArgument) {
		err = s.unusable(sp, errs.As(err).Message)
	}
	if err != nil {
		w, err := s.failDirect(ctx, sp, err)
		return Answered{}, w, err
	}
	return res, warns, nil
}

// providerFailure turns a Reasoner error into the error the caller sees.
func (s *core) providerFailure(ctx context.Context, sp spawn.Spawn, err error) *errs.Error {
	name := s.Provider.Name()
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return directErr(errs.E(errs.Interrupted, "interrupted while waiting for "+name+"; "+closedNote(sp)), sp).Wrap(err)
	case errors.Is(err, spawn.ErrProviderTimeout):
		return directErr(errs.E(ProviderTimeout, name+" did not answer in time ("+err.Error()+"); "+closedNote(sp)), sp).Wrap(err)
	case errors.Is(err, spawn.ErrUnusableVerdict), errors.Is(err, spawn.ErrUnusableCandidates):
		return s.unusable(sp, err.Error()).Wrap(err)
	}
	return directErr(errs.E(ProviderError, name+" failed ("+err.Error()+"); "+closedNote(sp)), sp).Wrap(err)
}

func (s *core) unusable(sp spawn.Spawn, problem string) *errs.Error {
	what := "verdict"
	if sp.Kind == spawn.Guess {
		what = "candidates"
	}
	return directErr(errs.E(ProviderUnusable, s.Provider.Name()+" gave no usable "+what+" ("+problem+"); "+closedNote(sp)), sp).Unmet(problem)
}

func closedNote(sp spawn.Spawn) string {
	if sp.EntityID == "" {
		return sp.ID + " was closed as failed and nothing was concluded"
	}
	return sp.ID + " was closed as failed and " + sp.EntityID + " keeps its status"
}

// directErr names what a direct-mode spawn's failure concerns: its entity
// and, as arguments, the spawn's kind and (for a guess) its question and
// n, from which presentation builds the command that runs it again.
func directErr(e *errs.Error, sp spawn.Spawn) *errs.Error {
	e = e.On(sp.EntityID).With("kind", string(sp.Kind))
	if sp.Kind == spawn.Guess {
		e = e.With("question", sp.Question).With("n", strconv.Itoa(sp.N))
	}
	return e
}

// failDirect closes a direct-mode spawn as failed and returns cause. The
// close runs even when ctx was cancelled (Ctrl-C), on a short deadline of
// its own, so that an interrupted call leaves the entity as it found it
// rather than under review until the spawn times out.
func (s *core) failDirect(ctx context.Context, sp spawn.Spawn, cause error) ([]envelope.Warning, error) {
	var warns []envelope.Warning
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
	}
	final, closed, err := s.closeFailed(ctx, sp.ID, errs.As(cause))
	switch {
	case err != nil:
		warns = append(warns, envelope.Warning{Code: envelope.WarnSpawnNotClosed, RequestID: sp.ID,
			Message: "could not close " + sp.ID + " as failed (" + errs.As(err).Message + "); it stays pending until it times out at " + sp.ExpiresAt.Format(timeFormat)})
	case !closed && final.State != spawn.Pending:
		// Another resolver committed first; what it did stands.
		warns = append(warns, loserWarning(final))
	}
	return warns, cause
}

// closeFailed resolves a pending spawn with outcome failed and records
// spawn_failed. Its write follows the timeout's rules: the spawn must still
// be pending, and the entity goes back to its pre-spawn status only if
// nothing has moved it since the spawn did. closed is false when another
// resolver committed first.
func (s *core) closeFailed(ctx context.Context, requestID string, cause *errs.Error) (sp spawn.Spawn, closed bool, err error) {
	step := spawn.Step{Kind: spawn.StepFail, RequestID: requestID, Provider: s.Provider.Name(), FailCode: cause.Code, FailError: cause.Message}
	tr, err := s.runStep(ctx, step, nil, nil)
	if err != nil {
		return tr.Spawn, false, err
	}
	return tr.Spawn, tr.Effect == spawn.Write, nil
}
