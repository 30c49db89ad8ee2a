package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/cmdline"
	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/cli/dont/watchscreen"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// app is one invocation: its streams, environment and global flags.
type app struct {
	// embeddedStore and embeddedProject are the store and project the
	// embedded call opened (for the delivery pass after it).
	embeddedStore   *sqlite.Store
	embeddedProject project.Project

	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	start          time.Time

	jsonOut  bool
	direct   bool
	harness  bool
	plain    bool
	endpoint string
	profile  string     // --profile: the stored login (login.go)
	logins   loginState // what this run read of the stored logins
	mode     spawn.Mode
	exit     int
	confirm  confirmState
	// person is who the approver passphrase proved at the controlling
	// terminal (person:<name>), or "": the calls it was proven for run as
	// that person (passphrase.go).
	person string
	// mcpServing: this process is `dont mcp`, a harness signal.
	mcpServing bool
	version    bool // --version
	// waiting is the countdown of a long wait, ended before any output.
	waiting *watchscreen.Countdown
	// asked is told escalate's question once it exists, before the
	// embedded call waits for its answer (tools.CallOptions.Asked).
	asked func(approvals.Approval)
	// harnessRetry is the command line of a spawning verb again with
	// --harness: what a person without a provider runs instead.
	harnessRetry string
	// settings are the project settings this invocation read, and the
	// warnings about sources it ignored (config.go).
	settings settingsState
	// unbuilt holds, per tool command, what is left to build of it: its
	// flags and run function, then the adjustments made to them
	// (approvalCommands). A run builds only the command it invokes
	// (buildFor).
	unbuilt map[*cobra.Command][]func()
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, start: time.Now()}
}

func (a *app) run(ctx context.Context, argv []string) int {
	defer a.traceApply()()
	args := cmdline.JoinSkipValues(argv)
	tool := cmdline.InvokedTool(args)
	root := a.commands(tool)
	a.buildFor(root, args)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		a.fail(a.usageError(err, argv))
	}
	return a.exit
}

func (a *app) stdoutTTY() bool {
	return isTerminal(a.stdout)
}

// machine reports whether output is the JSON envelope: --json, or stdout
// is not a terminal (an agent is reading).
func (a *app) machine() bool { return a.jsonOut || !a.stdoutTTY() }

// rootCommand is the whole command tree, every command built.
func (a *app) rootCommand() *cobra.Command {
	root := a.commands("")
	a.buildAll()
	return root
}

// later defers fn, a step of building c, until c is invoked (buildFor).
func (a *app) later(c *cobra.Command, fn func()) {
	if a.unbuilt == nil {
		a.unbuilt = map[*cobra.Command][]func(){}
	}
	a.unbuilt[c] = append(a.unbuilt[c], fn)
}

// build finishes c, once.
func (a *app) build(c *cobra.Command) {
	steps := a.unbuilt[c]
	delete(a.unbuilt, c)
	for _, fn := range steps {
		fn()
	}
}

func (a *app) buildAll() {
	for len(a.unbuilt) > 0 {
		for c := range a.unbuilt {
			a.build(c)
		}
	}
}

// buildFor builds the command args invoke: a run pays for one tool's
// flags, not for every tool's (each a pflag set). Building it can change
// how its flags are read, so the command is looked up again until it
// stands. Completion reads every command's flags: it gets them all.
func (a *app) buildFor(root *cobra.Command, args []string) {
	if isCompletion(args) {
		a.buildAll()
		a.addCompletions(root) // ids, statuses, roles, tiers (completion.go)
		return
	}
	for {
		c, _, err := root.Find(args)
		if err != nil || a.unbuilt[c] == nil {
			return
		}
		a.build(c)
	}
}

