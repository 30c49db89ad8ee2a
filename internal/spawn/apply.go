package spawn

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
)

// This file is where a spawn is resolved: Apply decides every step of the
// protocol from what was read, and the service's executor only loads,
// commits what Apply returns on the condition of what it read, and
// retries on a conflict (docs/design.md §3, §5).

// StepKind is one of the closed set of protocol steps.
type StepKind string

// The protocol's steps.
const (
	StepIssue     StepKind = "issue"     // assume, overlook, guess: a new pending spawn
	StepCallback  StepKind = "callback"  // dismiss or trust with a verification spawn's request id
	StepAnswer    StepKind = "answer"    // a guess spawn's candidates
	StepCancel    StepKind = "cancel"    // the requester or a person ends it
	StepHeartbeat StepKind = "heartbeat" // the requester moves its expiry forward
	StepTimeout   StepKind = "timeout"   // a sweep, a timer or a command that found it due
	StepFail      StepKind = "fail"      // direct mode: the provider gave nothing usable
)

// Valid reports whether k is one of the steps.
func (k StepKind) Valid() bool {
	switch k {
	case StepIssue, StepCallback, StepAnswer, StepCancel, StepHeartbeat, StepTimeout, StepFail:
		return true
	}
	return false
}

// NotRequester: an agent acted on a spawn (or a question) another agent
// asked for.
const NotRequester errs.Code = "not-requester"

// UnmetRequester is the clause a not-requester refusal reports.
const UnmetRequester = "the requester, its callback token or a person"

// Actor is who takes a step, as the transport authenticated it.
type Actor struct {
	// ID is the principal's id (auth.Principal.ID), or the author when
	// the call has none.
	ID string
	// Role names the principal's role in refusals ("harness", "agent"…).
	Role string
	// Person: the person's own principal, which may act on any spawn.
	Person bool
	// Callback: a callback token, bound to the spawn CallbackFor names.
	Callback    bool
	CallbackFor string
}

// MayAct lets a actor cancel, heartbeat or resolve sp (what names the act
// in the refusal) only if it is a person, sp's own callback token, or the
// principal that issued sp. A spawn recorded before requesters were kept
// names none and stays open to every harness, as it was.
func MayAct(a Actor, sp Spawn, what string) error {
	switch {
	case a.Person:
		return nil
	case a.Callback:
		if a.CallbackFor == sp.ID {
			return nil
		}
	case sp.RequestedBy == "" || SameAgent(sp.RequestedBy, a.ID):
		return nil
	}
	return errs.E(NotRequester, sp.ID+" was requested by "+quote(sp.RequestedBy)+"; a "+a.Role+" that did not ask for it may not "+what+" it").
		Unmet(UnmetRequester).With("request", sp.ID).With("requester", sp.RequestedBy)
}

// SameAgent reports whether two principal ids name the same agent. A
// token's id names its token; on the embedded transports a principal has
// no token, only the name it declares (DONT_AUTHOR), as the owner
// ("agent-7"), as a harness-signalled CLI ("harness:agent-7") or as
// `dont mcp` ("mcp:agent-7"): one name is one agent there, so that a
// subagent run with DONT_REQUEST_ID resolves the spawn its harness asked
// for through any of them (docs/security.md: harnesses sharing an
// embedded project are told apart only by the names they declare).
func SameAgent(a, b string) bool {
	return a == b || declaredName(a) == declaredName(b)
}

func declaredName(id string) string {
	for _, prefix := range []string{"harness:", "mcp:"} {
		if rest, ok := strings.CutPrefix(id, prefix); ok {
			return rest
		}
	}
	return id
}

// Snapshot is what a step reads: the spawn it acts on and the entity that
// spawn is on. An issue reads no spawn (Spawn nil) but its target entity
// and, in Blocking, the spawn that entity names as pending, if any.
type Snapshot struct {
	Spawn    *Spawn
	Entity   *ledger.Entity
	Blocking *Spawn
}

