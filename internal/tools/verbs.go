package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
)

// Parameters shared by several verbs.
var (
	entityParam    = Param{Name: "id", Type: String, Required: true, Positional: true, Description: "entity id (claim:… or term:…)"}
	requestIDParam = Param{Name: "request_id", Type: String, Env: "DONT_REQUEST_ID", Description: "spawn request id this call resolves (spawn:…)"}
	reasonParam    = Param{Name: "reason", Type: String, Required: true, Description: "a specific reason (hedges are refused)"}
	modeParam      = Param{Name: "mode", Type: String, Enum: []string{string(spawn.ModeHarness), string(spawn.ModeDirect)}, Internal: true, Description: "harness or direct; front ends detect it"}
)

func init() {
	register("conclude", func() *Tool {
		return &Tool{Name: "conclude", Summary: "Record a new claim (status unverified).",
			Params: []Param{
				{Name: "statement", Type: String, Required: true, Positional: true, Description: "the claim"},
				{Name: "atom", Type: Strings, Description: "an atomic sub-claim (repeatable)"},
				{Name: "ref", Type: Strings, Description: "a reference URI (repeatable)"},
				{Name: "confidence", Type: Number, Description: "0..1"},
				{Name: "depends_on", Type: Strings, Description: "an entity this claim depends on (repeatable)"},
			},
			sweep: always, answer: presentConcluded,
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return concluded(s.Ledger.Conclude(ctx, service.ConcludeInput{Statement: a.Str("statement"), Atoms: a.Strs("atom"),
					Refs: a.Strs("ref"), Confidence: a.Float("confidence"), DependsOn: a.Strs("depends_on"), Key: o.Key}))
			}}
	})
	register("define", func() *Tool {
		return &Tool{Name: "define", Summary: "Define a term by CURIE.",
			Params: []Param{
				{Name: "curie", Type: String, Required: true, Positional: true, Description: "prefix:local"},
				{Name: "doc", Type: String, Required: true, Description: "the definition"},
			},
			sweep: always, answer: presentResult,
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				v, err := s.Ledger.Define(ctx, a.Str("curie"), a.Str("doc"), o.Key)
				return entity(v, nil, err)
			}}
	})
	// The tool names are the CLI verbs: `dont trust` = doubt it; `dont dismiss` (the doubt) = verify it.
	register(string(ledger.Doubt), func() *Tool {
		return transition(ledger.Doubt, "Doubt an entity with a specific reason (dont trust = doubt it; or resolve a spawn as not holding).",
			reasonParam, requestIDParam)
	})
	register(string(ledger.Verify), func() *Tool {
		return transition(ledger.Verify, "Verify an entity with evidence URIs (dont dismiss the doubt = verify it; or resolve a spawn as holding).",
			Param{Name: "evidence", Type: Strings, Required: true, Description: "a URI or CURIE (repeatable); never fetched"}, requestIDParam)
	})
	register(string(ledger.Lock), func() *Tool {
		return transition(ledger.Lock, "Lock a verified entity (final).",
			Param{Name: "reason", Type: String, Description: "why it is final"})
	})
	register(string(ledger.Ignore), func() *Tool {
		return transition(ledger.Ignore, "Set an entity aside (terminal until reopened).", reasonParam)
	})
	register(string(ledger.Reopen), func() *Tool {
		return transition(ledger.Reopen, "Return an entity to unverified.", reasonParam)
	})
	register("show", func() *Tool {
		return &Tool{Name: "show", Summary: "Show one entity, or re-read a spawn request by its id.", Annotations: Annotations{ReadOnly: true},
			Params: []Param{
				{Name: "id", Type: String, Required: true, Positional: true, Description: "entity id (claim:… or term:…), or spawn:… for the spawn_request as issued"},
				{Name: "history", Type: Boolean, Description: "include its events, a page at a time over the API (--limit, --cursor)"},
				limitParam, cursorParam,
			},
			check: func(a Args) error {
				if !a.Bool("history") && (a["limit"] != nil || a["cursor"] != nil) {
					return errs.E(errs.Usage, "show: `limit` and `cursor` page the history; add `history`",
						errs.Step{Command: "dont show <id> --history --limit 100", Description: "page through the history"})
				}
				return nil
			},
			sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				if ids.Kind(a.Str("id")) == ids.Spawn {
					return issued(s.Spawns.Show(ctx, a.Str("id")))
				}
				if !a.Bool("history") {
					if v, ok, err := s.Ledger.ShowStored(ctx, a.Str("id")); ok {
						return Output{Kind: string(v.Kind), Data: v.Doc}, err
					}
				}
				v, err := s.Ledger.ShowPage(ctx, a.Str("id"), a.Bool("history"), page(a))
				out, err := entity(v, nil, err)
				out.Hints = moreHint("dont show "+a.Str("id")+" --history"+limitFlag(a), v.NextCursor)
				return out, err
			}}
	})
	register("list", func() *Tool {
		return &Tool{Name: "list", Summary: "List entities, in pages by id (the CLI reads every page unless given --limit or --cursor).", Annotations: Annotations{ReadOnly: true},
			Params: []Param{{Name: "status", Type: String, Enum: statusNames(), Description: "only this status"}, limitParam, cursorParam},
			sweep:  always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				l, err := s.Ledger.ListPage(ctx, a.Str("status"), page(a))
				out, err := data[service.EntityList](envelope.KindList)(l, err)
				argv := "dont list"
				if st := a.Str("status"); st != "" {
					argv += " --status " + st
				}
				out.Hints = moreHint(argv+limitFlag(a), l.NextCursor)
				return out, err
			}}
	})
	register(string(spawn.Assume), func() *Tool {
		return spawner(spawn.Assume, "Ask a clean-context subagent to verify an entity independently.")
	})
	register(string(spawn.Overlook), func() *Tool {
		return spawner(spawn.Overlook, "Ask a subagent to assume the entity is wrong and explain why (premortem).")
	})
	register("guess", func() *Tool {
		return &Tool{Name: "guess", Summary: "Ask for several diverse candidate answers to a question.",
			Params: []Param{
				{Name: "question", Type: String, Required: true, Positional: true, Description: "the question"},
				{Name: "n", Type: Integer, Default: 3, Description: "number of candidates (1..20)"},
				{Name: "temperature", Type: Number, Description: "sampling temperature (0..2)"},
				modeParam,
			},
			sweep: always,
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return spawned(s.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Guess, Question: a.Str("question"),
					N: a.Int("n"), Temperature: a.Float("temperature"), Mode: spawn.Mode(a.Str("mode")), ResumeSince: o.ResumeSince}))
			}}
	})
	register("answer", func() *Tool {
		return &Tool{Name: "answer", Summary: "Resolve a guess spawn with candidate answers.",
			Params: []Param{
				{Name: "request_id", Type: String, Required: true, Positional: true, Description: "the guess spawn (spawn:…)"},
				{Name: "candidate", Type: Strings, Required: true, Description: "a candidate answer (repeatable)"},
			},
			// An answer resolves its own request before the sweep runs.
			sweep: func(Args) sweepOrder { return sweepAfter }, answer: presentResult,
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return answered(s.Spawns.Answer(ctx, service.GuessAnswer{RequestID: a.Str("request_id"), Candidates: a.Strs("candidate"), Key: o.Key}))
			}}
	})
	register("spawns", func() *Tool {
		return &Tool{Name: "spawns", Summary: "List spawn requests: --pending, --timed-out or --all.", Annotations: Annotations{ReadOnly: true},
			Params: []Param{
				{Name: "pending", Type: Boolean, Description: "active, not expired, oldest first"},
				{Name: "timed_out", Type: Boolean, Description: "expired and not re-assumed since"},
				{Name: "all", Type: Boolean, Description: "the full history (default)"},
				limitParam, cursorParam,
			},
			check: func(a Args) error {
				if _, n := spawnsView(a); n > 1 {
					return errs.E(errs.Usage, "spawns: choose one of `pending`, `timed_out`, `all`",
						errs.Step{Command: "dont spawns --pending", Description: "one view at a time"})
				}
				return nil
			},
			sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				view, _ := spawnsView(a)
				l, err := s.Spawns.ListPage(ctx, view, page(a))
				out, err := data[service.SpawnList](envelope.KindSpawns)(l, err)
				out.Hints = moreHint("dont spawns --"+view+limitFlag(a), l.NextCursor)
				return out, err
			}}
	})
	register("sweep", func() *Tool {
		return &Tool{Name: "sweep", Summary: "Resolve expired pending spawns by timeout now.",
			Params: []Param{{Name: "limit", Type: Integer, Default: 1000, Description: "at most this many"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				rep, err := s.Sweep(ctx, a.Int("limit"))
				return Output{Kind: envelope.KindSweep, Data: rep, Warnings: rep.Warnings}, err
			}}
	})
}

