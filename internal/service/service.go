// Package service is the one layer every front end calls: the CLI, `dont
// serve`, MCP and the Lambda functions (api, sweeper, operator). It applies the ledger and spawn
// rules over a Store port; it does no I/O of its own.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// DefaultSpawnTimeout applies when the project configures none.
const DefaultSpawnTimeout = settings.DefaultSpawnTimeout

// InlineSweep bounds the due spawns a tool call's sweep-first times out
// itself: a backlog is the sweeper's (docs/design.md §5.5), and a call
// that finds one settles only what it acts on (settledEntity, settledSpawn).
const InlineSweep = 8

// maxAttempts bounds optimistic retries when a concurrent writer moved an entity.
const maxAttempts = 32

// Deps are what a service is built from: the ports it has and its
// settings. Store is required; every other port is optional, and a nil
// one is absent: the operations that need it refuse with its
// *-unavailable error (direct mode with config-missing). Time is an input.
type Deps struct {
	Store store.Store
	// Tokens keeps bearer tokens and the callback secret.
	Tokens store.TokenStore
	// Approvals configures tier escalation (Approvals.Store nil: none).
	Approvals Approvals
	// Confirmations keeps the calls held for an approver.
	Confirmations store.ConfirmationStore
	// Provider is direct mode's LLM.
	Provider Reasoner
	// Scheduler is told about every new spawn, so that its timeout can
	// be driven from outside (SQS in AWS, the timer heap of dont serve).
	Scheduler TimeoutScheduler
	// ApprovalScheduler is told about every question's deadline, likewise.
	ApprovalScheduler ApprovalTimeoutScheduler
	// Clock is "now" (nil: the wall clock).
	Clock func() time.Time
	// IDs makes every id the service gives a new record, of an ids kind
	// at a time (nil: ids.New). Tests inject a counter for stable bytes.
	IDs          func(kind string, at time.Time) string
	SpawnTimeout time.Duration // DefaultSpawnTimeout if zero
	// SpawnMaxLease bounds a spawn's life from its issue, however often it
	// heartbeats (settings.DefaultSpawnMaxLease if zero).
	SpawnMaxLease time.Duration
	Author        string
	Log           *slog.Logger
	// Settings keeps a shared store's per-project settings (operator actions).
	Settings store.SettingsStore
	// Project names the project this service's data is kept under in a
	// store shared by many projects (DynamoDB); "" for a store of one
	// project. Callback tokens and the operator's settings view name it.
	Project string
	// HooksConfig keeps webhook subscriptions and delivers them (docs/hooks.md).
	HooksConfig HooksConfig
	// SweepPolicy is the policy of the sweep a tool call runs (SweepFirst,
	// SweepAfter); the zero policy sweeps everything on every call.
	SweepPolicy SweepFirstPolicy
	// PasskeyRP makes the WebAuthn relying party of a page origin
	// (internal/webauthnrp); nil: no passkeys (passkeys.go).
	PasskeyRP PasskeyRP
	// ToolNames are the tool registry's names (tools.Names()): every one
	// a spawn request does not allow is in its forbidden_tools. Issuing or
	// showing a spawn request without them panics (spawn.ForbiddenTools):
	// a shorter list would forbid a subagent less.
	ToolNames []string
}

// Service is the one service every front end calls, split by domain over
// one shared core: the ledger of claims and terms, spawns (issued,
// resolved, swept), escalations (sessions, approvals, frames), held calls
// and credentials. The core holds the ports and the operations every
// domain shares: the sweeps and timeouts, the caller's principal. Build
// it with New; its Deps stay readable (and, for tests and per-project
// settings, settable).
type Service struct {
	*core
	Ledger      *Ledger
	Spawns      *Spawns
	Escalations *Escalations
	Held        *Held
	Credentials *Credentials
	Hooks       *Hooks
	Passkeys    *Passkeys
}

// core is what the domains share: the ports, the clock, and the helpers
// that read and write across domains.
type core struct {
	Deps
	// approvalsSweptAt is when a call's sweep last swept questions, and
	// afterSweptAt when a call last swept after resolving its own request
	// (unix nanoseconds of the service's clock; SweepFirstPolicy).
	approvalsSweptAt, afterSweptAt atomic.Int64
	// backlogSeenAt is when a sweep-first last found more due spawns than
	// InlineSweep (unix nanoseconds of the service's clock): while it is
	// recent, a call settles the spawn of what it acts on itself.
	backlogSeenAt atomic.Int64
}

// Ledger records claims and terms and moves them through the status
// lattice.
type Ledger struct{ *core }