// Step is one protocol step with its arguments; only the fields of its
// Kind are read.
type Step struct {
	Kind  StepKind
	Actor Actor
	// RequestID names the spawn the step acts on (an issue's new spawn
	// is Issue.ID).
	RequestID string

	// StepIssue: the spawn to issue (ID, Kind, Mode, Question, N,
	// Temperature, EntityID) and how long it lives.
	Issue   Spawn
	Timeout time.Duration

	// StepCallback: the action (ledger.Doubt or ledger.Verify) on
	// EntityID with its reason or evidence.
	Action   ledger.Action
	EntityID string
	Reason   string // also StepCancel's reason
	Evidence []string
	Direct   bool // the verdict or the candidates came from a provider (direct mode)

	// StepAnswer: the candidates, the new claim's id and author.
	Candidates []string
	ClaimID    string
	Author     string

	// StepHeartbeat: the wanted extension (zero: Timeout) and the lease
	// that bounds any expiry (issued_at + MaxLease).
	Extend   time.Duration
	MaxLease time.Duration

	// StepFail: the provider's name and its error.
	Provider  string
	FailCode  errs.Code
	FailError string
}

// Effect says what a Transition does when committed.
type Effect string

// Effects.
const (
	// Write: commit the Transition's writes.
	Write Effect = "write"
	// Lost: the spawn had already been resolved; nothing is written and
	// Winner is what resolved it.
	Lost Effect = "lost"
	// NoChange: nothing to write (a spawn not yet due for a timeout, a
	// heartbeat whose expiry is already later).
	NoChange Effect = "no-change"
	// TimeoutFirst: the spawn is pending but expired; the Transition is
	// its timeout, and once it is committed the step is applied again
	// (the seed rule: an expired spawn a command touches is timed out
	// before the command acts).
	TimeoutFirst Effect = "timeout-first"
)

// Transition is what a step does: the writes, conditioned on what was
// read, and what the caller is told.
type Transition struct {
	Step   StepKind
	Effect Effect

	// Spawn is the spawn as written; CreateSpawn for an issue.
	// PrevExpiresAt is the expiry the write is conditioned on (a
	// heartbeat's: the one it moved; zero: Spawn.ExpiresAt).
	Spawn         Spawn
	CreateSpawn   bool
	PrevExpiresAt time.Time

	// Entity, when not nil, is written if the stored version is still
	// PrevVersion (0: it must not exist yet: an answer's new claim).
	Entity      *ledger.Entity
	PrevVersion int64
	// CascadeFrom names a doubted entity whose dependents go stale in
	// the same commit (a ledger rule: the executor reads them).
	CascadeFrom string

	// Events are written with the transition; the executor gives each
	// its id and author.
	Events []ledger.Event

	// What the caller is told.
	Outcome Outcome        // the outcome this step committed, or the winner's
	Winner  *Spawn         // Lost: the spawn as the winner left it
	Current *ledger.Entity // Lost: the spawn's entity as read, unchanged

	// TimedOut is the timeout an executor committed before this step
	// (a Transition with Effect TimeoutFirst), if any.
	TimedOut *Transition
	Restored bool          // a timeout, cancel or fail restored the pre-spawn status
	Status   ledger.Status // the entity's status after the write
	Late     bool          // a callback or answer applied after expires_at
	Tally    []Tally       // an answer's tally
	Previous time.Time     // heartbeat: the expiry before
	Capped   bool          // heartbeat: the expiry asked for lay beyond the lease
	LeaseEnd time.Time     // heartbeat: issued_at + MaxLease
}

// Check refuses a step whose own arguments are wrong, whatever is stored:
// the executor asks before it reads anything.
func (step Step) Check() error {
	switch step.Kind {
	case StepAnswer:
		if len(TallyCandidates(step.Candidates)) == 0 {
			return errs.E(errs.InvalidArgument, "at least one non-empty `candidate` is required").Unmet("candidates must not be empty")
		}
	case StepHeartbeat:
		if step.Extend < 0 {
			return errs.E(errs.InvalidArgument, "`extend` must be a positive duration").Unmet("extend > 0")
		}
	case StepIssue, StepCallback, StepCancel, StepTimeout, StepFail:
	default:
		return errs.E(errs.Internal, "unknown spawn step "+quote(string(step.Kind)))
	}
	return nil
}

// Apply decides one step of the spawn protocol from what was read at now.
// It does no I/O: the caller commits the Transition conditioned on the
// snapshot (the spawn still pending with the expiry read, the entity at
// the version read) and, if that condition fails, reads again and applies
// again. Of the terminal resolvers (callback, answer, cancel, timeout,
// fail) exactly one commits per spawn; the others find it resolved and
// return Effect Lost.
func Apply(st Snapshot, step Step, now time.Time) (Transition, error) {
	trace(step)
	if err := step.Check(); err != nil {
		return Transition{}, err
	}
	if step.Kind == StepIssue {
		return issue(st, step, now)
	}
	if st.Spawn == nil {
		return Transition{}, errs.E(errs.SpawnNotFound, "no spawn request "+step.RequestID+" in this project")
	}
	sp := *st.Spawn
	switch step.Kind {
	case StepCallback:
		return callback(st, sp, step, now)
	case StepAnswer:
		return answer(sp, step, now)
	case StepCancel:
		return cancel(st, sp, step, now)
	case StepHeartbeat:
		return heartbeat(st, sp, step, now)
	case StepTimeout:
		return timeout(st, sp, now), nil
	default:
		return fail(st, sp, step, now), nil
	}
}

