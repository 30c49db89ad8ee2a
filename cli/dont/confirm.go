package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// confirmState is the CLI side of client-side confirmation for one process.
type confirmState struct {
	yes, noInput, refresh bool
	// confirmed: the call about to be sent carries cli_confirmed: true.
	confirmed bool
	// feature: the schema in use advertises interactive_confirm, so a held
	// answer means the schema this CLI used is stale.
	feature bool
	// hinted: the [DEPRECATED] line was printed (at most once per process).
	hinted bool
	// staleSaid: the stale-cache line was printed.
	staleSaid bool
	schema    *confirmclient.Schema
	// shown renders what an answer answers, read before its prompt
	// (showAnswered); nil for every other call.
	shown func(width int) []string
}

// addConfirmCommands adds the global flags of the gate and `dont tools`.
func (a *app) addConfirmCommands(root *cobra.Command) {
	root.PersistentFlags().BoolVarP(&a.confirm.yes, "yes", "y", false, "confirm gated actions without the [y/N] prompt")
	root.PersistentFlags().BoolVar(&a.confirm.noInput, "no-input", false, "never prompt: a gated action without --yes exits 2 and sends nothing")
	root.PersistentFlags().BoolVar(&a.confirm.refresh, "refresh", false, "re-fetch the server's tool schema instead of using the 24 h cache")
	root.AddCommand(&cobra.Command{
		Use:   "tools",
		Short: "Show the tool schema the CLI gates by: tools, arguments, annotations, features (remote: cached 24 h; --refresh re-fetches).",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.toolSchema(c.Context())
			if err != nil {
				return err
			}
			data := map[string]any{"tools": s.Schema.Tools, "features": s.Schema.Features, "source": s.Source, "caps": s.Caps}
			if s.File != "" {
				data["cache_file"], data["fetched_at"] = s.File, s.FetchedAt
			}
			a.emit(tools.Output{Kind: envelope.KindTools, Data: data})
			return nil
		},
	})
}

// addConfirmFlags gives a tool command --args-file, the hidden deprecated
// skip flags (gated tools only: anywhere else they are unknown flags), and
// for gated tools the Confirmation: note at the end of --help.
func (a *app) addConfirmFlags(c *cobra.Command, t *tools.Tool, positional int) {
	c.Flags().String("args-file", "", "read the arguments as one JSON object from this file (- reads stdin); flags win over its keys")
	count := c.Args
	c.Args = func(c *cobra.Command, argv []string) error {
		if f, _ := c.Flags().GetString("args-file"); f != "" && len(argv) <= positional {
			return nil // the file may carry the positional arguments
		}
		return count(c, argv)
	}
	if !t.Annotations.Gated() {
		return
	}
	for _, name := range confirm.SkipParams {
		c.Flags().String(name, "", "deprecated: use --yes")
		c.Flags().Lookup(name).NoOptDefVal = "true"
		c.Flags().Lookup(name).Hidden = true
	}
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		g, feature := a.helpGate(t)
		for _, name := range confirm.SkipParams {
			// Feature off: the server's schema still lists them, so they are shown.
			cmd.Flags().Lookup(name).Hidden = feature
		}
		cmd.Root().HelpFunc()(cmd, args)
		if feature && g.Gated() {
			fmt.Fprint(cmd.OutOrStdout(), confirmclient.Note(t, g))
		}
	})
}

