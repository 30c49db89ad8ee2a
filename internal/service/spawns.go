package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

const timeFormat = time.RFC3339Nano

// SpawnInput asks for fresh reasoning: assume/overlook on an entity, or guess on a question.
type SpawnInput struct {
	Kind        spawn.Kind
	EntityID    string
	Question    string
	N           int
	Temperature *float64
	Mode        spawn.Mode // spawn.ModeHarness or spawn.ModeDirect
	// Key is the call's keyed response, committed with the issue in
	// harness mode (nil: none); a direct-mode spawn's is remembered after.
	Key *idempotency.Pending
	// ResumeSince, for a guess, is when an earlier run of this same keyed
	// request (cut by a crash) claimed its key: if that run issued its
	// spawn, the call resumes from it instead of issuing another
	// (resumedGuess; docs/proof.md, "Idempotency across crashes").
	ResumeSince time.Time
}

// ErrNoProvider is returned in direct mode when no provider is configured.
var ErrNoProvider = errs.E(errs.ConfigMissing, "direct mode needs an LLM provider, and none is configured").Unmet("llm.provider", "llm.model")

// Spawned is what Spawns.Request did: in harness mode, the spawn_request
// payload; in direct mode, what the provider's verdict (assume, overlook)
// or candidates (guess) did through the callback path.
type Spawned struct {
	Request json.RawMessage // harness mode: the spawn_request payload
	Spawn   spawn.Spawn     // the spawn as issued
	// Direct mode.
	Verdict  *EntityView      // assume, overlook: the entity after the callback
	Event    ledger.EventKind // assume, overlook: the event that carries the verdict
	Answered *Answered        // guess
	Provider string           // the provider's name
}

// Request issues a spawn request. In harness mode it returns the
// spawn_request payload. In direct mode it issues the same spawn, has the
// Provider do the reasoning and resolves the spawn through the callback
// path (see direct); without a Provider it refuses with config-missing — it
// never falls back to harness mode.
func (s *Spawns) Request(ctx context.Context, in SpawnInput) (Spawned, []envelope.Warning, error) {
	var res Spawned
	if err := checkSpawnInput(&in); err != nil {
		return res, nil, err
	}
	if in.Mode == spawn.ModeDirect {
		if s.Provider == nil {
			return res, nil, ErrNoProvider
		}
		in = directInput(in)
	}
	if in.Kind == spawn.Guess && !in.ResumeSince.IsZero() {
		sp, ok, err := s.resumedGuess(ctx, in)
		if err != nil {
			return res, nil, err
		}
		if ok {
			return s.resumeGuess(ctx, sp)
		}
	}
	now := s.now()
	step := spawn.Step{Kind: spawn.StepIssue, Actor: s.actorOf(ctx), Timeout: s.timeout(), Issue: spawn.Spawn{
		ID: s.newID(ids.Spawn, now), Kind: in.Kind, EntityID: in.EntityID, Mode: in.Mode,
		Question: in.Question, N: in.N, Temperature: in.Temperature, RequestedBy: s.actor(ctx), KeyDigest: keyDigest(in)}}
	if in.Mode == spawn.ModeDirect {
		// Its response is the verdict, made by later commits: it is
		// remembered after the call, and no keyed response is committed
		// on the way (key nil throughout).
		tr, err := s.runStep(ctx, step, nil, nil)
		if err != nil {
			return res, nil, err
		}
		s.scheduleTimeout(ctx, tr.Spawn)
		return s.direct(ctx, tr.Spawn, spawn.NewRequest(tr.Spawn, tr.Entity))
	}
	// The payload (its callback token) is made before the commit, so that
	// the response committed with the call is the one returned.
	result := func(tr spawn.Transition) (any, []envelope.Warning, error) {
		token, err := s.callbackToken(ctx, tr.Spawn.ID)
		if err != nil {
			return nil, nil, err
		}
		payload, err := s.payload(spawn.NewRequest(tr.Spawn, tr.Entity), token)
		res = Spawned{Request: payload, Spawn: tr.Spawn}
		return res, nil, err
	}
	if _, err := s.runStep(ctx, step, in.Key, result); err != nil {
		if again, ok := s.reissued(ctx, in, err); ok {
			return again, nil, nil
		}
		return Spawned{}, nil, err
	}
	s.scheduleTimeout(ctx, res.Spawn)
	return res, nil, nil
}