// commands makes the command tree; each tool command's flags and run
// function wait in a.unbuilt. With only set (cmdline.InvokedTool), the tree holds
// that tool's command (and its group's) and no other tool's: cobra finds
// the same command in it, with the same flags and help.
func (a *app) commands(only string) *cobra.Command {
	root := &cobra.Command{
		Use:           "dont",
		Short:         "A ledger of claims with enforced doubt, and the hand-off protocols agent harnesses need.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "print the JSON envelope (default when stdout is not a terminal)")
	root.PersistentFlags().BoolVar(&a.direct, "direct", false, "direct mode: call the configured LLM provider instead of emitting a spawn_request")
	root.PersistentFlags().BoolVar(&a.harness, "harness", false, "harness mode: emit a spawn_request for your harness's subagent even at a terminal")
	root.PersistentFlags().StringVar(&a.endpoint, "endpoint", "", "send every verb to this dont API (default $DONT_ENDPOINT, else the stored login; token from $DONT_TOKEN)")
	root.Flags().BoolVar(&a.version, "version", false, "print the version, as dont version does")
	root.RunE = func(c *cobra.Command, _ []string) error {
		if a.version {
			a.printVersion()
			return nil
		}
		return c.Help()
	}
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if a.direct && a.harness {
			return errs.E(errs.Usage, "--direct and --harness pick opposite modes; give one",
				errs.Step{Command: c.CommandPath() + " … --direct", Description: "call the configured LLM provider yourself"},
				errs.Step{Command: c.CommandPath() + " … --harness", Description: "or emit a spawn_request for your harness's subagent"})
		}
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return errs.E(errs.Usage, err.Error(), errs.Step{Command: c.CommandPath() + " --help", Description: "see the flags"})
	})
	root.SetHelpCommand(a.helpCommand())
	root.SetOut(a.stdout) // help and completion scripts
	root.SetErr(a.stderr)
	a.conventions(root)
	a.loginCommands(root)
	root.AddCommand(a.initCommand(), a.passphraseCommand(), a.serveCommand())
	root.AddCommand(a.mcpCommand())
	root.AddCommand(a.hookCommand(), a.harnessCommand())
	a.addConfirmCommands(root)
	root.AddCommand(a.doctorCommand(), a.backupCommand(), a.restoreCommand(), a.versionCommand(), a.configCommand())
	groups := map[string]*cobra.Command{}
	for _, name := range tools.Names() {
		if only != "" && name != only && !strings.HasPrefix(only, name+".") {
			continue // not built: a run builds only the tool it invokes
		}
		t, _ := tools.Lookup(name)
		group, _, grouped := strings.Cut(t.Name, ".")
		if !grouped {
			c := a.toolCommand(t)
			groups[t.Name] = c // a verb may also be a group: `spawns` and `spawns cancel`
			root.AddCommand(c)
			continue
		}
		parent, ok := groups[group]
		if !ok {
			parent = &cobra.Command{Use: group, Short: tools.GroupSummary(group), Args: a.argCount(0),
				RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
			groups[group] = parent
			root.AddCommand(parent)
		}
		parent.AddCommand(a.toolCommand(t))
	}
	if spawns := groups["spawns"]; spawns != nil {
		spawns.AddCommand(a.spawnsRunCommand()) // the reference harness (spawnsrun.go)
	}
	a.approvalCommands(root)
	a.addHelp(root)
	return root
}

// helpCommand is cobra's help, except that an unknown topic is a usage
// error (exit 2) rather than the root's help with exit 0.
func (a *app) helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return errs.E(errs.Usage, fmt.Sprintf("unknown help topic %q", strings.Join(args, " ")),
					errs.Step{Command: "dont help", Description: "list the commands and help topics"})
			}
			a.build(cmd)
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
}

func (a *app) initCommand() *cobra.Command {
	var noPassphrase bool
	c := &cobra.Command{
		Use:   "init",
		Short: "Create .dont/ (database and config.toml) in this folder or DONT_PROJECT_DIR; at a terminal, set the approver passphrase.",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			root := a.getenv("DONT_PROJECT_DIR")
			if root == "" {
				wd, err := os.Getwd()
				if err != nil {
					return errs.E(errs.StoreError, "cannot read the working directory").Wrap(err)
				}
				root = wd
			}
			p, err := project.Init(c.Context(), root)
			if err != nil {
				return err
			}
			data := map[string]string{"root": p.Root, "database": p.DBPath(), "config": p.ConfigPath()}
			hints := []string{"dont conclude \"<statement>\"  # record a claim"}
			record, err := a.initPassphrase(c.Context(), p.Root, noPassphrase)
			if err != nil {
				return err
			}
			if record != "" {
				data["passphrase_record"] = record
			} else {
				hints = append(hints, "dont passphrase set  # at your own terminal: until then nobody answers, confirms or mints tokens here")
			}
			a.emit(tools.Output{Kind: envelope.KindInit, Data: data, Hints: hints})
			return nil
		},
	}
	c.Flags().BoolVar(&noPassphrase, "no-passphrase", false, "do not ask for the approver passphrase (a scripted init; set it later with dont passphrase set)")
	return c
}

