package service_test

// Direct mode, driven against local stand-ins that speak the OpenAI
// chat-completions and Anthropic Messages wire formats with recorded
// responses (internal/llm/testdata).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/llm"
	"github.com/dont-cli/dont/internal/llm/llmtest"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/tools"
)

// withProvider configures e's service with a real llm client pointed at a
// stand-in server.
func (e *env) withProvider(provider string, srv *llmtest.Server) {
	e.t.Helper()
	p, err := llm.New(llm.Config{Provider: provider, BaseURL: srv.URL, Model: "test-model", APIKey: "sk-test-key", MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc.Provider = p
}

func (e *env) direct(kind spawn.Kind, id string) (tools.Output, error) {
	return spawnCall(ctx, e.svc, service.SpawnInput{Kind: kind, EntityID: id, Mode: spawn.ModeDirect})
}

// eventShape is an event as the protocol sees it, without ids and times.
func eventShape(ev ledger.Event) string {
	s := fmt.Sprintf("%s %s->%s", ev.Kind, ev.From, ev.To)
	if ev.Outcome != "" {
		s += " " + ev.Outcome
	}
	if ev.RequestID != "" {
		s += " +request"
	}
	return s
}

func (e *env) history(id string) []ledger.Event {
	e.t.Helper()
	evs, err := e.store.Events(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// spawnEvents is the part of an entity's history from its last spawn on.
func spawnEvents(evs []ledger.Event) []ledger.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == ledger.EvSpawnRequested {
			return evs[i:]
		}
	}
	return nil
}

func (e *env) spawnRecord(id string) spawn.Spawn {
	e.t.Helper()
	sp, err := e.store.GetSpawn(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return sp
}

func (e *env) storedPrompt(requestID string) string {
	e.t.Helper()
	var req spawn.Request
	if err := json.Unmarshal(e.spawnRecord(requestID).Request, &req); err != nil {
		e.t.Fatal(err)
	}
	return req.Context.Prompt
}

func TestDirectModeCallsTheProviderWithTheSpawnPromptAndResolvesThroughTheCallbackPath(t *testing.T) {
	for _, tc := range []struct {
		provider, fixture, path string
		kind                    spawn.Kind
		action                  ledger.EventKind
		want                    ledger.Status
	}{
		{"openai", "openai/judge_dismiss.json", "/v1/chat/completions", spawn.Assume, ledger.EvDismissed, ledger.Verified},
		{"openai", "openai/judge_trust.json", "/v1/chat/completions", spawn.Overlook, ledger.EvTrusted, ledger.Doubted},
		{"anthropic", "anthropic/judge_tool_use.json", "/v1/messages", spawn.Assume, ledger.EvDismissed, ledger.Verified},
		{"anthropic", "anthropic/judge_tool_use.json", "/v1/messages", spawn.Overlook, ledger.EvDismissed, ledger.Verified},
	} {
		t.Run(tc.provider+"/"+string(tc.kind)+"/"+string(tc.action), func(t *testing.T) {
			e := newEnv(t)
			srv := llmtest.New(t, llmtest.Reply(t, 200, tc.fixture))
			e.withProvider(tc.provider, srv)

			// The same entity history, once through a harness subagent's callback ...
			harnessID := e.verified("go 1.22 gives each loop iteration its own variable")
			req := e.spawnReq(tc.kind, harnessID)
			action := ledger.Verify
			if tc.action == ledger.EvTrusted {
				action = ledger.Doubt
			}
			e.transition(action, harnessID, req.RequestID)

			// ... and once in direct mode.
			id := e.verified("go 1.22 gives each loop iteration its own variable")
			res, err := e.direct(tc.kind, id)
			if err != nil {
				t.Fatalf("direct %s: %v", tc.kind, err)
			}
			if res.Kind == envelope.KindSpawnRequest {
				t.Fatal("direct mode emitted a spawn_request")
			}
			view := res.Data.(service.EntityView)
			if view.Status != tc.want || view.Resolution == nil || view.Resolution.Outcome != spawn.CallbackApplied || !view.Resolution.Applied {
				t.Fatalf("result %+v, want %s via callback-applied", view, tc.want)
			}

			// On the wire: one request, carrying the spawn request's own prompt.
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Path != tc.path {
				t.Fatalf("provider saw %d requests (%v)", len(reqs), reqs)
			}
			sp := e.spawnRecord(view.Resolution.RequestID)
			if got, want := reqs[0].UserPrompt(t), e.storedPrompt(sp.ID); got != want {
				t.Fatalf("prompt sent:\n%s\nspawn request's prompt:\n%s", got, want)
			}
			if sp.Mode != spawn.ModeDirect || sp.Outcome != spawn.CallbackApplied {
				t.Fatalf("spawn record %+v", sp)
			}

			// The events are harness mode's, each marked direct.
			direct, harness := spawnEvents(e.history(id)), spawnEvents(e.history(harnessID))
			if len(direct) != len(harness) || len(direct) != 3 {
				t.Fatalf("direct events %v, harness events %v", direct, harness)
			}
			for i := range direct {
				if eventShape(direct[i]) != eventShape(harness[i]) {
					t.Errorf("event %d: direct %q, harness %q", i, eventShape(direct[i]), eventShape(harness[i]))
				}
				if !direct[i].Direct || harness[i].Direct {
					t.Errorf("event %d (%s): direct marker %v in direct mode, %v in harness mode", i, direct[i].Kind, direct[i].Direct, harness[i].Direct)
				}
			}
			if direct[1].Kind != tc.action || direct[1].RequestID != sp.ID {
				t.Fatalf("terminal event %+v", direct[1])
			}
			if tc.action == ledger.EvDismissed && len(direct[1].Evidence) == 0 {
				t.Fatal("the verdict's evidence was not recorded")
			}
		})
	}
}

func TestDirectGuessSendsTheExactNAndTemperatureAndResolvesThroughAnswer(t *testing.T) {
	for _, tc := range []struct {
		provider, fixture string
		requests          int
	}{
		{"openai", "openai/candidates_vllm_n3.json", 1},   // one request with n=3
		{"anthropic", "anthropic/candidate_text.json", 3}, // no n in the Messages API: three requests
	} {
		t.Run(tc.provider, func(t *testing.T) {
			e := newEnv(t)
			srv := llmtest.New(t, llmtest.Reply(t, 200, tc.fixture))
			e.withProvider(tc.provider, srv)
			temp := 0.7
			question := "Which pure-Go SQLite driver does dont use?"
			res, err := spawnCall(ctx, e.svc, service.SpawnInput{Kind: spawn.Guess, Question: question, N: 3, Temperature: &temp, Mode: spawn.ModeDirect})
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			for _, r := range reqs {
				body := r.JSON(t)
				if body["temperature"] != 0.7 {
					t.Fatalf("temperature on the wire = %v, want 0.7", body["temperature"])
				}
				if tc.provider == "openai" && body["n"] != 3.0 {
					t.Fatalf("n on the wire = %v, want 3", body["n"])
				}
				if r.UserPrompt(t) != question {
					t.Fatalf("prompt on the wire = %q", r.UserPrompt(t))
				}
			}
			data := res.Data.(service.Answered)
			claim := *data.Claim
			if res.Kind != "answer" || claim.Statement != "modernc.org/sqlite" || claim.Status != ledger.Unverified {
				t.Fatalf("answer %s %+v", res.Kind, claim)
			}
			rid := data.RequestID
			sp := e.spawnRecord(rid)
			if sp.Mode != spawn.ModeDirect || sp.Outcome != spawn.CallbackApplied || sp.N != 3 || *sp.Temperature != 0.7 {
				t.Fatalf("spawn record %+v", sp)
			}
			for _, ev := range e.history(claim.ID) {
				if !ev.Direct || ev.RequestID != rid {
					t.Fatalf("event %s not marked direct for %s", ev.Kind, rid)
				}
			}
		})
	}
}

func TestDirectGuessWithoutTemperatureSendsAndRecordsTheDefault(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.New(t, llmtest.Reply(t, 200, "openai/candidates_vllm_n3.json"))
	e.withProvider("openai", srv)
	res, err := spawnCall(ctx, e.svc, service.SpawnInput{Kind: spawn.Guess, Question: "q?", N: 3, Mode: spawn.ModeDirect})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].JSON(t)["temperature"]; got != service.DefaultGuessTemperature {
		t.Fatalf("temperature on the wire = %v", got)
	}
	sp := e.spawnRecord(res.Data.(service.Answered).RequestID)
	if sp.Temperature == nil || *sp.Temperature != service.DefaultGuessTemperature {
		t.Fatalf("the spawn does not record the temperature sent: %+v", sp)
	}
}

// A provider error, a timeout or an unusable verdict changes nothing: the
// spawn is closed as failed with its own event, the entity keeps its
// pre-spawn status, and the error explains itself.
func TestDirectModeProviderFailureChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, provider string
		handler        func(t *testing.T) llmtest.Handler
		code           errs.Code
	}{
		{"openai 503", "openai", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 503, "openai/error_503.json") }, service.ProviderError},
		{"openai 401", "openai", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 401, "openai/error_401_echo.json") }, service.ProviderError},
		{"anthropic 429", "anthropic", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 429, "anthropic/error_429.json") }, service.ProviderError},
		{"openai malformed", "openai", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 200, "openai/judge_malformed.json") }, service.ProviderUnusable},
		{"openai refusal", "openai", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 200, "openai/judge_refusal.json") }, service.ProviderUnusable},
		{"openai hedge", "openai", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 200, "openai/judge_trust_hedge.json") }, service.ProviderUnusable},
		{"anthropic bad evidence", "anthropic", func(t *testing.T) llmtest.Handler {
			return llmtest.Reply(t, 200, "anthropic/judge_dismiss_bad_evidence.json")
		}, service.ProviderUnusable},
		{"anthropic text only", "anthropic", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 200, "anthropic/judge_text_only.json") }, service.ProviderUnusable},
		{"timeout", "openai", func(*testing.T) llmtest.Handler { return llmtest.Hang }, service.ProviderTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One store per case: each status below gets a claim of its own.
			e := newEnv(t)
			srv := llmtest.New(t, tc.handler(t))
			for _, pre := range []ledger.Status{ledger.Verified, ledger.Doubted, ledger.Unverified} {
				// Only the hanging provider should ever reach the timeout; the
				// others get a generous one so a loaded machine cannot turn
				// their answer into a timeout.
				timeout := 5 * time.Second
				if tc.code == service.ProviderTimeout {
					timeout = 100 * time.Millisecond
				}
				p, err := llm.New(llm.Config{Provider: tc.provider, BaseURL: srv.URL, Model: "m", APIKey: "sk-test-key", MaxRetries: -1, Timeout: timeout})
				if err != nil {
					t.Fatal(err)
				}
				e.svc.Provider = p
				id := e.conclude("water boils at 100 C at sea level")
				switch pre {
				case ledger.Verified:
					e.transition(ledger.Verify, id, "")
				case ledger.Doubted:
					e.transition(ledger.Doubt, id, "")
				}
				before := e.history(id)
				res, err := e.direct(spawn.Assume, id)
				if !errs.Is(err, tc.code) {
					t.Fatalf("from %s: err %v, want %s", pre, err, tc.code)
				}
				if ee := present.Explain(err); present.Exit(err) != present.ExitState || len(ee.Remediation) == 0 || ee.EntityID != id {
					t.Fatalf("error %+v: exit %d", ee, present.Exit(err))
				}
				if res.Kind == envelope.KindSpawnRequest {
					t.Fatal("a failed direct call fell back to a spawn_request")
				}
				if st := e.status(id); st != pre {
					t.Fatalf("status %s after a failed direct call, want %s", st, pre)
				}
				after := e.history(id)
				added := after[len(before):]
				if len(added) != 2 || added[0].Kind != ledger.EvSpawnRequested || added[1].Kind != ledger.EvSpawnFailed {
					t.Fatalf("events added: %v", added)
				}
				failed := added[1]
				if !failed.Direct || failed.Outcome != string(spawn.Failed) || failed.Detail["code"] != string(tc.code) || failed.Detail["restored"] != true {
					t.Fatalf("spawn_failed event %+v", failed)
				}
				if ledger.Fold(after) != pre {
					t.Fatalf("events fold to %s, want %s", ledger.Fold(after), pre)
				}
				sp := e.spawnRecord(failed.RequestID)
				if sp.State != spawn.Resolved || sp.Outcome != spawn.Failed {
					t.Fatalf("spawn %+v, want resolved/failed", sp)
				}
				if ent, _ := e.store.GetEntity(ctx, id); ent.PendingSpawn != "" {
					t.Fatalf("entity still has pending spawn %s", ent.PendingSpawn)
				}
				// A new round is possible at once: nothing is left pending.
				e.spawnReq(spawn.Assume, id)
			}
		})
	}
}