func issue(st Snapshot, step Step, now time.Time) (Transition, error) {
	sp := step.Issue
	sp.State, sp.Outcome, sp.ResolvedAt = Pending, "", nil
	sp.IssuedAt, sp.ExpiresAt = now, now.Add(step.Timeout)
	if sp.RequestedBy == "" {
		sp.RequestedBy = step.Actor.ID
	}
	ev := ledger.Event{Kind: ledger.EvSpawnRequested, At: now, RequestID: sp.ID, Direct: sp.Mode == ModeDirect}
	ev.Detail = map[string]any{"request_kind": string(sp.Kind), "expires_at": sp.ExpiresAt.Format(TimeFormat), "mode": string(sp.Mode)}
	t := Transition{Step: StepIssue, Effect: Write, CreateSpawn: true}
	if sp.Kind == Guess {
		sp.EntityID = ""
		ev.Detail["n"], ev.Detail["question"] = sp.N, sp.Question
		if sp.Temperature != nil {
			ev.Detail["temperature"] = *sp.Temperature
		}
	} else {
		if st.Entity == nil {
			return Transition{}, errs.E(errs.NotFound, "no entity "+quote(sp.EntityID)).On(sp.EntityID)
		}
		e := *st.Entity
		if e.Status.Terminal() {
			return Transition{}, errs.E(errs.InvalidTransition, string(e.Status)+" entities are not re-verified").On(e.ID).
				Unmet("status must not be locked or ignored").With("status", string(e.Status))
		}
		if b := st.Blocking; b != nil && e.PendingSpawn == b.ID && b.State == Pending {
			return Transition{}, errs.E(errs.SpawnPending, e.ID+" already has a pending verification spawn "+b.ID+" (expires "+b.ExpiresAt.Format(TimeFormat)+")").
				On(e.ID).Unmet("at most one pending verification spawn per entity").With("request", b.ID)
		}
		sp.EntityID, sp.PreStatus, sp.EntityVersion = e.ID, e.Status, e.Version+1
		sp.Question, sp.N, sp.Temperature = "", 0, nil
		e2 := e
		e2.Status, e2.Version, e2.UpdatedAt = UnderReview(e.Status), e.Version+1, now
		e2.PendingSpawn, e2.LastSpawn = sp.ID, sp.ID
		ev.EntityID, ev.From, ev.To = e.ID, e.Status, e2.Status
		t.Entity, t.PrevVersion, t.Status = &e2, e.Version, e2.Status
	}
	// The request is stored without its callback token, and without
	// forbidden_tools: the surface's other tools, which the payload a
	// harness receives adds back (Forbidding). Kept, the list would make
	// every spawn item dearer to write (docs/aws-cost.md).
	bare := NewRequest(sp, t.Entity)
	stored, err := bare.Encode()
	if err != nil {
		return Transition{}, errs.E(errs.Internal, "encode spawn request").Wrap(err)
	}
	sp.Request = stored
	t.Spawn, t.Events = sp, []ledger.Event{ev}
	return t, nil
}