// initPassphrase sets the approver passphrase of a new project when a
// person runs init at a terminal, and returns the record's path. Under a
// harness signal, without a controlling terminal or with --no-passphrase
// it asks nothing: the project then refuses what only a person may do
// until dont passphrase set.
func (a *app) initPassphrase(ctx context.Context, root string, skip bool) (string, error) {
	if skip || a.harnessSignal() != "" {
		return "", nil
	}
	if _, record, err := a.loadPassphrase(resolvedRoot(root)); err == nil {
		return record, nil // set before, for a project at this root: kept
	}
	tty, err := os.OpenFile(controllingTerminal, os.O_RDWR, 0)
	if err != nil {
		return "", nil
	}
	defer tty.Close()
	_, record, err := a.setPassphrase(ctx, tty, resolvedRoot(root))
	if err != nil {
		if e := errs.As(err); e != nil {
			e.Message = "the project was initialised, but its approver passphrase was not set: " + e.Message
			e.Remediation = []errs.Step{{Command: "dont passphrase set", Description: "set it at your own terminal"}}
			return "", e
		}
		return "", err
	}
	return record, nil
}

// toolCommand makes a cobra command from a tool definition.
func (a *app) toolCommand(t *tools.Tool) *cobra.Command {
	var positional []tools.Param
	_, use, _ := strings.Cut(t.Name, ".")
	if use == "" {
		use = t.Name
	}
	for _, p := range t.Params {
		if p.Positional {
			positional = append(positional, p)
			use += " <" + p.Name + ">"
		}
	}
	c := &cobra.Command{Use: use, Short: t.Summary, Args: a.argCount(len(positional))}
	if hasParam(t, "mode") {
		c.Long = t.Summary + "\n\n" + modesHelp
	}
	// Runnable until built, so that help lists it; run() builds it first.
	c.RunE = func(c *cobra.Command, _ []string) error {
		return errs.E(errs.Internal, "the command "+c.CommandPath()+" was run before it was built")
	}
	a.later(c, func() { a.buildToolCommand(c, t, positional) })
	return c
}

// buildToolCommand gives a tool command its flags and run function.
func (a *app) buildToolCommand(c *cobra.Command, t *tools.Tool, positional []tools.Param) {
	a.addConfirmFlags(c, t, len(positional))
	for _, p := range t.Params {
		if p.Positional || p.Internal {
			continue
		}
		flag := strings.ReplaceAll(p.Name, "_", "-")
		switch p.Type {
		case tools.String:
			c.Flags().StringP(flag, p.Short, "", p.Description)
		case tools.Strings:
			c.Flags().StringArrayP(flag, p.Short, nil, p.Description)
		case tools.Number:
			c.Flags().Float64P(flag, p.Short, 0, p.Description)
		case tools.Integer:
			def, _ := p.Default.(int)
			c.Flags().IntP(flag, p.Short, def, p.Description)
		case tools.Boolean:
			c.Flags().BoolP(flag, p.Short, false, p.Description)
		}
		if p.Required {
			markRequired(c.Flags().Lookup(flag))
		}
	}
	c.RunE = func(c *cobra.Command, argv []string) error {
		args := map[string]any{}
		for i, p := range positional {
			if i < len(argv) { // --args-file may carry them
				args[p.Name] = argv[i]
			}
		}
		for _, p := range t.Params {
			if p.Positional || p.Internal {
				continue
			}
			flag := strings.ReplaceAll(p.Name, "_", "-")
			if !c.Flags().Changed(flag) {
				if p.Env != "" && a.getenv(p.Env) != "" {
					args[p.Name] = a.getenv(p.Env)
				}
				continue
			}
			switch p.Type {
			case tools.String:
				args[p.Name], _ = c.Flags().GetString(flag)
			case tools.Strings:
				args[p.Name], _ = c.Flags().GetStringArray(flag)
			case tools.Number:
				args[p.Name], _ = c.Flags().GetFloat64(flag)
			case tools.Integer:
				n, _ := c.Flags().GetInt(flag)
				args[p.Name] = float64(n)
			case tools.Boolean:
				args[p.Name], _ = c.Flags().GetBool(flag)
			}
		}
		validText(args)
		if hasParam(t, "mode") {
			a.mode = spawn.DetectMode(spawn.Signals{Direct: a.direct, Harness: a.harness, HarnessEnv: a.getenv("DONT_HARNESS"), StdoutTTY: a.stdoutTTY()})
			args["mode"] = string(a.mode)
			a.harnessRetry = retryLine(c, argv)
		}
		return a.gatedCall(c, t, argv, args)
	}
}

