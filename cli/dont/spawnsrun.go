package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/client"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/runner"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
)

func (a *app) spawnsRun(ctx context.Context, f spawnsRunFlags) error {
	if f.watch && len(f.requestIDs) > 0 {
		return errs.E(errs.Usage, "spawns run: --watch runs every new pending spawn; give it or --request-id, not both",
			errs.Step{Command: "dont spawns run --watch --agent <name>", Description: "run every new pending spawn"},
			errs.Step{Command: "dont spawns run --request-id spawn:… --agent <name>", Description: "or the ones named"})
	}
	if f.maxParallel < 1 || f.heartbeat < 0 || f.extend < 0 || f.grace < 0 || f.poll < 0 || f.deadline < 0 {
		return errs.E(errs.Usage, "spawns run: --max-parallel must be at least 1 and durations must not be negative",
			errs.Step{Command: "dont spawns run --help", Description: "see the flags"})
	}
	var reqs []spawn.Request
	if !f.watch && len(f.requestIDs) == 0 {
		var err error
		if reqs, err = readRequests(a.stdin); err != nil {
			return err
		}
	}
	p, found := a.findProject()
	var cfg project.Config
	var untrusted []string
	if found {
		ls, err := a.loadSettings(p)
		if err != nil {
			return err
		}
		cfg, untrusted = ls.s.Config, ls.s.Untrusted
	}
	profile, err := agentProfile(cfg, untrusted, f.agent)
	if err != nil {
		return err
	}
	r := &runner.Runner{Profile: profile, Environ: os.Environ(), MaxParallel: f.maxParallel, Deadline: f.deadline,
		Heartbeat: f.heartbeat, Extend: f.extend, Grace: f.grace, Poll: f.poll, Output: a.stderr, CheckDir: agentDirCheck}
	if found {
		r.ProjectDir = p.Root
	}
	if f.workdir != "" {
		if r.Dir, err = agentWorkdir(f.workdir); err != nil {
			return err
		}
	} else if err := agentDirCheck(os.TempDir()); err != nil {
		return err // each agent's folder would be made there: say so before any runs
	}
	if ep := a.remote(); ep != "" {
		r.Endpoint = ep
		r.Dont = remoteDont{c: &client.Client{Endpoint: ep, Token: a.storedToken(ep), Header: capsHeader()}}
	} else {
		if !found {
			_, err := a.locateProject()
			return err
		}
		stop, err := a.embeddedRunner(ctx, p, cfg, r)
		if err != nil {
			return err
		}
		defer stop()
	}
	for _, id := range f.requestIDs {
		req, err := r.Fetch(ctx, id)
		if err != nil {
			return a.runnerFailed("cannot read "+id, err)
		}
		reqs = append(reqs, req)
	}
	var rep runner.Report
	if f.watch {
		if rep, err = r.Watch(ctx); err != nil {
			return a.runnerFailed("cannot list the pending spawns", err)
		}
	} else {
		rep = r.RunAll(ctx, reqs)
	}
	a.emit(tools.Output{Kind: envelope.KindSpawnRun, Data: rep, Hints: runHints(rep)})
	switch {
	case ctx.Err() != nil:
		a.exit = 130 // main makes it 143 for SIGTERM
	case !rep.OK():
		a.exit = 1
	}
	return nil
}