// Spawns issues spawn requests and resolves them: by callback (Resolve),
// by answer, by cancel, by a direct-mode provider's failure, and, on the
// core, by timeout (Sweep, ExpireSpawn). Exactly one resolver wins per
// request, by a conditional commit.
type Spawns struct{ *core }

// Escalations are tier escalations: sessions, questions, their answers
// and the frame log that delivers them.
type Escalations struct{ *core }

// Held keeps the gated calls nobody confirmed, until an approver
// confirms or refuses them.
type Held struct{ *core }

// Credentials are bearer tokens and the callback tokens of spawns.
type Credentials struct{ *core }

// New builds the service over deps.
func New(deps Deps) *Service {
	c := &core{Deps: deps}
	return &Service{core: c, Ledger: &Ledger{c}, Spawns: &Spawns{c}, Escalations: &Escalations{c}, Held: &Held{c}, Credentials: &Credentials{c}, Hooks: &Hooks{c}, Passkeys: &Passkeys{c}}
}

func (s *core) now() time.Time {
	if s.Clock == nil {
		return time.Now().UTC()
	}
	return s.Clock().UTC()
}

// newID is the id of a new record of kind made at t (Deps.IDs).
func (s *core) newID(kind string, t time.Time) string {
	if s.IDs == nil {
		return ids.New(kind, t)
	}
	return s.IDs(kind, t)
}

func (s *core) timeout() time.Duration {
	if s.SpawnTimeout <= 0 {
		return DefaultSpawnTimeout
	}
	return s.SpawnTimeout
}

func (s *core) maxLease() time.Duration {
	if s.SpawnMaxLease <= 0 {
		return settings.DefaultSpawnMaxLease
	}
	return s.SpawnMaxLease
}

// EntityView is an entity as callers see it.
type EntityView struct {
	ledger.Entity
	Resolution *Resolution    `json:"resolution,omitempty"`
	History    []ledger.Event `json:"history,omitempty"`
	// NextCursor names the next page of History (ShowPage); it is absent
	// on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Resolution tells a callback caller what its callback did.
type Resolution struct {
	RequestID string        `json:"request_id"`
	Outcome   spawn.Outcome `json:"outcome"`
	Applied   bool          `json:"applied"`
}

// ConcludeInput is a new claim.
type ConcludeInput struct {
	Statement  string
	Atoms      []string
	Refs       []string
	Confidence *float64
	DependsOn  []string
	// Key is the call's keyed response, committed with the claim (nil:
	// none; idempotency.Pending).
	Key *idempotency.Pending
}

// Conclude records a new unverified claim.
func (s *Ledger) Conclude(ctx context.Context, in ConcludeInput) (EntityView, error) {
	var res EntityView
	if len(in.Statement) == 0 || len(in.Statement) > 8192 {
		return res, errs.E(errs.InvalidArgument, "a statement of 1 to 8192 bytes is required").Unmet("statement must not be empty")
	}
	if in.Confidence != nil && (*in.Confidence < 0 || *in.Confidence > 1) {
		return res, errs.E(errs.InvalidArgument, "confidence must be between 0 and 1").Unmet("0 <= confidence <= 1")
	}
	for _, d := range in.DependsOn {
		if k := ids.Kind(d); k != ids.Claim && k != ids.Term {
			return res, errs.E(errs.InvalidID, "not an entity id: "+d)
		}
		if _, err := s.Store.GetEntity(ctx, d); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return res, errs.E(errs.DependencyNotFound, "no such dependency: "+d).On(d)
			}
			return res, storeErr(err)
		}
	}
	now := s.now()
	e := ledger.Entity{
		ID: s.newID(ids.Claim, now), Kind: ledger.KindClaim, Statement: in.Statement,
		Atoms: in.Atoms, Refs: in.Refs, Confidence: in.Confidence, DependsOn: in.DependsOn,
		Status: ledger.Unverified, Author: s.Author, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	ev := s.event(ledger.EvConcluded, e.ID, now)
	ev.To = ledger.Unverified
	res = EntityView{Entity: e}
	if err := s.commitAnswering(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}, in.Key, res, nil); err != nil {
		return EntityView{}, storeErr(err)
	}
	return res, nil
}