// modesHelp is the Long help of every verb that spawns a subagent.
const modesHelp = `Two modes:
  harness  emit a spawn_request; your agent harness runs the subagent and
           calls back (--harness, DONT_HARNESS=1, dont mcp, or stdout not a
           terminal)
  direct   dont calls the configured LLM provider itself (--direct, or the
           default at a terminal; configure with DONT_LLM_PROVIDER,
           DONT_LLM_MODEL, DONT_LLM_API_KEY or [llm] in .dont/config.toml)
--direct wins over every harness signal; --direct with --harness is a usage
error.`

// validText makes the text of argv and the environment valid UTF-8 the
// way a JSON transport's decoding does (each bad byte becomes U+FFFD), so
// an argument reads back the same from every transport and every path
// (TestArgvThatIsNotUTF8IsKeptAsAJSONTransportKeepsIt).
func validText(args map[string]any) {
	for k, v := range args {
		switch v := v.(type) {
		case string:
			args[k] = strings.ToValidUTF8(v, "\uFFFD")
		case []string:
			for i := range v {
				v[i] = strings.ToValidUTF8(v[i], "\uFFFD")
			}
		}
	}
}

func hasParam(t *tools.Tool, name string) bool {
	for _, p := range t.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (a *app) argCount(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, argv []string) error {
		if len(argv) != n {
			return errs.E(errs.Usage, fmt.Sprintf("%s takes %d argument(s), got %d", c.Name(), n, len(argv)),
				errs.Step{Command: c.CommandPath() + " --help", Description: "see the usage"})
		}
		return nil
	}
}

// remote is the API endpoint verbs go to, or "" for the embedded store.
func (a *app) remote() string {
	if a.endpoint != "" {
		return a.endpoint
	}
	if ep := a.getenv("DONT_ENDPOINT"); ep != "" {
		return ep
	}
	return a.loginEndpoint()
}

// call runs a tool against the remote API or the embedded store.
func (a *app) call(ctx context.Context, t *tools.Tool, args map[string]any) error {
	if err := a.loginProblem(); err != nil {
		return err
	}
	if ep := a.remote(); ep != "" {
		api := a.apiClient(ep, a.storedToken(ep))
		if walksPages(t, args) {
			out, failed, err := walkRemote(ctx, args, func(ctx context.Context, args map[string]any) (envelope.Envelope, error) {
				return api.CallConfirmed(ctx, t.Name, args, a.confirm.confirmed)
			})
			switch {
			case err != nil:
				return err
			case failed != nil:
				a.print(*failed)
				if !failed.OK {
					a.exit = present.Exit(envelope.ErrorOf(*failed))
				}
			default:
				a.emit(out)
			}
			return nil
		}
		env, err := api.CallConfirmed(ctx, t.Name, args, a.confirm.confirmed)
		if err != nil {
			return err
		}
		if id, held := confirmclient.HeldID(env); held && a.confirm.feature {
			a.stale(id)
			return nil
		}
		a.print(env)
		if !env.OK {
			a.exit = present.Exit(envelope.ErrorOf(env))
		}
		return nil
	}
	svc, closeStore, err := a.embedded(t)
	if err != nil {
		return err
	}
	defer closeStore()
	// The delivery pass runs during the call (for calls that wait) and
	// after its envelope is printed, before the store closes.
	defer a.deliverAround(ctx, svc, t)()
	callArgs := args
	if walksPages(t, args) {
		callArgs = pageArgs(args, "")
	}
	res, err := tools.CallWith(service.WithPrincipal(ctx, a.principal()), svc, t.Name, callArgs, a.arrival(), tools.CallOptions{Asked: a.asked})
	if err != nil && a.principal().Unproven && needsProof(err) {
		// Only a person decides this: the person at their terminal types
		// the approver passphrase and the call runs again; without a
		// terminal (or with a harness signal) the refusal stands.
		if perr := a.provePersonFor(ctx, t); errs.Is(perr, confirm.PersonRequired) || errs.Is(perr, passphraseNotSet) {
			a.failWith(err, res.Warnings)
			return nil
		} else if perr != nil {
			a.failWith(perr, res.Warnings)
			return nil
		}
		res, err = tools.CallWith(service.WithPrincipal(ctx, a.principal()), svc, t.Name, callArgs, a.arrival(), tools.CallOptions{Asked: a.asked})
	}
	if err != nil {
		a.failWith(err, res.Warnings)
		return nil
	}
	if tools.Held(res) {
		a.stale(res.Data.(service.HeldView).ID)
		return nil
	}
	if walksPages(t, args) {
		if res, err = walkEmbedded(res, args, func(args map[string]any) (tools.Output, error) {
			return tools.CallGated(service.WithPrincipal(ctx, a.principal()), svc, t.Name, args, a.arrival())
		}); err != nil {
			a.failWith(err, res.Warnings)
			return nil
		}
	}
	a.emit(res)
	return nil
}