// spawnsView is the view the flags of `spawns` ask for, and how many
// views they name.
func spawnsView(a Args) (view string, n int) {
	view = service.ViewAll
	for _, v := range []struct {
		flag, view string
	}{{"pending", service.ViewPending}, {"timed_out", service.ViewTimedOut}, {"all", service.ViewAll}} {
		if a.Bool(v.flag) {
			n, view = n+1, v.view
		}
	}
	return view, n
}

func transition(action ledger.Action, summary string, params ...Param) *Tool {
	return &Tool{Name: string(action), Summary: summary, Params: append([]Param{entityParam}, params...),
		sweep: afterCallback, answer: presentResult,
		runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
			in := service.TransitionInput{Action: action, EntityID: a.Str("id"),
				Reason: a.Str("reason"), Evidence: a.Strs("evidence"), RequestID: a.Str("request_id"), Key: o.Key}
			if in.RequestID != "" {
				return entity(s.Spawns.Resolve(ctx, in)) // a callback: where a spawn is resolved
			}
			return entity(s.Ledger.Transition(ctx, in))
		}}
}

func spawner(kind spawn.Kind, summary string) *Tool {
	return &Tool{Name: string(kind), Summary: summary, Params: []Param{entityParam, modeParam}, Exclusive: kind != spawn.Guess,
		sweep: always,
		runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
			return spawned(s.Spawns.Request(ctx, service.SpawnInput{Kind: kind, EntityID: a.Str("id"), Mode: spawn.Mode(a.Str("mode")), Key: o.Key}))
		}}
}

func statusNames() []string {
	out := make([]string, len(ledger.Statuses))
	for i, s := range ledger.Statuses {
		out[i] = string(s)
	}
	return out
}