func callback(st Snapshot, sp Spawn, step Step, now time.Time) (Transition, error) {
	if err := MayAct(step.Actor, sp, "resolve"); err != nil {
		return Transition{}, err
	}
	if sp.Kind == Guess {
		return Transition{}, errs.E(errs.SpawnMismatch, sp.ID+" is a guess spawn; it resolves with answer").On(step.EntityID).
			Unmet("a guess spawn resolves with answer").With("request", sp.ID)
	}
	if sp.EntityID != step.EntityID {
		return Transition{}, errs.E(errs.SpawnMismatch, sp.ID+" was issued for "+sp.EntityID+", not "+step.EntityID).On(step.EntityID).
			Unmet("request_id names a spawn of this entity").
			With("action", string(step.Action)).With("entity", sp.EntityID).With("request", sp.ID)
	}
	if sp.State != Pending {
		return lost(StepCallback, st, sp), nil
	}
	if st.Entity == nil {
		return Transition{}, errs.E(errs.NotFound, "no entity "+quote(sp.EntityID)).On(sp.EntityID)
	}
	e := *st.Entity
	to, err := ledger.Next(e.ID, e.Status, step.Action)
	if err != nil {
		return Transition{}, err
	}
	ev := ledger.Event{Kind: step.Action.EventKind(), EntityID: e.ID, At: now, From: e.Status, To: to,
		Reason: step.Reason, Evidence: step.Evidence, RequestID: sp.ID, Direct: step.Direct}
	e2 := e
	e2.Status, e2.Version, e2.UpdatedAt = to, e.Version+1, now
	e2.PendingSpawn = clearIf(e.PendingSpawn, sp.ID)
	done := ledger.Event{Kind: ledger.EvSpawnResolved, EntityID: e.ID, At: now, RequestID: sp.ID, Outcome: string(CallbackApplied), Direct: step.Direct}
	t := Transition{Step: StepCallback, Effect: Write, Spawn: closed(sp, CallbackApplied, now), Entity: &e2, PrevVersion: e.Version,
		Events: []ledger.Event{ev, done}, Outcome: CallbackApplied, Status: to, Late: now.After(sp.ExpiresAt)}
	if to == ledger.Doubted {
		t.CascadeFrom = e.ID
	}
	return t, nil
}

func answer(sp Spawn, step Step, now time.Time) (Transition, error) {
	if err := MayAct(step.Actor, sp, "answer"); err != nil {
		return Transition{}, err
	}
	if sp.Kind != Guess {
		return Transition{}, errs.E(errs.SpawnMismatch, sp.ID+" is a "+string(sp.Kind)+" spawn; it resolves with dismiss or trust").
			Unmet("a verification spawn resolves with dismiss or trust").With("entity", sp.EntityID).With("request", sp.ID)
	}
	if sp.State != Pending {
		return lost(StepAnswer, Snapshot{}, sp), nil // a guess spawn has no entity
	}
	tally := TallyCandidates(step.Candidates)
	e := ledger.Entity{ID: step.ClaimID, Kind: ledger.KindClaim, Statement: tally[0].Answer, Refs: []string{sp.ID},
		Status: ledger.Unverified, Author: step.Author, CreatedAt: now, UpdatedAt: now, Version: 1}
	answered := ledger.Event{Kind: ledger.EvAnswered, EntityID: e.ID, At: now, RequestID: sp.ID, Direct: step.Direct,
		Detail: map[string]any{"question": sp.Question, "candidates": step.Candidates, "tally": tally}}
	concluded := ledger.Event{Kind: ledger.EvConcluded, EntityID: e.ID, At: now, To: ledger.Unverified, RequestID: sp.ID, Direct: step.Direct}
	done := ledger.Event{Kind: ledger.EvSpawnResolved, EntityID: e.ID, At: now, RequestID: sp.ID, Outcome: string(CallbackApplied), Direct: step.Direct}
	return Transition{Step: StepAnswer, Effect: Write, Spawn: closed(sp, CallbackApplied, now), Entity: &e,
		Events: []ledger.Event{answered, concluded, done}, Outcome: CallbackApplied, Status: ledger.Unverified,
		Late: now.After(sp.ExpiresAt), Tally: tally}, nil
}

func cancel(st Snapshot, sp Spawn, step Step, now time.Time) (Transition, error) {
	if err := MayAct(step.Actor, sp, "cancel"); err != nil {
		return Transition{}, err
	}
	if sp.State != Pending {
		return lost(StepCancel, st, sp), nil
	}
	ev := ledger.Event{Kind: ledger.EvSpawnCancelled, EntityID: sp.EntityID, At: now, RequestID: sp.ID, Outcome: string(Cancelled), Reason: step.Reason,
		Detail: map[string]any{"issued_at": sp.IssuedAt.Format(TimeFormat), "expires_at": sp.ExpiresAt.Format(TimeFormat),
			"cancelled_at": now.Format(TimeFormat), "request_kind": string(sp.Kind)}}
	return closeWith(StepCancel, st, sp, Cancelled, ev, now), nil
}