// embedded opens the project's SQLite store. Configuration is read only by
// the verbs that need it, to keep start-up lean.
func (a *app) embedded(t *tools.Tool) (*service.Service, func(), error) {
	p, err := a.locateProject()
	if err != nil {
		return nil, nil, err
	}
	store, err := a.openStore(p)
	if err != nil {
		return nil, nil, err
	}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: store, Confirmations: store, Tokens: store, Author: a.author(), Clock: a.clock(),
		HooksConfig: service.HooksConfig{Store: store}})
	if svc.Approvals, err = a.approvalsConfig(store, usesApprovals(t)); err != nil {
		store.Close()
		return nil, nil, err
	}
	if t.Name == "escalate" {
		// The person's rules answer before a person is asked.
		if svc.Approvals.Rules, err = a.approvalRules(); err != nil {
			store.Close()
			return nil, nil, err
		}
	}
	if strings.HasPrefix(t.Name, "sessions.") {
		// The person's ceiling (docs/security.md, "Who sets an agent's power").
		if svc.Approvals.SessionCeiling, err = a.ceiling(p, ""); err != nil {
			store.Close()
			return nil, nil, err
		}
	}
	if t.Name == service.HeartbeatTool {
		// A heartbeat's default --extend is the spawn timeout, its bound the lease.
		cfg, err := a.projectSettings(p)
		if err == nil {
			svc.SpawnTimeout, err = cfg.Timeout(a.getenv(settings.EnvSpawnTimeout))
		}
		if err == nil {
			svc.SpawnMaxLease, err = cfg.MaxLease(a.personEnv(settings.EnvSpawnMaxLease))
		}
		if err != nil {
			store.Close()
			return nil, nil, err
		}
	}
	a.embeddedStore, a.embeddedProject = store, p
	if strings.HasPrefix(t.Name, "hooks.") {
		if svc.HooksConfig, err = a.hooksConfig(p, store); err != nil {
			store.Close()
			return nil, nil, err
		}
	}
	if hasParam(t, "mode") {
		cfg, err := a.projectSettings(p)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		if svc.SpawnTimeout, err = cfg.Timeout(a.getenv(settings.EnvSpawnTimeout)); err != nil {
			store.Close()
			return nil, nil, err
		}
		if a.mode == spawn.ModeDirect {
			if svc.Provider, err = a.provider(p, cfg); err != nil {
				store.Close()
				return nil, nil, err
			}
		}
	}
	return svc, func() { store.Close() }, nil
}

// openProjectStore finds the project (DONT_PROJECT_DIR, or upwards from
// the working directory) and opens its store.
func (a *app) openProjectStore() (project.Project, *sqlite.Store, error) {
	p, err := a.locateProject()
	if err != nil {
		return p, nil, err
	}
	store, err := a.openStore(p)
	return p, store, err
}

