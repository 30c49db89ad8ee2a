package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/errs"
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
	register(&Tool{Name: "conclude", Summary: "Record a new claim (status unverified).",
		Params: []Param{
			{Name: "statement", Type: String, Required: true, Positional: true, Description: "the claim"},
			{Name: "atom", Type: Strings, Description: "an atomic sub-claim (repeatable)"},
			{Name: "ref", Type: Strings, Description: "a reference URI (repeatable)"},
			{Name: "confidence", Type: Number, Description: "0..1"},
			{Name: "depends_on", Type: Strings, Description: "an entity this claim depends on (repeatable)"},
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.Conclude(ctx, service.ConcludeInput{Statement: a.Str("statement"), Atoms: a.Strs("atom"),
				Refs: a.Strs("ref"), Confidence: a.Float("confidence"), DependsOn: a.Strs("depends_on")})
		}})
	register(&Tool{Name: "define", Summary: "Define a term by CURIE.",
		Params: []Param{
			{Name: "curie", Type: String, Required: true, Positional: true, Description: "prefix:local"},
			{Name: "doc", Type: String, Required: true, Description: "the definition"},
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.Define(ctx, a.Str("curie"), a.Str("doc"))
		}})
	// The tool names are the CLI verbs: `dont trust` = doubt it; `dont dismiss` (the doubt) = verify it.
	register(transition(ledger.Doubt, "Doubt an entity with a specific reason (or resolve a spawn as not holding).",
		reasonParam, requestIDParam))
	register(transition(ledger.Verify, "Verify an entity with evidence URIs (or resolve a spawn as holding).",
		Param{Name: "evidence", Type: Strings, Required: true, Description: "a URI or CURIE (repeatable); never fetched"}, requestIDParam))
	register(transition(ledger.Lock, "Lock a verified entity (final).",
		Param{Name: "reason", Type: String, Description: "why it is final"}))
	register(transition(ledger.Ignore, "Set an entity aside (terminal until reopened).", reasonParam))
	register(transition(ledger.Reopen, "Return an entity to unverified.", reasonParam))
	register(&Tool{Name: "show", Summary: "Show one entity, or re-read a spawn request by its id.", Annotations: Annotations{ReadOnly: true},
		Params: []Param{
			{Name: "id", Type: String, Required: true, Positional: true, Description: "entity id (claim:… or term:…), or spawn:… for the spawn_request as issued"},
			{Name: "history", Type: Boolean, Description: "include its events"},
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.Show(ctx, a.Str("id"), a.Bool("history"))
		}})
	register(&Tool{Name: "list", Summary: "List entities.", Annotations: Annotations{ReadOnly: true},
		Params: []Param{{Name: "status", Type: String, Enum: statusNames(), Description: "only this status"}},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.List(ctx, a.Str("status"))
		}})
	register(spawner(spawn.Assume, "Ask a clean-context subagent to verify an entity independently."))
	register(spawner(spawn.Overlook, "Ask a subagent to assume the entity is wrong and explain why (premortem)."))
	register(&Tool{Name: "guess", Summary: "Ask for several diverse candidate answers to a question.",
		Params: []Param{
			{Name: "question", Type: String, Required: true, Positional: true, Description: "the question"},
			{Name: "n", Type: Integer, Default: 3, Description: "number of candidates (1..20)"},
			{Name: "temperature", Type: Number, Description: "sampling temperature (0..2)"},
			modeParam,
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.RequestSpawn(ctx, service.SpawnInput{Kind: spawn.Guess, Question: a.Str("question"),
				N: a.Int("n"), Temperature: a.Float("temperature"), Mode: spawn.Mode(a.Str("mode"))})
		}})
	register(&Tool{Name: "answer", Summary: "Resolve a guess spawn with candidate answers.",
		Params: []Param{
			{Name: "request_id", Type: String, Required: true, Positional: true, Description: "the guess spawn (spawn:…)"},
			{Name: "candidate", Type: Strings, Required: true, Description: "a candidate answer (repeatable)"},
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.Answer(ctx, a.Str("request_id"), a.Strs("candidate"))
		}})
	register(&Tool{Name: "spawns", Summary: "List spawn requests: --pending, --timed-out or --all.", Annotations: Annotations{ReadOnly: true},
		Params: []Param{
			{Name: "pending", Type: Boolean, Description: "active, not expired, oldest first"},
			{Name: "timed_out", Type: Boolean, Description: "expired and not re-assumed since"},
			{Name: "all", Type: Boolean, Description: "the full history (default)"},
		},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			n, view := 0, service.ViewAll
			for _, v := range []struct {
				flag, view string
			}{{"pending", service.ViewPending}, {"timed_out", service.ViewTimedOut}, {"all", service.ViewAll}} {
				if a.Bool(v.flag) {
					n, view = n+1, v.view
				}
			}
			if n > 1 {
				return service.Result{}, errs.E(errs.Usage, "spawns: choose one of --pending, --timed-out, --all",
					errs.Step{Command: "dont spawns --pending", Description: "one view at a time"})
			}
			return s.Spawns(ctx, view)
		}})
	register(&Tool{Name: "sweep", Summary: "Resolve expired pending spawns by timeout now.",
		Params: []Param{{Name: "limit", Type: Integer, Default: 1000, Description: "at most this many"}},
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.RunSweep(ctx, a.Int("limit"))
		}})
}

func transition(action ledger.Action, summary string, params ...Param) *Tool {
	return &Tool{Name: string(action), Summary: summary, Params: append([]Param{entityParam}, params...),
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.Transition(ctx, service.TransitionInput{Action: action, EntityID: a.Str("id"),
				Reason: a.Str("reason"), Evidence: a.Strs("evidence"), RequestID: a.Str("request_id")})
		}}
}

func spawner(kind spawn.Kind, summary string) *Tool {
	return &Tool{Name: string(kind), Summary: summary, Params: []Param{entityParam, modeParam}, Exclusive: kind != spawn.Guess,
		run: func(ctx context.Context, s *service.Service, a Args) (service.Result, error) {
			return s.RequestSpawn(ctx, service.SpawnInput{Kind: kind, EntityID: a.Str("id"), Mode: spawn.Mode(a.Str("mode"))})
		}}
}

func statusNames() []string {
	out := make([]string, len(ledger.Statuses))
	for i, s := range ledger.Statuses {
		out[i] = string(s)
	}
	return out
}