func TestDirectGuessProviderFailureConcludesNothing(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.New(t, llmtest.Reply(t, 503, "openai/error_503.json"))
	e.withProvider("openai", srv)
	_, err := spawnCall(ctx, e.svc, service.SpawnInput{Kind: spawn.Guess, Question: "q?", N: 2, Mode: spawn.ModeDirect})
	if !errs.Is(err, service.ProviderError) {
		t.Fatalf("err %v", err)
	}
	if list, _ := e.store.ListEntities(ctx, store.EntityFilter{}); len(list) != 0 {
		t.Fatalf("a failed guess concluded %d entities", len(list))
	}
	sps, _ := e.store.ListSpawns(ctx, store.SpawnFilter{})
	if len(sps) != 1 || sps[0].Outcome != spawn.Failed {
		t.Fatalf("spawns %+v", sps)
	}
}

// reasoner is an in-process provider for cases the wire cannot produce.
type reasoner struct {
	t       *testing.T
	verdict spawn.Verdict
	refuse  bool
}

func (r reasoner) Name() string { return "fake" }
func (r reasoner) Judge(context.Context, string) (spawn.Verdict, error) {
	if r.refuse {
		r.t.Fatal("harness mode called the provider")
	}
	return r.verdict, nil
}
func (r reasoner) Candidates(context.Context, string, int, float64) ([]string, error) {
	if r.refuse {
		r.t.Fatal("harness mode called the provider")
	}
	return []string{"a"}, nil
}

