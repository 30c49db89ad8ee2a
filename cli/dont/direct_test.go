package main

// Direct mode through the real binary, against local stand-ins that speak
// the OpenAI-compatible and Anthropic wire formats with recorded responses.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/llm/llmtest"
)

const testAPIKey = "sk-test-Q9xV2mLr8TzK4pWn6HbJ0cYa"

func providerEnv(provider string, srv *llmtest.Server) []string {
	return []string{"DONT_LLM_PROVIDER=" + provider, "DONT_LLM_BASE_URL=" + srv.URL, "DONT_LLM_MODEL=test-model", "DONT_LLM_API_KEY=" + testAPIKey}
}

// directProject is a project whose direct mode talks to srv.
func directProject(t *testing.T, provider string, srv *llmtest.Server) *testProject {
	return newProject(t, providerEnv(provider, srv)...)
}

func (p *testProject) history(id string) []map[string]any {
	p.t.Helper()
	var out []map[string]any
	for _, h := range p.ok("show", id, "--history").data()["history"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

func (p *testProject) setLLMConfig(lines string) {
	p.t.Helper()
	path := filepath.Join(p.dir, ".dont", "config.toml")
	if err := os.WriteFile(path, []byte("spawn_timeout = \"24h\"\n[llm]\n"+lines), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func TestDirectModeBypassesSpawnEnvelopeOnTheCLI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, fixture string }{
		{"openai", "openai/judge_dismiss.json"},
		{"anthropic", "anthropic/judge_tool_use.json"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply(t, 200, tc.fixture))
			p := directProject(t, tc.provider, srv)
			id := p.ok("conclude", "SQLite in WAL mode lets readers run alongside one writer").str("id")
			r := p.ok("assume", id, "--direct", "--json")
			if r.env["envelope_kind"] != "claim" || r.str("status") != "verified" || r.env["meta"].(map[string]any)["mode"] != "direct" {
				t.Fatalf("direct assume: %s", r.stdout)
			}
			res := r.data()["resolution"].(map[string]any)
			if res["outcome"] != "callback-applied" || res["applied"] != true {
				t.Fatalf("resolution %v", res)
			}
			// The provider got the spawn request's own prompt.
			rid := res["request_id"].(string)
			stored := p.ok("show", rid, "--json")
			prompt := stored.data()["context"].(map[string]any)["prompt"].(string)
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].UserPrompt(t) != prompt {
				t.Fatalf("provider saw %d requests; prompt %q, want %q", len(reqs), reqs[0].UserPrompt(t), prompt)
			}
			if stored.data()["mode"] != "direct" {
				t.Fatalf("stored request mode %v", stored.data()["mode"])
			}
			// The events are harness mode's, marked direct.
			var kinds []string
			for _, h := range p.history(id)[1:] {
				kinds = append(kinds, h["kind"].(string))
				if h["direct"] != true || h["request_id"] != rid {
					t.Fatalf("event not marked direct for %s: %v", rid, h)
				}
			}
			if strings.Join(kinds, " ") != "spawn_requested dismissed spawn_resolved" {
				t.Fatalf("events %v", kinds)
			}
		})
	}
}

func TestGuessCarriesCandidateCountAndTemperatureToTheProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, fixture string
		requests          int
	}{
		{"openai", "openai/candidates_vllm_n3.json", 1},
		{"anthropic", "anthropic/candidate_text.json", 3},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply(t, 200, tc.fixture))
			p := directProject(t, tc.provider, srv)
			r := p.ok("guess", "Which pure-Go SQLite driver does dont use?", "--n", "3", "--temperature", "0.7", "--direct", "--json")
			if r.env["envelope_kind"] != "answer" || r.data()["claim"].(map[string]any)["statement"] != "modernc.org/sqlite" {
				t.Fatalf("direct guess: %s", r.stdout)
			}
			reqs := srv.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			for _, req := range reqs {
				// Exact bytes on the wire, not just equal numbers.
				if !bytes.Contains(req.Body, []byte(`"temperature":0.7`)) {
					t.Fatalf("temperature not sent as 0.7: %s", req.Body)
				}
				if tc.provider == "openai" && !bytes.Contains(req.Body, []byte(`"n":3`)) {
					t.Fatalf("n not sent as 3: %s", req.Body)
				}
			}
		})
	}
}