// gatedCall is the CLI gate (docs/design.md §7.2): merge the final
// arguments, decide, preview and prompt if needed, then send one request —
// or nothing at all.
func (a *app) gatedCall(c *cobra.Command, t *tools.Tool, argv []string, args map[string]any) error {
	ctx := c.Context()
	stdinArgs, err := a.mergeArgsFile(c, t, argv, args)
	if err != nil {
		return err
	}
	for _, name := range confirm.SkipParams {
		if f := c.Flags().Lookup(name); f != nil && f.Changed {
			b, err := strconv.ParseBool(f.Value.String())
			if err != nil {
				return errs.E(confirm.InvalidSkip, "--"+name+" takes true or false, got "+strconv.Quote(f.Value.String())+"; prefer --yes").Unmet(name + " is true or false")
			}
			args[name] = b
		}
	}
	if err := a.showAnswered(ctx, t, args); err != nil {
		return err
	}
	if t.Annotations.Presence && a.remote() == "" {
		// Embedded, the answer is the person's at the controlling terminal
		// (docs/security.md); over the API the token decides.
		yes, err := a.askPerson(ctx, t, args)
		if err != nil {
			return err
		}
		if !yes {
			fmt.Fprintln(a.stderr, confirm.AbortedLine)
			a.exit = present.ExitRefusal
			return nil
		}
		a.confirm.confirmed = true
		return a.callEach(ctx, t, confirm.WithoutSkip(args))
	}
	gate, feature, err := a.gateOf(ctx, t)
	if err != nil {
		return err
	}
	path := "dont " + strings.ReplaceAll(t.Name, ".", " ")
	// Ids read from stdin (`dont lock -`) take stdin just as --args-file - does.
	stdinIDs := args["id"] == "-"
	plan := confirm.Decide(confirm.Call{Path: path, Gate: gate, Feature: feature,
		Args: args, Yes: a.confirm.yes, NoInput: a.confirm.noInput, StdinArgs: stdinArgs || stdinIDs})
	a.confirm.feature = feature
	if plan.Warning != "" {
		fmt.Fprintln(a.stderr, plan.Warning)
	}
	switch plan.Step {
	case confirm.Refuse:
		return confirmclient.GateRefusal(plan.Err, path, gate.InteractiveOnly, a.confirm.noInput, stdinArgs || stdinIDs)
	case confirm.Ask:
		if !a.ask(ctx, t, plan.Args) {
			fmt.Fprintln(a.stderr, confirm.AbortedLine)
			a.exit = present.ExitRefusal
			return nil
		}
		plan.CLIConfirmed = true
	}
	if plan.Deprecated && !a.confirm.hinted {
		a.confirm.hinted = true
		fmt.Fprintln(a.stderr, confirm.DeprecatedLine)
	}
	a.confirm.confirmed = plan.CLIConfirmed
	if a.remote() == "" && a.harnessSignal() == "" && t.NeedsPerson(plan.Args) {
		// Minting or revoking a token: embedded, only the person, proven
		// by the passphrase (docs/security.md); over the API the token.
		// A harness is refused by its role, as before; invalid arguments
		// are refused before anyone is asked, as the server would.
		if _, err := t.Validate(confirm.WithoutSkip(plan.Args)); err != nil {
			return err
		}
		if err := a.provePersonFor(ctx, t); err != nil {
			return err
		}
	}
	return a.callEach(ctx, t, plan.Args)
}

// mergeArgsFile applies --args-file: its keys are arguments, and a flag or
// positional argument given on the command line wins over the same key.
// It reports whether the file was stdin.
func (a *app) mergeArgsFile(c *cobra.Command, t *tools.Tool, argv []string, args map[string]any) (bool, error) {
	name, _ := c.Flags().GetString("args-file")
	if name == "" {
		return false, nil
	}
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(io.LimitReader(a.stdin, 1<<20))
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return name == "-", errs.E(errs.Usage, "cannot read --args-file "+name+": "+err.Error(),
			errs.Step{Command: c.CommandPath() + " --args-file <file.json>", Description: "name a readable JSON file, or - for stdin"})
	}
	var file map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&file); err != nil || file == nil || dec.More() {
		return name == "-", errs.E(errs.Usage, "--args-file "+name+" must hold one JSON object of arguments",
			errs.Step{Command: `echo '{"id": "claim:…"}' | ` + c.CommandPath() + " --args-file -", Description: "pass the arguments as one JSON object"})
	}
	fromLine := map[string]bool{}
	pos := 0
	for _, p := range t.Params {
		switch {
		case p.Positional:
			fromLine[p.Name] = pos < len(argv)
			pos++
		case !p.Internal:
			fromLine[p.Name] = c.Flags().Changed(strings.ReplaceAll(p.Name, "_", "-"))
		}
	}
	for k, v := range file {
		if !fromLine[k] {
			args[k] = v
		}
	}
	return name == "-", nil
}

