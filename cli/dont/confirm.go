package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
	"golang.org/x/term"
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
	schema    *toolSchema
	// shown renders what an answer answers, read before its prompt
	// (showAnswered); nil for every other call.
	shown func(width int) []string
}

// schemaTTL is how long a fetched tool schema is trusted.
const schemaTTL = 24 * time.Hour

// toolSchema is the schema the gate reads: fetched from the server (and
// cached in a file keyed by the capability string), or the binary's own
// in embedded mode.
type toolSchema struct {
	FetchedAt time.Time    `json:"fetched_at"`
	Endpoint  string       `json:"endpoint,omitempty"`
	Caps      string       `json:"caps"`
	Schema    tools.Schema `json:"schema"`
	Source    string       `json:"-"` // embedded, cache or server
	File      string       `json:"-"`
}

func (s *toolSchema) gate(name string) confirm.Gate {
	for _, t := range s.Schema.Tools {
		if t.Name == name {
			return t.Annotations.Gate
		}
	}
	return confirm.Gate{}
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
			fmt.Fprint(cmd.OutOrStdout(), confirmationNote(t, g))
		}
	})
}

// skipFlagValue lets `--skip_confirmation false` mean the flag's value, as
// the deprecated flags took an optional value: a following true/false
// literal is joined to the flag before cobra parses it.
func skipFlagValue(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		out = append(out, arg)
		if arg == "--" {
			return append(out, argv[i+1:]...)
		}
		if (arg == "--"+confirm.SkipParam || arg == "--"+confirm.AutoSkipParam) && i+1 < len(argv) {
			if _, err := strconv.ParseBool(argv[i+1]); err == nil {
				out[len(out)-1] = arg + "=" + argv[i+1]
				i++
			}
		}
	}
	return out
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
		return gateRefusal(plan.Err, path, gate.InteractiveOnly, a.confirm.noInput, stdinArgs || stdinIDs)
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
	answer, err := readLine(ctx, a.stdin)
	if err != nil || !stdinTerminal(a.stdin) {
		fmt.Fprintln(a.stderr) // nothing echoed the answer's newline
	}
	return confirm.Yes(answer)
}

// preview lists the typed arguments, one per line, values as JSON (so a
// value cannot fake a line of its own) with every control and bidi
// character escaped (package visible): the tool's parameters in order,
// then any other key. dont has no attachments; were there any, they would
// be listed by name only.
func preview(t *tools.Tool, args map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	line := func(k string) {
		b, _ := json.Marshal(args[k])
		out = append(out, "  "+visible.Line(k)+": "+string(visible.JSON(b)))
		seen[k] = true
	}
	for _, p := range t.Params {
		if _, ok := args[p.Name]; ok && !p.Internal {
			line(p.Name)
		}
	}
	rest := []string{}
	for k := range args {
		if !seen[k] && k != "mode" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		line(k)
	}
	return out
}