func TestDirectProviderFailureExitsThreeAndChangesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		handler  func(t *testing.T) llmtest.Handler
		config   string
		code     string
		requests int
	}{
		{"503 after retries", func(t *testing.T) llmtest.Handler {
			return llmtest.Reply(t, 503, "openai/error_503.json", "Retry-After-Ms", "1")
		}, "max_retries = 2\n", "provider-error", 3},
		{"unusable verdict", func(t *testing.T) llmtest.Handler { return llmtest.Reply(t, 200, "openai/judge_trust_hedge.json") }, "", "provider-unusable", 1},
		{"timeout", func(*testing.T) llmtest.Handler { return llmtest.Hang }, "timeout = \"200ms\"\nmax_retries = -1\n", "provider-timeout", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.handler(t))
			p := directProject(t, "openai", srv)
			p.setLLMConfig(tc.config)
			id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
			p.ok("dismiss", id, "--evidence", "https://example.org/boiling")
			r := p.run("assume", id, "--direct", "--json")
			if r.exit != 3 || r.env["ok"] != false || r.data()["code"] != tc.code {
				t.Fatalf("exit %d: %s", r.exit, r.stdout)
			}
			if rem, _ := r.data()["remediation"].([]any); len(rem) < 2 {
				t.Fatalf("remediation %v", rem)
			}
			if n := len(srv.Requests()); n != tc.requests {
				t.Fatalf("%d provider requests, want %d", n, tc.requests)
			}
			if st := p.ok("show", id).str("status"); st != "verified" {
				t.Fatalf("status %s after a failed direct call", st)
			}
			hist := p.history(id)
			last := hist[len(hist)-1]
			if last["kind"] != "spawn_failed" || last["outcome"] != "failed" || last["direct"] != true {
				t.Fatalf("last event %v", last)
			}
			all := p.ok("spawns", "--all").data()["spawns"].([]any)
			if sp := all[0].(map[string]any); sp["outcome"] != "failed" || sp["state"] != "resolved" {
				t.Fatalf("spawn %v", sp)
			}
			if pending := p.ok("spawns", "--pending").data()["count"]; pending != 0.0 {
				t.Fatalf("%v pending spawns after a failed direct call", pending)
			}
		})
	}
}

func TestDirectModeNeverPrintsTheAPIKey(t *testing.T) {
	t.Parallel()
	body := bytes.ReplaceAll(llmtest.Fixture(t, "openai/error_401_echo.json"), []byte("{{API_KEY}}"), []byte(testAPIKey))
	srv := llmtest.New(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		w.Write(body)
	})
	p := directProject(t, "openai", srv)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	for _, args := range [][]string{{"assume", id, "--direct", "--json"}, {"guess", "q?", "--direct"}} {
		r := p.run(args...)
		if r.exit != 3 || r.data()["code"] != "provider-error" {
			t.Fatalf("%v: exit %d %s", args, r.exit, r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, testAPIKey) || strings.Contains(r.stdout+r.stderr, testAPIKey[8:]) {
			t.Fatalf("the API key leaked:\n%s\n%s", r.stdout, r.stderr)
		}
	}
	for _, h := range p.history(id) {
		if b, _ := json.Marshal(h); bytes.Contains(b, []byte(testAPIKey[8:])) {
			t.Fatalf("the API key reached the ledger: %s", b)
		}
	}
}

func TestHarnessModeNeverCallsTheConfiguredProvider(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Refuse(t))
	p := directProject(t, "openai", srv)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	for _, run := range []func() result{
		func() result { return p.ok("assume", id) }, // stdout is a pipe: harness
		func() result { return p.runEnv([]string{"DONT_HARNESS=1"}, "guess", "q?", "--json") },
	} {
		if r := run(); r.env["envelope_kind"] != "spawn_request" || r.env["meta"].(map[string]any)["mode"] != "harness" {
			t.Fatalf("harness mode: %s", r.stdout)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("harness mode sent %d provider requests", n)
	}
}

// Only spawn verbs in direct mode build a provider: a broken provider
// configuration cannot break any other command.
func TestOnlyDirectSpawnVerbsBuildTheProvider(t *testing.T) {
	t.Parallel()
	p := newProject(t, "DONT_LLM_PROVIDER=no-such-provider")
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	p.ok("list")
	p.ok("assume", id) // harness mode
	r := p.run("overlook", id, "--direct", "--json")
	if r.exit != 3 || r.data()["code"] != "config-invalid" {
		t.Fatalf("direct with a bad provider: exit %d %s", r.exit, r.stdout)
	}
	half := p.runEnv([]string{"DONT_LLM_PROVIDER=openai", "DONT_LLM_API_KEY=x"}, "guess", "q?", "--direct", "--json")
	if half.exit != 3 || half.data()["code"] != "config-missing" || !strings.Contains(half.str("message"), "DONT_LLM_MODEL") {
		t.Fatalf("direct without a model: exit %d %s", half.exit, half.stdout)
	}
}

func TestCtrlCCancelsTheProviderCallAndRestoresTheEntity(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := llmtest.New(t, func(w http.ResponseWriter, r *http.Request, i int) {
		arrived <- struct{}{}
		llmtest.Hang(w, r, i)
	})
	p := directProject(t, "anthropic", srv)
	id := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	p.ok("trust", id, "--reason", "ITS-90 puts it at 99.97 C at 1 atm")
	c := p.cmd("assume", id, "--direct", "--json")
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		t.Fatal("the provider call never arrived")
	}
	c.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		t.Fatal("Ctrl-C did not stop the provider call")
	}
	if c.ProcessState.ExitCode() != 130 {
		t.Fatalf("exit %d, want 130; %s", c.ProcessState.ExitCode(), out.String())
	}
	var env map[string]any
	if err := json.Unmarshal(out.Bytes(), &env); err != nil || env["data"].(map[string]any)["code"] != "interrupted" {
		t.Fatalf("stdout %q", out.String())
	}
	if st := p.ok("show", id).str("status"); st != "doubted" {
		t.Fatalf("status %s after Ctrl-C, want doubted restored", st)
	}
	if p.ok("spawns", "--pending").data()["count"] != 0.0 {
		t.Fatal("Ctrl-C left a pending spawn")
	}
}