func TestDirectVerdictTheLedgerRefusesIsUnusable(t *testing.T) {
	for _, v := range []spawn.Verdict{
		{Action: "trust", Reason: "not sure"},
		{Action: "dismiss"},
		{Action: "shrug"},
	} {
		e := newEnv(t)
		e.svc.Provider = reasoner{t: t, verdict: v}
		id := e.verified("water boils at 100 C at sea level")
		if _, err := e.direct(spawn.Assume, id); !errs.Is(err, service.ProviderUnusable) {
			t.Fatalf("verdict %+v: err %v", v, err)
		}
		if st := e.status(id); st != ledger.Verified {
			t.Fatalf("verdict %+v changed the status to %s", v, st)
		}
	}
}

func TestHarnessModeNeverCallsTheProvider(t *testing.T) {
	e := newEnv(t)
	e.svc.Provider = reasoner{t: t, refuse: true}
	id := e.conclude("water boils at 100 C at sea level")
	for _, in := range []service.SpawnInput{
		{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness},
		{Kind: spawn.Guess, Question: "q?", N: 3, Mode: spawn.ModeHarness},
		{Kind: spawn.Overlook, EntityID: e.conclude("another"), Mode: spawn.ModeHarness},
	} {
		res, err := spawnCall(ctx, e.svc, in)
		if err != nil || res.Kind != envelope.KindSpawnRequest {
			t.Fatalf("%s in harness mode: %s %v", in.Kind, res.Kind, err)
		}
	}
	// The same with a real client pointed at a stand-in that fails the test if called.
	e2 := newEnv(t)
	e2.withProvider("openai", llmtest.New(t, llmtest.Refuse(t)))
	if res, err := spawnCall(ctx, e2.svc, service.SpawnInput{Kind: spawn.Assume, EntityID: e2.conclude("x"), Mode: spawn.ModeHarness}); err != nil || res.Kind != envelope.KindSpawnRequest {
		t.Fatalf("harness assume: %s %v", res.Kind, err)
	}
}