// keyDigest is what a keyed assume or overlook records on its spawn
// (spawn.Spawn.KeyDigest): a digest of its key's record name, which
// names the caller's token, the tool and the key; "" without a key.
func keyDigest(in SpawnInput) string {
	if in.Key == nil || in.Kind == spawn.Guess {
		return ""
	}
	sum := sha256.Sum256([]byte("dont-spawn-key\x00" + in.Key.Name))
	return hex.EncodeToString(sum[:16])
}

// reissued answers the retry of a keyed assume or overlook whose first
// run issued its spawn and lost its response to a crash (on DynamoDB the
// response is remembered after the commit): the issue fails with
// spawn-pending on that very spawn, which carries this call's key
// (KeyDigest) and requester, so the retry gets the same spawn request
// again, its callback token made again, instead of a refusal that would
// leave the spawn without anyone able to answer it until it times out.
// Any other pending spawn stays a refusal: only the same caller with the
// same key is answered (docs/proof.md, "Idempotency across crashes").
func (s *core) reissued(ctx context.Context, in SpawnInput, err error) (Spawned, bool) {
	digest := keyDigest(in)
	if digest == "" || !errs.Is(err, errs.SpawnPending) {
		return Spawned{}, false
	}
	e, gerr := s.Store.GetEntity(ctx, in.EntityID)
	if gerr != nil || e.PendingSpawn == "" {
		return Spawned{}, false
	}
	sp, gerr := s.Store.GetSpawn(ctx, e.PendingSpawn)
	if gerr != nil || sp.State != spawn.Pending || sp.KeyDigest != digest || sp.RequestedBy != s.actor(ctx) || sp.Kind != in.Kind ||
		sp.EntityID != in.EntityID || len(sp.Request) == 0 {
		return Spawned{}, false
	}
	again, aerr := s.answerAgain(ctx, sp)
	return again, aerr == nil
}

// answerAgain is a harness-mode spawn's spawn_request payload as the call
// that issued it answered: its stored request (for a guess stored without
// one, the request made from the spawn), with its callback token made
// again — a resumed guess's, a reissued assume's.
func (s *core) answerAgain(ctx context.Context, sp spawn.Spawn) (Spawned, error) {
	var req spawn.Request
	if len(sp.Request) == 0 {
		req = spawn.NewRequest(sp, nil) // a guess: its request names no entity
	} else if err := json.Unmarshal(sp.Request, &req); err != nil {
		return Spawned{}, errs.E(errs.Internal, "decode the stored request of "+sp.ID).Wrap(err)
	}
	token, err := s.callbackToken(ctx, sp.ID)
	if err != nil {
		return Spawned{}, err
	}
	payload, err := s.payload(req, token)
	if err != nil {
		return Spawned{}, err
	}
	return Spawned{Request: payload, Spawn: sp}, nil
}

// scheduleTimeout asks the Scheduler, if any, to sweep sp when it expires.
func (s *core) scheduleTimeout(ctx context.Context, sp spawn.Spawn) {
	if s.Scheduler == nil {
		return
	}
	if err := s.Scheduler.ScheduleTimeout(ctx, sp.ID, sp.ExpiresAt); err != nil && s.Log != nil {
		// The scheduled backstop sweep still finds it; never fail the request for this.
		s.Log.Warn("schedule timeout", "request_id", sp.ID, "err", err)
	}
}

// requestJSON is a spawn request's payload as envelope.MarshalData writes
// it, written by hand (spawn.Request.AppendJSON) unless it holds a value
// only encoding/json can refuse.
func requestJSON(r spawn.Request) (json.RawMessage, error) {
	if b, ok := r.AppendJSON(make([]byte, 0, 1536)); ok {
		return b, nil
	}
	return envelope.MarshalData(r)
}