// readLine reads up to a newline, byte by byte so nothing after the answer
// is consumed. Content before EOF counts as the answer.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 1)
		for {
			n, err := r.Read(buf)
			if n == 1 {
				if buf[0] == '\n' {
					done <- result{b.String(), nil}
					return
				}
				b.WriteByte(buf[0])
			}
			if err != nil {
				done <- result{b.String(), err}
				return
			}
		}
	}()
	select {
	case res := <-done:
		return res.s, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// stdinTerminal reports whether the prompt's answer is typed at a terminal
// (which echoes its newline).
func stdinTerminal(r io.Reader) bool {
	f, ok := r.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
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
	return errs.E(confirm.SchemaStale, "the server held the call as "+heldID+" although the cached schema said it needs no confirmation; nothing ran and it was not replayed",
		errs.Step{Command: "dont --refresh tools", Description: "re-fetch the tool schema, then run the command again"},
		errs.Step{Command: "dont confirmations refuse " + heldID, Description: "an approver drops the held call (it also expires by itself)"})
}

// heldID returns data.confirmation_id of an envelope whose data.status is
// "pending_confirmation".
func heldID(env envelope.Envelope) (string, bool) {
	var d struct {
		Status string `json:"status"`
		ID     string `json:"confirmation_id"`
	}
	if !env.OK || json.Unmarshal(env.Data, &d) != nil || d.Status != confirm.StatusPending {
		return "", false
	}
	return d.ID, true
}

// arrival is how the embedded CLI passes its decision to the same
// server-side gate a server runs: the binary's schema always has the
// feature on.
func (a *app) arrival() confirm.Arrival {
	return confirm.Arrival{Contract: true, CLIConfirmed: a.confirm.confirmed}
}

// toolSchema returns the schema the gate reads, once per process.
func (a *app) toolSchema(ctx context.Context) (*toolSchema, error) {
	if a.confirm.schema != nil {
		return a.confirm.schema, nil
	}
	ep := a.remote()
	if ep == "" {
		a.confirm.schema = &toolSchema{Caps: confirm.CLICaps, Schema: tools.SchemaFor(true, embeddedFeature), Source: "embedded"}
		return a.confirm.schema, nil
	}
	file := schemaFile(ep)
	if !a.confirm.refresh {
		if s, ok := readSchema(file, ep, time.Now()); ok {
			a.confirm.schema = s
			return s, nil
		}
	}
	s, err := fetchSchema(ctx, a.apiClient(ep, ""))
	if err != nil {
		return nil, err
	}
	s.Endpoint = ep
	if s.Source == "server" {
		s.File = writeSchema(file, s)
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
	return s.gate(t.Name), s.Schema.Features.InteractiveConfirm, nil
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

// schemaFile is the cache file: under the user cache directory, named
// after the capability string (and the server, so two servers never share one).
func schemaFile(endpoint string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimRight(endpoint, "/")))
	return filepath.Join(dir, "dont", confirm.CacheName(confirm.CLICaps, hex.EncodeToString(sum[:8])))
}

// readSchema returns a cached schema written for this capability string
// and server less than 24 h ago.
func readSchema(file, endpoint string, now time.Time) (*toolSchema, bool) {
	if file == "" {
		return nil, false
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	var s toolSchema
	if json.Unmarshal(raw, &s) != nil || !schemaFresh(s, endpoint, now) {
		return nil, false
	}
	s.Source, s.File = "cache", file
	return &s, true
}

// schemaFresh: same capabilities, same server, fetched within the TTL (and
// not in the future).
func schemaFresh(s toolSchema, endpoint string, now time.Time) bool {
	age := now.Sub(s.FetchedAt)
	return s.Caps == confirm.CLICaps && strings.TrimRight(s.Endpoint, "/") == strings.TrimRight(endpoint, "/") &&
		age >= -time.Minute && age < schemaTTL
}

// fetchSchema asks the server for its schema, declaring this CLI's
// capabilities. A server without GET /v1/tools is an old server: no
// features, the CLI never prompts, and nothing is cached.
func fetchSchema(ctx context.Context, c apiCaller) (*toolSchema, error) {
	env, err := c.Get(ctx, "/v1/tools")
	if err != nil {
		return nil, err
	}
	s := &toolSchema{FetchedAt: time.Now().UTC(), Caps: confirm.CLICaps, Source: "server"}
	if !env.OK {
		s.Source = "server-without-schema"
		return s, nil
	}
	if err := json.Unmarshal(env.Data, &s.Schema); err != nil {
		return nil, errs.E(errs.EndpointUnreachable, "the server's tool schema is unreadable").Wrap(err)
	}
	return s, nil
}

// writeSchema caches s atomically (best effort: an unwritable cache only
// means the next run fetches again) and returns the file name.
func writeSchema(file string, s *toolSchema) string {
	if file == "" {
		return ""
	}
	raw, err := json.Marshal(s)
	if err != nil || os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return ""
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tools-*")
	if err != nil {
		return ""
	}
	_, werr := tmp.Write(raw)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		os.Remove(tmp.Name())
		return ""
	}
	return file
}

// confirmationNote ends a gated command's --help (feature on only).
func confirmationNote(t *tools.Tool, g confirm.Gate) string {
	q := `"` + strings.TrimSpace(confirm.Prompt(confirm.Display(t.Name))) + `"`
	var b strings.Builder
	b.WriteString("\nConfirmation:\n")
	if g.InteractiveOnly {
		fmt.Fprintf(&b, "  Interactive-only: it always asks %s on stderr and reads one line from stdin\n", q)
		b.WriteString("  before it sends anything. --yes (-y) does not skip the prompt; --no-input exits 2 and sends nothing.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  It asks %s on stderr and reads one line from stdin\n", q)
	b.WriteString("  before it sends anything (EOF or anything but y/yes: \"Aborted, nothing was sent.\", exit 1).\n")
	b.WriteString("  --yes (-y) confirms without asking; --no-input exits 2 instead of asking and sends nothing.\n")
	if e := g.ConfirmationExempt; e != nil {
		flag := "--" + strings.ReplaceAll(e.Param, "_", "-")
		fmt.Fprintf(&b, "  %s %s runs without asking", flag, strings.Join(e.Values, " or "))
		if e.Default != nil && contains(e.Values, *e.Default) {
			fmt.Fprintf(&b, ", and so does an omitted %s (%s is its default)", flag, *e.Default)
		}
		b.WriteString("; values match exactly (case-sensitive).\n")
	}
	return b.String()
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// gateRefusal gives a refusal of the CLI gate what to type next: the gate
// says which rule is unmet, the CLI knows the command line (path). The
// cases follow confirm.Decide's: --no-input comes before stdin.
func gateRefusal(e *errs.Error, path string, interactiveOnly, noInput, stdin bool) *errs.Error {
	if e.Code != confirm.ConfirmationRequired {
		return e // an invalid skip parameter: its code's default says it all
	}
	var step errs.Step
	switch {
	case interactiveOnly && !noInput && stdin:
		step = errs.Step{Command: path + " --args-file <file>", Description: "pass the arguments in a file and answer the prompt"}
	case interactiveOnly:
		step = errs.Step{Command: path + " …", Description: "run it at a terminal and answer the prompt (--yes does not skip it)"}
	case !noInput && stdin:
		step = errs.Step{Command: path + " --args-file - --yes", Description: "confirm on the command line"}
	default:
		step = errs.Step{Command: path + " … --yes", Description: "confirm on the command line"}
	}
	e.Remediation = []errs.Step{step}
	return e
}