// ask prints the preview of the arguments and the question on stderr and
// reads one line from stdin. EOF, an interrupt and anything but y/yes decline.
func (a *app) ask(ctx context.Context, t *tools.Tool, args map[string]any) bool {
	errFile, _ := a.stderr.(*os.File)
	for _, line := range a.promptLines(t, args, errFile) {
		fmt.Fprintln(a.stderr, line)
	}
	fmt.Fprint(a.stderr, confirm.Prompt(confirm.Display(t.Name)))
	answer, err := confirmclient.ReadLine(ctx, a.stdin)
	if err != nil || !confirmclient.StdinTerminal(a.stdin) {
		fmt.Fprintln(a.stderr) // nothing echoed the answer's newline
	}
	return confirm.Yes(answer)
}

// stale handles a held answer to a call this CLI sent while it believed
// the server confirms locally: the schema it gated by is out of date. It
// prints the stale line, exits 1 and never replays the call.
func (a *app) stale(heldID string) {
	a.failWith(a.staleError(heldID), nil)
}

// staleError prints the stale line (once per process) and returns the
// error envelope's error.
func (a *app) staleError(heldID string) error {
	if !a.confirm.staleSaid {
		a.confirm.staleSaid = true
		fmt.Fprintln(a.stderr, confirm.StaleLine)
	}
	return confirmclient.StaleError(heldID)
}

// arrival is how the embedded CLI passes its decision to the same
// server-side gate a server runs: the binary's schema always has the
// feature on.
func (a *app) arrival() confirm.Arrival {
	return confirm.Arrival{Contract: true, CLIConfirmed: a.confirm.confirmed}
}

// toolSchema returns the schema the gate reads, once per process.
func (a *app) toolSchema(ctx context.Context) (*confirmclient.Schema, error) {
	if a.confirm.schema != nil {
		return a.confirm.schema, nil
	}
	ep := a.remote()
	if ep == "" {
		a.confirm.schema = &confirmclient.Schema{Caps: confirm.CLICaps, Schema: tools.SchemaFor(true, embeddedFeature), Source: "embedded"}
		return a.confirm.schema, nil
	}
	file := confirmclient.CacheFile(ep)
	if !a.confirm.refresh {
		if s, ok := confirmclient.ReadCache(file, ep, time.Now()); ok {
			a.confirm.schema = s
			return s, nil
		}
	}
	s, err := confirmclient.Fetch(ctx, a.apiClient(ep, ""))
	if err != nil {
		return nil, err
	}
	s.Endpoint = ep
	if s.Source == "server" {
		s.File = confirmclient.WriteCache(file, s)
	}
	a.confirm.schema = s
	return s, nil
}

// gateOf is the gate the CLI applies to t, and whether the server offers
// the interactive confirmation. Embedded, it is the binary's own tool's —
// what the embedded schema (tools.SchemaFor) copies — read without
// building every tool's JSON Schema on each run (bench/coldstart;
// TestTheEmbeddedGateIsTheEmbeddedSchemas). Remote, the server's schema
// decides.
func (a *app) gateOf(ctx context.Context, t *tools.Tool) (confirm.Gate, bool, error) {
	if a.confirm.schema == nil && a.remote() == "" {
		return t.Annotations.Gate, embeddedFeature, nil
	}
	s, err := a.toolSchema(ctx)
	if err != nil {
		return confirm.Gate{}, false, err
	}
	return s.Gate(t.Name), s.Schema.Features.InteractiveConfirm, nil
}

// embeddedFeature: the embedded CLI always offers the interactive
// confirmation.
const embeddedFeature = true

// helpGate is the gate --help describes: remote, the server's (from the
// cache, or fetched briefly); when it cannot be known, no note.
func (a *app) helpGate(t *tools.Tool) (confirm.Gate, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, feature, err := a.gateOf(ctx, t)
	if err != nil {
		return confirm.Gate{}, false
	}
	return g, feature
}