// resumedGuess is the spawn a cut run of the keyed guess in issued, ok
// false if it issued none: the newest guess spawn requested by the same
// principal with the same question, n, temperature and mode, issued
// within the key's lifetime (idempotency.Window before the retry's
// claim; a takeover re-times the claim, so the cut run's time is not
// known). A spawn names who requested it, so a retry never resumes
// another caller's guess. The one imprecision: a cut run that died
// before issuing, after an identical guess by the same caller under
// another key, resumes that guess — its spawn answered once, never a
// second provider answer applied (docs/proof.md).
func (s *core) resumedGuess(ctx context.Context, in SpawnInput) (spawn.Spawn, bool, error) {
	by := s.actor(ctx)
	since := in.ResumeSince.Add(-idempotency.Window)
	list, err := s.Store.ListSpawns(ctx, store.SpawnFilter{After: ids.New(ids.Spawn, since.Add(-time.Millisecond))})
	if err != nil {
		return spawn.Spawn{}, false, storeErr(err)
	}
	var found spawn.Spawn
	ok := false
	for _, sp := range list {
		if sp.Kind != spawn.Guess || by == "" || sp.RequestedBy != by || sp.Question != in.Question || sp.N != in.N ||
			sp.Mode != in.Mode || !sameTemperature(sp.Temperature, in.Temperature) || sp.IssuedAt.Before(since) {
			continue
		}
		if !ok || sp.IssuedAt.After(found.IssuedAt) {
			found, ok = sp, true
		}
	}
	return found, ok, nil
}