// Define records a new term. A CURIE names one term: the check before the
// commit refuses a CURIE already held, and the commit's condition on the
// CURIE (CurieKey) refuses the same to the loser of two defines that both
// passed the check, with the same error; nothing is written. key is the
// call's keyed response, committed with the term (nil: none).
func (s *Ledger) Define(ctx context.Context, curie, doc string, key *idempotency.Pending) (EntityView, error) {
	var res EntityView
	if err := ledger.CheckCurie(curie); err != nil {
		return res, err
	}
	if len(doc) == 0 || len(doc) > 8192 {
		return res, errs.E(errs.InvalidArgument, "a `doc` of 1 to 8192 bytes is required").Unmet("definition must not be empty")
	}
	if err := s.curieFree(ctx, curie); err != nil {
		return res, err
	}
	now := s.now()
	e := ledger.Entity{
		ID: s.newID(ids.Term, now), Kind: ledger.KindTerm, Curie: curie, Definition: doc,
		Status: ledger.Unverified, Author: s.Author, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	ev := s.event(ledger.EvDefined, e.ID, now)
	ev.To = ledger.Unverified
	err := s.commitAnswering(ctx, store.Tx{Entities: []store.EntityPut{{Entity: e}}, Events: []ledger.Event{ev}}, key, EntityView{Entity: e}, nil)
	if store.FailedOn(err, store.CurieKey(curie)) {
		// Another define committed the CURIE after the check: it is
		// committed, so a read now finds its term.
		if err := s.curieFree(ctx, curie); err != nil {
			return res, err
		}
		return res, errs.E(errs.AlreadyExists, "term "+curie+" is already defined").
			Unmet("a CURIE names at most one term").Wrap(err)
	}
	if err != nil {
		return res, storeErr(err)
	}
	return EntityView{Entity: e}, nil
}

// curieFree refuses a CURIE that a stored term holds, naming the oldest
// such term (ids begin with their creation time).
func (s *core) curieFree(ctx context.Context, curie string) error {
	terms, err := s.Store.ListEntities(ctx, store.EntityFilter{Kind: ledger.KindTerm})
	if err != nil {
		return storeErr(err)
	}
	for _, t := range terms {
		if t.Curie == curie {
			return errs.E(errs.AlreadyExists, "term "+curie+" is already defined as "+t.ID).On(t.ID)
		}
	}
	return nil
}

// Show returns one entity, with its history if asked. A spawn id is
// Spawns.Show's (the show tool sends it there).
func (s *Ledger) Show(ctx context.Context, id string, history bool) (EntityView, error) {
	if !history {
		return s.ShowPage(ctx, id, false, Page{})
	}
	return walk(func(p Page) (EntityView, error) { return s.ShowPage(ctx, id, true, p) },
		func(v EntityView) string { return v.NextCursor },
		func(all *EntityView, v EntityView) {
			all.History = append(all.History, v.History...)
			all.NextCursor = v.NextCursor
		})
}

// ShowPage is Show with one page of the history, in commit order. The
// history is read whole (one entity's events) and the page cut from it:
// its cursor names the last event sent, so events committed since only
// add to the pages after it.
func (s *Ledger) ShowPage(ctx context.Context, id string, history bool, p Page) (EntityView, error) {
	if !history {
		if p != (Page{}) {
			return EntityView{}, errs.E(errs.InvalidArgument, "limit and cursor page the history").
				Unmet("limit and cursor go with history")
		}
	}
	q := pageQuery{project: s.Project, query: "show-history\x00" + id}
	limit, after, err := q.open(p, "show", func(after string) bool { return ids.Kind(after) == ids.Event })
	if err != nil {
		if e, ok := err.(*errs.Error); ok && e.Code == CursorInvalid && entityID(id) == nil {
			e.EntityID = id
		}
		return EntityView{}, err
	}
	e, err := s.settledEntity(ctx, id)
	if err != nil {
		return EntityView{}, err
	}
	v := EntityView{Entity: e}
	if !history {
		return v, nil
	}
	events, err := s.Store.Events(ctx, id)
	if err != nil {
		return EntityView{}, storeErr(err)
	}
	start := 0
	if after != "" {
		start = slices.IndexFunc(events, func(ev ledger.Event) bool { return ev.ID == after }) + 1
		if start == 0 {
			e := errs.E(CursorInvalid, "the cursor names no event of "+id).
				Unmet("a cursor is the next_cursor of the same listing, unchanged").On(id)
			e.Args = map[string]string{"kind": "show"}
			return EntityView{}, e
		}
	}
	v.History = events[start:]
	if len(v.History) > limit {
		v.History, v.NextCursor = v.History[:limit], q.cursor(v.History[limit-1].ID)
	}
	if v.History == nil {
		v.History = []ledger.Event{}
	}
	return v, nil
}

// StoredEntity is an entity as a DocStore keeps it: its kind and its
// document, not decoded.
type StoredEntity struct {
	Kind ledger.EntityKind
	Doc  json.RawMessage
}

// ShowStored is Show without history, answered by a DocStore with the
// stored document. ok is false when the store is no DocStore: then call
// Show. A cold `dont show` spends more on encoding/json's first decode
// and encode of an entity than on reading it (bench/results/report.md,
// "CLI cold start").
func (s *Ledger) ShowStored(ctx context.Context, id string) (v StoredEntity, ok bool, err error) {
	docs, ok := s.Store.(store.DocStore)
	if !ok || s.inBacklog() { // during a backlog Show settles the entity's spawn first
		return v, false, nil
	}
	if err := entityID(id); err != nil {
		return v, true, err
	}
	doc, err := docs.EntityDoc(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return v, true, errs.E(errs.NotFound, "no such entity "+id).On(id)
	}
	if err != nil {
		return v, true, storeErr(err)
	}
	return StoredEntity{Kind: ledger.EntityKind(ids.Kind(id)), Doc: doc}, true, nil
}

// EntityList is what List returns (keys in the order the envelope has
// always carried them). NextCursor names the next page; it is absent on
// the last.
type EntityList struct {
	Count      int             `json:"count"`
	Entities   []ledger.Entity `json:"entities"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// List returns every entity, optionally of one status, page by page.
func (s *Ledger) List(ctx context.Context, status string) (EntityList, error) {
	return walk(func(p Page) (EntityList, error) { return s.ListPage(ctx, status, p) },
		func(l EntityList) string { return l.NextCursor },
		func(all *EntityList, l EntityList) {
			all.Entities = append(all.Entities, l.Entities...)
			all.Count, all.NextCursor = len(all.Entities), l.NextCursor
		})
}

// ListPage returns one page of entities, optionally of one status, in id
// order (docs/design.md, "Paginated reads").
func (s *Ledger) ListPage(ctx context.Context, status string, p Page) (EntityList, error) {
	var res EntityList
	if status != "" && !ledger.Status(status).Valid() {
		return res, errs.E(errs.InvalidArgument, "unknown status "+status).
			Unmet("status is one of unverified, doubted, verified, locked, ignored, stale")
	}
	q := pageQuery{project: s.Project, query: "list\x00status=" + status}
	limit, after, err := q.open(p, "list", entityKey)
	if err != nil {
		return res, err
	}
	list, err := s.Store.ListEntities(ctx, store.EntityFilter{Status: ledger.Status(status), Indexed: true, After: after, Limit: limit + 1})
	if err != nil {
		return res, storeErr(err)
	}
	list = store.PageOf(list, func(e ledger.Entity) string { return e.ID }, after, limit+1)
	if len(list) > limit {
		list, res.NextCursor = list[:limit], q.cursor(list[limit-1].ID)
	}
	res.Count, res.Entities = len(list), list
	return res, nil
}

// walk reads every page of a listing: the first, then merge adds each
// next one (and takes its next cursor, which next reads).
func walk[L any](page func(Page) (L, error), next func(L) string, merge func(all *L, l L)) (L, error) {
	all, err := page(Page{Limit: MaxPageLimit})
	for err == nil && next(all) != "" {
		var l L
		if l, err = page(Page{Limit: MaxPageLimit, Cursor: next(all)}); err == nil {
			merge(&all, l)
		}
	}
	return all, err
}

// entityID refuses an id that is not an entity's.
func entityID(id string) error {
	if k := ids.Kind(id); k != ids.Claim && k != ids.Term {
		return errs.E(errs.InvalidID, "not an entity id: "+quoteID(id)).Unmet("ids look like claim:<ULID> or term:<ULID>")
	}
	return nil
}

func (s *core) entity(ctx context.Context, id string) (ledger.Entity, error) {
	if err := entityID(id); err != nil {
		return ledger.Entity{}, err
	}
	e, err := s.Store.GetEntity(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return e, errs.E(errs.NotFound, "no such entity "+id).On(id)
	}
	if err != nil {
		return e, storeErr(err)
	}
	return e, nil
}

func (s *core) event(kind ledger.EventKind, entityID string, now time.Time) ledger.Event {
	return ledger.Event{ID: s.newID(ids.Event, now), Kind: kind, EntityID: entityID, Author: s.Author, At: now}
}

// storeErr turns a store failure into the store-error envelope, keeping
// errors that already explain themselves.
func storeErr(err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return errs.E(errs.Interrupted, "interrupted; nothing was written").Wrap(err)
	}
	return errs.E(errs.StoreError, "the store failed: "+err.Error()).Wrap(err)
}

func quoteID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return "\"" + id + "\""
}