func timeout(st Snapshot, sp Spawn, now time.Time) Transition {
	if sp.State != Pending {
		return lost(StepTimeout, st, sp)
	}
	if now.Before(sp.ExpiresAt) {
		return Transition{Step: StepTimeout, Effect: NoChange, Spawn: sp}
	}
	ev := ledger.Event{Kind: ledger.EvSpawnTimeout, EntityID: sp.EntityID, At: now, RequestID: sp.ID, Outcome: string(TimeoutRestored),
		Detail: map[string]any{"issued_at": sp.IssuedAt.Format(TimeFormat), "expires_at": sp.ExpiresAt.Format(TimeFormat),
			"timed_out_at": now.Format(TimeFormat), "request_kind": string(sp.Kind)}}
	return closeWith(StepTimeout, st, sp, TimeoutRestored, ev, now)
}

func fail(st Snapshot, sp Spawn, step Step, now time.Time) Transition {
	if sp.State != Pending {
		return lost(StepFail, st, sp)
	}
	ev := ledger.Event{Kind: ledger.EvSpawnFailed, EntityID: sp.EntityID, At: now, RequestID: sp.ID, Outcome: string(Failed), Direct: true,
		Detail: map[string]any{"request_kind": string(sp.Kind), "provider": step.Provider, "code": string(step.FailCode),
			"error": step.FailError, "issued_at": sp.IssuedAt.Format(TimeFormat), "failed_at": now.Format(TimeFormat)}}
	return closeWith(StepFail, st, sp, Failed, ev, now)
}

func heartbeat(st Snapshot, sp Spawn, step Step, now time.Time) (Transition, error) {
	if err := MayAct(step.Actor, sp, "heartbeat"); err != nil {
		return Transition{}, err
	}
	lease := sp.IssuedAt.Add(step.MaxLease)
	t := Transition{Step: StepHeartbeat, Effect: NoChange, Spawn: sp, Outcome: sp.Outcome, Previous: sp.ExpiresAt, LeaseEnd: lease}
	if sp.State == Pending && !now.Before(sp.ExpiresAt) {
		// Expired but not yet swept: the timeout commits first, so a
		// heartbeat never revives an expired spawn.
		first := timeout(st, sp, now)
		first.Effect = TimeoutFirst
		return first, nil
	}
	if sp.State != Pending {
		t.Effect, t.Winner = Lost, &sp
		return t, nil
	}
	extend := step.Extend
	if extend == 0 {
		extend = step.Timeout
	}
	want := now.Add(extend)
	if want.After(lease) {
		want, t.Capped = lease, true
	}
	if !want.After(sp.ExpiresAt) {
		return t, nil // already later: nothing to write
	}
	sp2 := sp
	sp2.ExpiresAt = want
	if len(sp.Request) > 0 {
		b, err := withExpiry(sp.Request, want)
		if err != nil {
			return Transition{}, errs.E(errs.Internal, "cannot rewrite the stored spawn request "+sp.ID).Wrap(err)
		}
		sp2.Request = b
	}
	ev := ledger.Event{Kind: ledger.EvSpawnHeartbeat, EntityID: sp.EntityID, At: now, RequestID: sp.ID,
		Detail: map[string]any{"expires_at": want.Format(TimeFormat), "previous_expires_at": sp.ExpiresAt.Format(TimeFormat),
			"request_kind": string(sp.Kind)}}
	t.Effect, t.PrevExpiresAt, t.Events = Write, sp.ExpiresAt, []ledger.Event{ev}
	if sp.EntityID != "" {
		if st.Entity == nil {
			return Transition{}, errs.E(errs.NotFound, "no entity "+quote(sp.EntityID)).On(sp.EntityID)
		}
		// The event is committed with its entity, as every event is. The
		// spawn's EntityVersion follows only if nothing else has moved the
		// entity since the spawn did, so that a timeout still restores
		// exactly when it would have.
		e := *st.Entity
		e2 := e
		e2.Version = e.Version + 1
		if sp.EntityVersion == e.Version {
			sp2.EntityVersion = e2.Version
		}
		t.Entity, t.PrevVersion, t.Status = &e2, e.Version, e2.Status
	}
	t.Spawn = sp2
	return t, nil
}

