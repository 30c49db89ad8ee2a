package main

import (
	"time"

	"github.com/dont-cli/dont/internal/oneproc"
	"github.com/spf13/cobra"
)

// The commands that serve many callers (serve, mcp) or run agents
// (spawns run): what they are, for help and the command list; their runs
// are serve.go, mcp.go and spawnsrun.go.

// serveCommand is `dont serve`; its flags and its run are serve.go's.
func (a *app) serveCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the JSON API and the approvals page (HTTP, or HTTPS with --tls-cert/--tls-key) on this project's embedded store.",
		Long: `Serve the JSON API and the approvals page on this project's embedded store.
A timer per spawn expires it when due; a ticker sweep backs it up.

It serves plain HTTP unless --tls-cert and --tls-key name a certificate and
its key (PEM), then HTTPS. The first line on stdout is {"listening":URL,
"approvals":URL}; stderr says where the approvals page is, and warns when
the address is reachable beyond this machine without TLS (tokens would
cross the network in clear).`,
		Example: `  dont serve                                   # http://127.0.0.1:8787, page at /approvals
  dont serve --addr :8443 --tls-cert cert.pem --tls-key key.pem`,
		Args: a.argCount(0),
	}
	a.serveFlags(c)
	return c
}

// mcpCommand is `dont mcp`: every tool over MCP on stdin/stdout, in
// harness mode, against the same embedded store the CLI uses.
func (a *app) mcpCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve every dont tool over MCP on stdin/stdout (harness mode; results are envelopes).",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.serveMCP(c)
		},
	}
	// Claude Code's --permission-prompt-tool mcp__dont__permission_prompt
	// (internal/mcp/permission.go, docs/harnesses.md).
	c.Flags().Bool("permission-prompt", false, "also serve permission_prompt, Claude Code's --permission-prompt-tool for headless runs")
	return c
}

// spawnsRunFlags are `dont spawns run`'s flags.
type spawnsRunFlags struct {
	requestIDs  []string
	watch       bool
	agent       string
	maxParallel int
	heartbeat   time.Duration
	extend      time.Duration
	grace       time.Duration
	poll        time.Duration
	deadline    time.Duration
	workdir     string
}

// spawnsRunCommand is `dont spawns run`: the reference harness
// (internal/runner; docs/harnesses.md). Its run (spawnsrun.go) only
// wires its connection to dont and, for an embedded store, the loopback
// server its agents reach dont through.
func (a *app) spawnsRunCommand() *cobra.Command {
	var f spawnsRunFlags
	c := &cobra.Command{
		Use:   "run",
		Short: "Run a subagent for spawn requests (from stdin, --request-id, or --watch every new pending one) and report how each ended.",
		Long: `Run a subagent for spawn requests: a configured agent command ([agents.<name>]
in .dont/config.toml, or a built-in: claude-code, codex, generic) started as a
subprocess with a clean environment — the prompt, DONT_REQUEST_ID,
DONT_ENDPOINT and the spawn's callback token as DONT_TOKEN, and only the
caller's variables the profile allows — in a fresh private folder outside
the project. The spawn is heartbeaten only while the agent shows progress
(output, or calls on its token); the run ends at the spawn's expiry or at
--deadline (default: the spawn's original timeout), whatever the
heartbeats. Then, or on Ctrl-C, the agent and every process it started are
killed, and a spawn it left unresolved is cancelled, freeing its claim.

Requests: spawn_request envelopes (or their data) on stdin, as
"dont assume <id> --json" prints them; --request-id spawn:… (repeatable); or
--watch, every new pending spawn of the project until interrupted.

Exit: 0 when every spawn was resolved by its subagent; 1 when one timed out,
was left unresolved or ended otherwise; 130 on Ctrl-C (the agents are killed,
their spawns cancelled). The envelope (spawn_run) lists every run.
See docs/harnesses.md.`,
		Args: a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			oneproc.Restore() // several subagents at once: every CPU
			return a.spawnsRun(c.Context(), f)
		},
	}
	a.later(c, func() { f.register(c) })
	return c
}

// register gives `spawns run` its flags (when it is invoked: app.later).
func (f *spawnsRunFlags) register(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.requestIDs, "request-id", nil, "a spawn request to run (spawn:…; repeatable)")
	c.Flags().BoolVar(&f.watch, "watch", false, "run every new pending spawn of the project until interrupted")
	c.Flags().StringVar(&f.agent, "agent", "", "the agent profile: a name under [agents] in .dont/config.toml, or claude-code, codex, generic (default: the only one configured)")
	c.Flags().IntVar(&f.maxParallel, "max-parallel", 1, "agents running at once")
	c.Flags().DurationVar(&f.heartbeat, "heartbeat", 30*time.Second, "how often the spawn of an agent that showed progress (output, calls on its token) is heartbeaten (0: never; the spawn's expiry bounds the run)")
	c.Flags().DurationVar(&f.extend, "extend", 0, "each heartbeat moves the expiry to now + this (default 3 × --heartbeat; never past --deadline or spawn_max_lease)")
	c.Flags().DurationVar(&f.deadline, "deadline", 0, "kill each agent this long after its start, whatever the heartbeats, and cancel its spawn (default: the spawn's original timeout; never past spawn_max_lease)")
	c.Flags().DurationVar(&f.grace, "grace", 5*time.Second, "how long an agent has after SIGTERM before SIGKILL")
	c.Flags().DurationVar(&f.poll, "poll", 2*time.Second, "how often --watch lists the pending spawns")
	c.Flags().StringVar(&f.workdir, "workdir", "", "the agents' working directory, outside every dont project (default: a fresh private folder per agent)")
}