func sameTemperature(a, b *float64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// resumeGuess answers a resumed guess from the spawn its cut run issued.
// Harness mode: the same spawn request (its callback token made again).
// Direct mode: a spawn still pending is answered now, through the
// callback path, which resolves it once whatever the cut run's provider
// call did; a resolved one reports its resolution (the concluded claim
// is on the spawn's events), a failed one the failure.
func (s *core) resumeGuess(ctx context.Context, sp spawn.Spawn) (Spawned, []envelope.Warning, error) {
	if sp.Mode != spawn.ModeDirect {
		again, err := s.answerAgain(ctx, sp)
		return again, nil, err
	}
	if sp.State == spawn.Pending {
		return s.direct(ctx, sp, spawn.NewRequest(sp, nil))
	}
	if sp.Outcome != spawn.CallbackApplied {
		return Spawned{}, nil, directErr(errs.E(ProviderError, "this guess's first run closed its spawn "+sp.ID+" as "+string(sp.Outcome)+"; nothing was answered"), sp)
	}
	return Spawned{Spawn: sp, Provider: s.Provider.Name(), Answered: &Answered{RequestID: sp.ID,
		Resolution: Resolution{RequestID: sp.ID, Outcome: sp.Outcome, Applied: true}}}, nil, nil
}

func checkSpawnInput(in *SpawnInput) error {
	switch in.Kind {
	case spawn.Assume, spawn.Overlook:
		if k := ids.Kind(in.EntityID); k != ids.Claim && k != ids.Term {
			return errs.E(errs.InvalidID, "not an entity id: "+quoteID(in.EntityID)).Unmet("ids look like claim:<ULID> or term:<ULID>")
		}
	case spawn.Guess:
		if strings.TrimSpace(in.Question) == "" || len(in.Question) > 8192 {
			return errs.E(errs.InvalidArgument, "a question of 1 to 8192 bytes is required").Unmet("question must not be empty")
		}
		if in.N < 1 || in.N > 20 {
			return errs.E(errs.InvalidArgument, fmt.Sprintf("`n` must be 1..20, got %d", in.N)).Unmet("1 <= n <= 20")
		}
		if in.Temperature != nil && (*in.Temperature < 0 || *in.Temperature > 2) {
			return errs.E(errs.InvalidArgument, fmt.Sprintf("`temperature` must be 0..2, got %g", *in.Temperature)).Unmet("0 <= temperature <= 2")
		}
	default:
		return errs.E(errs.InvalidArgument, "unknown spawn kind "+string(in.Kind))
	}
	if in.Mode == "" {
		in.Mode = spawn.ModeHarness
	}
	if !in.Mode.Valid() {
		return errs.E(errs.InvalidArgument, "unknown mode "+quoteID(string(in.Mode))).Unmet("mode is harness or direct")
	}
	return nil
}

// Answered is what Answer did. Applied, it carries the concluded claim,
// the tally and the number of candidates; a duplicate carries only the
// earlier resolution.
type Answered struct {
	Candidates int            `json:"candidates,omitempty"`
	Claim      *ledger.Entity `json:"claim,omitempty"`
	RequestID  string         `json:"request_id,omitempty"`
	Resolution Resolution     `json:"resolution"`
	Tally      []spawn.Tally  `json:"tally,omitempty"`
}

// GuessAnswer is the answer to a guess spawn.
type GuessAnswer struct {
	RequestID  string
	Candidates []string
	// Direct marks the events of a direct-mode guess (its provider's).
	Direct bool
	// Key is the call's keyed response, committed with the answer (nil:
	// none; idempotency.Pending).
	Key *idempotency.Pending
}

// Answer resolves a guess spawn (spawn.StepAnswer): it records the
// candidates and their agreement tally and concludes the top answer as
// an unverified claim.
func (s *Spawns) Answer(ctx context.Context, in GuessAnswer) (Answered, []envelope.Warning, error) {
	candidates := in.Candidates
	step := spawn.Step{Kind: spawn.StepAnswer, RequestID: in.RequestID, Actor: s.actorOf(ctx), Candidates: candidates,
		ClaimID: s.newID(ids.Claim, s.now()), Author: s.Author, Direct: in.Direct}
	result := func(tr spawn.Transition) (any, []envelope.Warning, error) {
		sp := tr.Spawn
		if tr.Effect == spawn.Lost {
			// A guess spawn has no entity: the earlier resolution is all there is.
			return Answered{Resolution: Resolution{RequestID: sp.ID, Outcome: sp.Outcome, Applied: false}}, []envelope.Warning{loserWarning(sp)}, nil
		}
		return Answered{Candidates: len(candidates), Claim: tr.Entity, RequestID: sp.ID, Tally: tr.Tally,
			Resolution: Resolution{RequestID: sp.ID, Outcome: spawn.CallbackApplied, Applied: true}}, appliedLate(tr, "the answer"), nil
	}
	tr, err := s.runStep(ctx, step, in.Key, result)
	if err != nil {
		return Answered{}, nil, err
	}
	r, warns, _ := result(tr)
	return r.(Answered), warns, nil
}

func (s *core) spawnRecord(ctx context.Context, id string) (spawn.Spawn, error) {
	if ids.Kind(id) != ids.Spawn {
		return spawn.Spawn{}, errs.E(errs.SpawnNotFound, "not a spawn request id: "+quoteID(id)).Unmet("request ids look like spawn:<ULID>")
	}
	memo := readmemo.From(ctx)
	if v, ok := memo.Get(memoSpawn + id); ok {
		return v.(spawn.Spawn), nil
	}
	sp, err := s.Store.GetSpawn(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return sp, errs.E(errs.SpawnNotFound, "no spawn request "+id+" in this project")
	}
	if err != nil {
		return sp, storeErr(err)
	}
	memo.Put(memoSpawn+id, sp)
	return sp, nil
}

// callbackSpawn is spawnRecord for a call that names the spawn's entity
// too (a callback's action, its check of the token's powers): a store
// that keeps a pending spawn with its entity (store.PendingSpawnStore)
// answers from the entity's record, which the call reads anyway, without
// the spawn's request — so callers decide with it and never show or
// rewrite the request (a heartbeat does: it reads spawnRecord). A spawn
// not pending on that entity is read as spawnRecord reads it.
func (s *core) callbackSpawn(ctx context.Context, id, entity string) (spawn.Spawn, error) {
	memo := readmemo.From(ctx)
	if v, ok := memo.Get(memoSpawn + id); ok {
		return v.(spawn.Spawn), nil
	}
	on, ok := s.Store.(store.PendingSpawnStore)
	if !ok || ids.Kind(id) != ids.Spawn || ids.Kind(entity) == "" {
		return s.spawnRecord(ctx, id)
	}
	pendingKey := memoPendingSpawn + id + "\x00" + entity
	if v, ok := memo.Get(pendingKey); ok {
		return v.(spawn.Spawn), nil
	}
	sp, found, err := on.PendingSpawn(ctx, entity, id)
	if err != nil || !found {
		return s.spawnRecord(ctx, id)
	}
	memo.Put(pendingKey, sp)
	return sp, nil
}

// memoPendingSpawn prefixes a spawn read with its entity (callbackSpawn)
// in the read memo: kept apart from memoSpawn's, which hold requests.
const memoPendingSpawn = "service.pendingspawn\x00"

// memoSpawn prefixes a spawn's key in a request's read memo
// (internal/readmemo): checking a callback token's powers and applying
// the callback read the same spawn, and the second read is answered from
// the first until the request's next commit (core.commit).
const memoSpawn = "service.spawn\x00"

// commit applies tx; whatever the outcome, the request's remembered
// reads are forgotten, so a retry after a failed condition (or any read
// after a write) reads the store again.
func (s *core) commit(ctx context.Context, tx store.Tx) error {
	defer readmemo.From(ctx).Forget()
	return s.Store.Commit(ctx, tx)
}

// commitAnswering commits the call's tx together with the response a
// transport will send for result (key, the call's idempotency.Pending;
// nil: none): the key's first response is stored in the same
// transaction as the writes that made it, so no crash between the two
// can apply a call whose retry would not replay it. result is exactly
// what the caller returns when the commit succeeds.
func (s *core) commitAnswering(ctx context.Context, tx store.Tx, key *idempotency.Pending, result any, warns []envelope.Warning) error {
	tx.Key = s.prepareKey(key, result, warns)
	err := s.commit(ctx, tx)
	key.Committed(tx.Key, err)
	return err
}

// appliedLate is the warning of a resolver (what) applied after its spawn
// expired but before any sweep had committed its timeout; none if it had
// not expired.
func appliedLate(tr spawn.Transition, what string) []envelope.Warning {
	if !tr.Late {
		return nil
	}
	sp := tr.Spawn
	return []envelope.Warning{{Code: envelope.CodeOf(errs.SpawnExpired), RequestID: sp.ID,
		Message: sp.ID + " expired at " + sp.ExpiresAt.Format(timeFormat) + " but no resolver had committed; " + what + " was applied late"}}
}

func loserWarning(sp spawn.Spawn) envelope.Warning {
	when := ""
	if sp.ResolvedAt != nil {
		when = " at " + sp.ResolvedAt.Format(timeFormat)
	}
	if sp.Outcome == spawn.TimeoutRestored {
		return envelope.Warning{Code: envelope.WarnSpawnLostToTimeout, RequestID: sp.ID, Outcome: string(sp.Outcome),
			Message: sp.ID + " had already timed out (timeout-restored" + when + "); nothing was changed"}
	}
	return envelope.Warning{Code: envelope.WarnSpawnDuplicate, RequestID: sp.ID, Outcome: string(sp.Outcome),
		Message: sp.ID + " was already resolved (" + string(sp.Outcome) + when + "); this duplicate changed nothing"}
}

func isCondition(err error) bool {
	var c *store.ConditionFailed
	return errors.As(err, &c)
}

// cancelTimeout tells the Scheduler, if it can forget a timer, that the
// spawn requestID names is resolved.
func (s *core) cancelTimeout(requestID string) {
	if c, ok := s.Scheduler.(TimeoutCanceller); ok {
		c.CancelTimeout(requestID)
	}
}