// agentWorkdir checks --workdir: a folder that exists, from which no
// dont store is found by walking upwards — not the project, nor a folder
// under it, where an agent's own dont, its variables dropped, would open
// the owner's store as the owner.
func agentWorkdir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(abs); err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return "", errs.E(errs.InvalidArgument, "spawns run: --workdir "+quoteArg(dir)+": "+err.Error(),
			errs.Step{Command: "dont spawns run --agent <name>", Description: "leave --workdir out: each agent gets a fresh private folder"}).Unmet("--workdir is an existing folder")
	}
	if err := agentDirCheck(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// agentDirCheck refuses a folder at or under a dont project (a .dont/
// with its store found by walking upwards from it).
func agentDirCheck(dir string) error {
	p, err := project.Find(dir, "")
	if err != nil {
		return nil
	}
	return errs.E(errs.InvalidArgument, "spawns run: the agents' working directory "+dir+" is at or under the dont project "+p.Root+": an agent's own dont would find its store there",
		errs.Step{Command: "dont spawns run --agent <name>", Description: "leave --workdir out: each agent gets a fresh private folder"},
		errs.Step{Command: "dont spawns run --agent <name> --workdir $(mktemp -d)", Description: "or give a folder outside every project"}).Unmet("the working directory is outside every dont project")
}

// runnerFailed shows a refusal the runner met as the server presented it
// (remediation included); any other failure as the store error it is.
func (a *app) runnerFailed(what string, err error) error {
	var refused *runner.RefusedError
	if errors.As(err, &refused) {
		a.print(refused.Env)
		a.exit = present.Exit(envelope.ErrorOf(refused.Env))
		return nil
	}
	return errs.E(errs.StoreError, "spawns run: "+what+": "+err.Error()).Wrap(err)
}

// runHints say where to look next for each run that did not resolve, and
// why the runner cancelled its spawn.
func runHints(rep runner.Report) []string {
	hints := []string{}
	for _, run := range rep.Runs {
		if run.Outcome != runner.Resolved && run.RequestID != "" {
			h := "dont show " + run.RequestID + "  # " + string(run.Outcome)
			if run.Cancelled != "" {
				h += "; cancelled: " + string(run.Cancelled)
			}
			hints = append(hints, h)
		}
	}
	return hints
}

// findProject finds the project folder, if there is one (a runner against
// an endpoint may have none: its profiles are then the built-in ones).
func (a *app) findProject() (project.Project, bool) {
	p, err := a.locateProject()
	return p, err == nil
}

// agentProfile picks the profile: --agent names a configured one or a
// built-in; without it, the only one configured. Configured profiles are
// the person's (their config, or a workspace config they trusted: no
// config file may use a built-in's name); one the workspace defines but
// the person has not trusted is refused, never run (untrusted lists
// them, as "agents.<name>").
func agentProfile(cfg project.Config, untrusted []string, name string) (runner.Profile, error) {
	var waiting []string
	for _, k := range untrusted {
		if n, ok := strings.CutPrefix(k, settings.KeyAgents+"."); ok {
			waiting = append(waiting, n)
		}
	}
	if name == "" && len(cfg.Agents) == 0 && len(waiting) > 0 || name != "" && slices.Contains(waiting, name) {
		return runner.Profile{}, errs.E(settings.CodeConfigUntrusted, "spawns run: this project's config has agent profiles ("+visible.Line(strings.Join(waiting, ", "))+
			") you have not trusted since the file last changed; nothing was run",
			errs.Step{Command: "dont config trust", Description: "at your terminal: read the profiles' commands and env lists, and trust them"},
			errs.Step{Command: "dont spawns run --agent claude-code", Description: "or run a built-in profile"}).Unmet("a trusted agent profile")
	}
	if name == "" {
		switch len(cfg.Agents) {
		case 1:
			for n := range cfg.Agents {
				name = n
			}
		default:
			return runner.Profile{}, errs.E(errs.Usage, "spawns run: which agent? give --agent (a name under [agents] in .dont/config.toml, or "+strings.Join(runner.BuiltinNames(), ", ")+")",
				errs.Step{Command: "dont spawns run --agent claude-code", Description: "run Claude Code (claude -p) for each spawn"},
				errs.Step{Command: "dont spawns run --agent codex", Description: "or Codex (codex exec)"}).Unmet("an agent profile")
		}
	}
	if a, ok := cfg.Agents[name]; ok {
		p := runner.Profile{Name: name, Command: a.Command, Prompt: a.Prompt, PromptTemplate: a.PromptTemplate, Tool: a.Tool, Env: a.Env}
		base := a.Template
		if base == "" {
			base = "generic"
		}
		b, ok := runner.Builtin[base]
		if !ok {
			return p, errs.E(errs.ConfigInvalid, "[agents."+name+"] template "+quoteArg(base)+" is not a built-in profile ("+strings.Join(runner.BuiltinNames(), ", ")+")",
				errs.Step{Command: "template = \"generic\"  # under [agents." + name + "] in .dont/config.toml", Description: "start from a built-in profile"}).Unmet("template is a built-in profile")
		}
		p = p.Merge(b)
		if err := p.Check(); err != nil {
			return p, errs.E(errs.ConfigInvalid, err.Error(),
				errs.Step{Command: "command = [\"my-agent\", \"--request\", \"{{.RequestID}}\"]  # under [agents." + name + "] in .dont/config.toml", Description: "give the agent's command line (docs/harnesses.md)"}).Unmet("a valid agent profile")
		}
		return p, nil
	}
	if b, ok := runner.Builtin[name]; ok {
		if err := b.Check(); err != nil {
			return b, errs.E(errs.ConfigInvalid, "the built-in profile "+name+" needs a command: configure it under [agents.<name>] with template = \""+name+"\"",
				errs.Step{Command: "command = [\"my-agent\"]  # under [agents.mine] with template = \"" + name + "\" in .dont/config.toml", Description: "give the agent's command line (docs/harnesses.md)"}).Unmet("a command")
		}
		return b, nil
	}
	configured := make([]string, 0, len(cfg.Agents))
	for n := range cfg.Agents {
		configured = append(configured, n)
	}
	sort.Strings(configured)
	return runner.Profile{}, errs.E(errs.Usage, "spawns run: no agent profile "+quoteArg(name)+" (configured: "+strings.Join(configured, ", ")+"; built in: "+strings.Join(runner.BuiltinNames(), ", ")+")",
		errs.Step{Command: "dont spawns run --agent claude-code", Description: "use a built-in profile"}).Unmet("a known agent profile")
}

func quoteArg(s string) string { return "\"" + s + "\"" }

// readRequests reads spawn requests from stdin: a stream of spawn_request
// envelopes (as `dont assume --json` prints them) or their data.
func readRequests(r io.Reader) ([]spawn.Request, error) {
	dec := json.NewDecoder(r)
	var reqs []spawn.Request
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		bad := func(why string) error {
			return errs.E(errs.InvalidArgument, "spawns run: stdin must hold spawn_request envelopes (or their data): "+why,
				errs.Step{Command: "dont assume <id> --json | dont spawns run --agent <name>", Description: "pipe a spawn request in"},
				errs.Step{Command: "dont spawns run --request-id spawn:… --agent <name>", Description: "or name it"}).Unmet("a spawn_request on stdin")
		}
		if err != nil {
			return nil, bad(err.Error())
		}
		var env struct {
			Kind string          `json:"envelope_kind"`
			OK   *bool           `json:"ok"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(raw, &env) == nil && env.Kind != "" {
			if env.Kind != envelope.KindSpawnRequest {
				return nil, bad("got an envelope of kind " + env.Kind)
			}
			raw = env.Data
		}
		var req spawn.Request
		if err := json.Unmarshal(raw, &req); err != nil || req.RequestID == "" {
			return nil, bad("no request_id")
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil, errs.E(errs.Usage, "spawns run: no spawn request: pipe spawn_request envelopes in, or give --request-id or --watch",
			errs.Step{Command: "dont assume <id> --json | dont spawns run --agent <name>", Description: "run the subagent of a new spawn"},
			errs.Step{Command: "dont spawns run --watch --agent <name>", Description: "or of every new pending spawn"}).Unmet("a spawn request")
	}
	return reqs, nil
}

// remoteDont reaches dont at an endpoint with the caller's token.
type remoteDont struct{ c *client.Client }

func (d remoteDont) Call(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error) {
	return d.c.Call(ctx, tool, args)
}

// CallConfirmed sends the call with cli_confirmed: the runner's
// invocation is its confirmation (runner.Dont).
func (d remoteDont) CallConfirmed(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error) {
	return d.c.CallConfirmed(ctx, tool, args, true)
}

// embeddedDont calls the embedded store's service in-process, as the
// caller's principal.
type embeddedDont struct {
	a   *app
	svc *service.Service
}

func (d embeddedDont) Call(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error) {
	return d.call(ctx, tool, args, d.a.arrival())
}

// CallConfirmed runs the call as confirmed at the client: the runner's
// invocation is its confirmation (runner.Dont).
func (d embeddedDont) CallConfirmed(ctx context.Context, tool string, args map[string]any) (envelope.Envelope, error) {
	return d.call(ctx, tool, args, confirm.Arrival{Contract: true, CLIConfirmed: true})
}

func (d embeddedDont) call(ctx context.Context, tool string, args map[string]any, arrival confirm.Arrival) (envelope.Envelope, error) {
	res, err := tools.CallGated(service.WithPrincipal(ctx, d.a.principal()), d.svc, tool, args, arrival)
	if err != nil {
		return envelope.Fail(err, res.Warnings), nil
	}
	return envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
}

// embeddedRunner wires a runner to the embedded store. Its agents get no
// access to the store itself: the runner serves the project's API on a
// loopback port for as long as it runs, and each agent reaches it with
// its spawn's callback token, which allows only that spawn's tools on its
// own entity (docs/harnesses.md, "Embedded mode").
func (a *app) embeddedRunner(ctx context.Context, p project.Project, cfg project.Config, r *runner.Runner) (func(), error) {
	timeout, err := cfg.Timeout(a.getenv(settings.EnvSpawnTimeout))
	if err != nil {
		return nil, err
	}
	lease, err := cfg.MaxLease(a.personEnv(settings.EnvSpawnMaxLease))
	if err != nil {
		return nil, err
	}
	store, err := a.openStore(p)
	if err != nil {
		return nil, err
	}
	deps := service.Deps{ToolNames: tools.Names(), Store: store, Confirmations: store, Tokens: store, SpawnTimeout: timeout, SpawnMaxLease: lease, Author: a.author(), Clock: a.clock()}
	own := service.New(deps)
	r.Dont = embeddedDont{a: a, svc: own}
	// A spawn read by its id carries no callback token (shown once, at
	// issue); this process holds the store and its secret, and makes the
	// token of a spawn its principal asked for (or any, for the owner).
	r.CallbackToken = func(ctx context.Context, id string) (string, error) {
		return own.Credentials.CallbackTokenFor(service.WithPrincipal(ctx, a.principal()), id)
	}
	// The agents' server: what they do is logged, refusals included.
	log := slog.New(slog.NewJSONHandler(a.stderr, nil))
	deps.Author, deps.Log = "api", log
	svc := service.New(deps)
	if svc.Approvals, err = a.approvalsConfig(store, true); err != nil {
		store.Close()
		return nil, err
	}
	handler := httpapi.New(httpapi.Options{Backend: httpapi.SingleProject{Project: httpapi.Project{Service: svc, Idempotency: store}}, Log: log})
	// The agents' calls are counted per callback token: a sign of
	// progress that earns a heartbeat (docs/harnesses.md, "Progress").
	r.Calls = &runner.CallCounter{}
	handler = r.Calls.Handler(handler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		return nil, errs.E(errs.Internal, "cannot listen on a loopback port for the agents: "+err.Error()).Wrap(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	r.Endpoint = "http://" + ln.Addr().String()
	return func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		<-served
		store.Close()
	}, nil
}