// locateProject finds the project (DONT_PROJECT_DIR, or upwards from the
// working directory) and, when it passed over projects further up, says
// which one it uses: a .dont/ planted in a subfolder takes over every
// command run below it (docs/security.md, "The project dont opens").
func (a *app) locateProject() (project.Project, error) {
	wd, _ := os.Getwd()
	p, err := project.Find(wd, a.getenv("DONT_PROJECT_DIR"))
	if err == nil && len(p.Shadowed) > 0 {
		a.notice(envelope.CodeOf(ProjectNested), "using the project at "+p.Root+
			"; the one at "+strings.Join(p.Shadowed, " and ")+" above it is not used (a .dont/ in a subfolder takes over every command run below it)"+
			" (next: export DONT_PROJECT_DIR="+p.Shadowed[0]+" if that is the one you meant)")
	}
	return p, err
}

// ProjectNested warns that the project found has another project above it.
const ProjectNested errs.Code = "project-nested"

// openStore opens the project's SQLite file, with the fault hooks of a
// test build (storeHooks; none in the binary as shipped).
func (a *app) openStore(p project.Project) (*sqlite.Store, error) {
	store, err := sqlite.OpenSynchronous(p.DBPath(), a.storeSynchronous())
	if err != nil {
		return nil, errs.E(errs.StoreError, "cannot open "+p.DBPath()).Wrap(err)
	}
	store.Hooks = a.storeHooks()
	return store, nil
}

func (a *app) author() string {
	if v := a.getenv("DONT_AUTHOR"); v != "" {
		return v
	}
	if v := a.getenv("USER"); v != "" {
		return v
	}
	return "cli"
}

func (a *app) meta() envelope.Meta {
	return envelope.Meta{DurationMS: time.Since(a.start).Milliseconds(), RequestID: ids.New(ids.Request, a.start), Mode: string(a.mode)}
}

// emit prints a success envelope (or its human rendering).
func (a *app) emit(res tools.Output) {
	env, err := envelope.New(res.Kind, res.Data, append(res.Warnings, a.settings.notices...), res.Hints)
	if err != nil {
		a.fail(errs.E(errs.Internal, "cannot encode the result").Wrap(err))
		return
	}
	env.Meta = a.meta()
	a.exit = 0
	a.print(env)
}

// print writes an envelope as JSON for machines, or renders it for a person.
func (a *app) print(env envelope.Envelope) {
	a.waiting.End()
	env = cmdline.WithFlagNames(env)
	if a.machine() {
		a.stdout.Write(envelope.Marshal(env))
		return
	}
	a.renderHuman(env)
}

func (a *app) fail(err error) { a.failWith(err, nil) }

func (a *app) failWith(err error, warnings []envelope.Warning) {
	err = a.withHarnessRetry(err)
	env := envelope.Fail(err, append(warnings, a.settings.notices...))
	env.Meta = a.meta()
	a.exit = present.Exit(err)
	a.print(env)
}

// withHarnessRetry gives direct mode's config-missing the command the
// person typed, with --harness, as a step to run as it is, before the
// provider settings; dont help config says the rest.
func (a *app) withHarnessRetry(err error) error {
	if a.harnessRetry == "" || a.mode != spawn.ModeDirect || !errs.Is(err, errs.ConfigMissing) {
		return err
	}
	e := *errs.As(err)
	e.Remediation = []errs.Step{
		{Command: a.harnessRetry, Description: "emit a spawn_request instead, for your harness's subagent (or a person) to resolve"},
		{Command: "export DONT_LLM_PROVIDER=openai DONT_LLM_MODEL=<model> DONT_LLM_API_KEY=<key>", Description: "or configure a provider for direct mode, then run the command again"},
		{Command: "dont help config", Description: "every provider and setting ([llm] in .dont/config.toml)"},
	}
	return &e
}

// retryLine is the command line as given (its arguments and the flags it
// set), with --harness for the mode.
func retryLine(c *cobra.Command, argv []string) string {
	line := c.CommandPath()
	if len(argv) > 0 {
		line += " " + shellJoin(argv)
	}
	c.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "direct", "harness", "json", "plain":
			return
		}
		if f.Value.Type() == "bool" {
			line += " --" + f.Name
			return
		}
		if sa, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sa.GetSlice() {
				line += " --" + f.Name + " " + shellJoin([]string{v})
			}
			return
		}
		line += " --" + f.Name + " " + shellJoin([]string{f.Value.String()})
	})
	return line + " --harness"
}