func TestCancellingADirectCallClosesItsSpawnAsFailed(t *testing.T) {
	e := newEnv(t)
	arrived := make(chan struct{})
	srv := llmtest.New(t, func(w http.ResponseWriter, r *http.Request, i int) {
		close(arrived)
		llmtest.Hang(w, r, i)
	})
	e.withProvider("anthropic", srv)
	id := e.verified("water boils at 100 C at sea level")
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-arrived; cancel() }()
	_, err := spawnCall(cctx, e.svc, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeDirect})
	if !errs.Is(err, errs.Interrupted) {
		t.Fatalf("err %v, want interrupted", err)
	}
	if st := e.status(id); st != ledger.Verified {
		t.Fatalf("status %s after Ctrl-C, want verified", st)
	}
	if evs := e.events(id, ledger.EvSpawnFailed); len(evs) != 1 || evs[0].Detail["code"] != string(errs.Interrupted) {
		t.Fatalf("spawn_failed events %+v", evs)
	}
}

func TestDirectFailureAfterAnotherResolverLeavesItsResolution(t *testing.T) {
	// A callback that arrives (from elsewhere) while the provider is still
	// thinking wins; the provider's failure then changes nothing more.
	e := newEnv(t)
	id := e.verified("water boils at 100 C at sea level")
	srv := llmtest.New(t, func(w http.ResponseWriter, r *http.Request, i int) {
		ent, _ := e.store.GetEntity(ctx, id)
		if _, err := call(e.svc, string(ledger.Doubt), callbackArgs(ledger.Doubt, id, ent.PendingSpawn)); err != nil {
			t.Errorf("callback: %v", err)
		}
		llmtest.Reply(t, 503, "openai/error_503.json")(w, r, i)
	})
	e.withProvider("openai", srv)
	res, err := e.direct(spawn.Assume, id)
	if !errs.Is(err, service.ProviderError) {
		t.Fatalf("err %v", err)
	}
	if !hasWarning(res, "spawn-duplicate") {
		t.Fatalf("warnings %v, want the earlier resolution named", warningCodes(res))
	}
	if st := e.status(id); st != ledger.Doubted {
		t.Fatalf("status %s, want the callback's doubted", st)
	}
	if n := len(e.events(id, ledger.EvSpawnFailed)); n != 0 {
		t.Fatalf("%d spawn_failed events after another resolver won", n)
	}
}

func TestProviderErrorCodesExitThreeWithRemediation(t *testing.T) {
	for _, c := range []errs.Code{service.ProviderError, service.ProviderTimeout, service.ProviderUnusable} {
		e := present.Explain(errs.E(c, "x"))
		if present.Exit(e) != present.ExitState || len(e.Remediation) == 0 || present.Status(e) < 500 {
			t.Fatalf("%s: exit %d status %d remediation %v", c, present.Exit(e), present.Status(e), e.Remediation)
		}
	}
}