// closeWith ends a pending spawn without a callback — a timeout, a cancel,
// a failed provider call: the spawn resolved with the outcome, the
// entity's pending mark cleared and its pre-spawn status restored only if
// nothing has moved it since the spawn did (Restores). ev records it.
func closeWith(k StepKind, st Snapshot, sp Spawn, outcome Outcome, ev ledger.Event, now time.Time) Transition {
	t := Transition{Step: k, Effect: Write, Spawn: closed(sp, outcome, now), Outcome: outcome}
	if sp.EntityID != "" && st.Entity != nil {
		e := *st.Entity
		e2 := e
		e2.PendingSpawn, e2.Version, e2.UpdatedAt = clearIf(e.PendingSpawn, sp.ID), e.Version+1, now
		t.Restored = Restores(sp, e)
		if t.Restored {
			e2.Status = sp.PreStatus
			ev.From, ev.To = e.Status, sp.PreStatus
		}
		ev.Detail["restored"] = t.Restored
		t.Status, t.Entity, t.PrevVersion = e2.Status, &e2, e.Version
	}
	t.Events = []ledger.Event{ev}
	return t
}

// lost is the answer to a step that found sp already resolved: nothing
// changes, and the caller is told who won.
func lost(k StepKind, st Snapshot, sp Spawn) Transition {
	t := Transition{Step: k, Effect: Lost, Spawn: sp, Outcome: sp.Outcome, Winner: &sp, Current: st.Entity}
	if st.Entity != nil {
		t.Status = st.Entity.Status
	}
	return t
}

func closed(sp Spawn, outcome Outcome, now time.Time) Spawn {
	sp.State, sp.Outcome = Resolved, outcome
	sp.ResolvedAt = &now
	return sp
}

func clearIf(current, id string) string {
	if current == id {
		return ""
	}
	return current
}

// withExpiry is a stored request payload with its expires_at moved.
func withExpiry(stored []byte, at time.Time) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(stored, &req); err != nil {
		return nil, err
	}
	req.ExpiresAt = at
	return req.Encode()
}

// Encode is r as the envelope's data encodes it (encoding/json, HTML
// escaping off, no trailing newline).
func (r Request) Encode() ([]byte, error) {
	if b, ok := r.AppendJSON(make([]byte, 0, 1536)); ok {
		return b, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the envelope's data encoding
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// TimeFormat is how the protocol's events write times.
const TimeFormat = time.RFC3339Nano

func quote(id string) string {
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return "\"" + id + "\""
}

// UnmetUnderReview is the clause an agent's move of an entity under review
// reports unmet.
const UnmetUnderReview = "no move while its verification spawn is pending"

// Reviewing says whether sp, the spawn e names as pending, holds e under
// review against a status change outside the protocol (one without a
// request id): while it is pending only its callback or a person moves
// e, so an agent whose claim is under review cannot verify it itself
// beside its verifier (spawn-pending). expired: it is past its expiry
// and times out first, then the move is decided again. A person's move
// while it holds supersedes it (Supersede).
func Reviewing(e ledger.Entity, sp *Spawn, a Actor, action ledger.Action, now time.Time) (holds, expired bool, err error) {
	if sp == nil || sp.State != Pending || sp.EntityID != e.ID {
		return false, false, nil
	}
	if !now.Before(sp.ExpiresAt) {
		return true, true, nil
	}
	if !a.Person {
		return false, false, errs.E(errs.SpawnPending, e.ID+" is under review by its verification spawn "+sp.ID+" (expires "+sp.ExpiresAt.Format(TimeFormat)+
			"): only that spawn's callback or a person may "+string(action)+" it now").On(e.ID).
			Unmet(UnmetUnderReview).With("request", sp.ID).With("action", string(action))
	}
	return true, false, nil
}

// Supersede ends the verification spawn sp that a person's move of its
// entity overrides, in the same commit as the move: the spawn resolves as
// cancelled (so its callback later gets the duplicate warning and changes
// nothing), and e2, the entity as the move writes it, no longer names it.
// by names who moved it.
func Supersede(sp Spawn, e2 ledger.Entity, by string, action ledger.Action, now time.Time) (Spawn, ledger.Entity, ledger.Event) {
	e2.PendingSpawn = clearIf(e2.PendingSpawn, sp.ID)
	ev := ledger.Event{Kind: ledger.EvSpawnCancelled, EntityID: sp.EntityID, At: now, RequestID: sp.ID, Outcome: string(Cancelled),
		Reason: "superseded: " + by + " moved the entity (" + string(action) + ") while its verification spawn was pending",
		Detail: map[string]any{"issued_at": sp.IssuedAt.Format(TimeFormat), "expires_at": sp.ExpiresAt.Format(TimeFormat),
			"cancelled_at": now.Format(TimeFormat), "request_kind": string(sp.Kind), "superseded_by": string(action)}}
	return closed(sp, Cancelled, now), e2, ev
}
