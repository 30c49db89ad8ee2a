package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dont-cli/dont/cli/dont/confirmclient"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// conventions adds what agents and shells expect of a CLI: --plain,
// `dont completion <shell>`, and the `dont help config` topic. --help and
// -h are cobra's, on every command, and print the same text as
// `dont help <command>`, on stdout.
func (a *app) conventions(root *cobra.Command) {
	root.PersistentFlags().BoolVar(&a.plain, "plain", false, "no colour or other styling in human output (as NO_COLOR does)")
	root.CompletionOptions.DisableDefaultCmd = true // replaced by `completion`
	root.AddCommand(a.completionsCommand(root))
}

func (a *app) completionsCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:       "completion <bash|zsh|fish|powershell>",
		Aliases:   []string{"completions"}, // its first name, kept for scripts that call it
		Short:     "Print the shell completion script for bash, zsh, fish or powershell.",
		Long:      "Print the shell completion script for bash, zsh, fish or powershell.\n\n  source <(dont completion bash)\n  dont completion zsh > \"${fpath[1]}/_dont\"\n  dont completion fish > ~/.config/fish/completions/dont.fish\n  dont completion powershell | Out-String | Invoke-Expression",
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      a.argCount(1),
		RunE: func(c *cobra.Command, argv []string) error {
			switch argv[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(a.stdout)
			}
			return errs.E(errs.Usage, "no completion script for shell "+quote(argv[0])+"; choose bash, zsh, fish or powershell",
				errs.Step{Command: "dont completion bash", Description: "print the bash script"}).Unmet("shell is one of bash, zsh, fish, powershell")
		},
	}
}

// usageError makes an error cobra produced by itself (an unknown command)
// a usage error: exit 2 and an envelope with remediation. Cobra fails those
// before it parses flags, so --json is looked for in argv.
func (a *app) usageError(err error, argv []string) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	for _, arg := range argv {
		if arg == "--" {
			break
		}
		a.jsonOut = a.jsonOut || arg == "--json"
	}
	return errs.E(errs.Usage, err.Error(), errs.Step{Command: "dont help", Description: "list the commands"})
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// styles decides colour per stream: only for a terminal, and never with
// --plain, NO_COLOR (any non-empty value) or TERM=dumb.
func (a *app) styles() styles {
	off := a.plain || a.getenv("NO_COLOR") != "" || a.getenv("TERM") == "dumb"
	return styles{out: !off && isTerminal(a.stdout), err: !off && isTerminal(a.stderr)}
}

// styles says whether stdout and stderr are styled.
type styles struct{ out, err bool }

// callEach runs the tool once, or — when the entity id is "-" — once per id
// read from stdin (one per line, blank lines skipped), printing one envelope
// per id as NDJSON, against the embedded store or the remote API alike. The
// exit code is the highest of the per-id codes: 0 only if every id
// succeeded, and an interruption beats everything.
func (a *app) callEach(ctx context.Context, t *tools.Tool, args map[string]any) error {
	if args["id"] != "-" {
		return a.call(ctx, t, args)
	}
	one, release, err := a.caller(t)
	if err != nil {
		return err
	}
	defer release()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(a.stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	n, worst := 0, present.ExitOK
	for {
		var line string
		var more bool
		select {
		case line, more = <-lines:
		case <-ctx.Done():
		}
		if !more {
			break
		}
		id := strings.TrimSpace(line)
		if id == "" {
			continue
		}
		n++
		args["id"] = id
		env, exit := one(ctx, args)
		a.stdout.Write(envelope.Marshal(env))
		worst = max(worst, exit)
	}
	switch {
	case ctx.Err() != nil:
		a.exit = max(worst, present.ExitInterrupt)
	case n == 0:
		return errs.E(errs.Usage, t.Name+" -: no ids on stdin", errs.Step{Command: "dont list --json | jq -r '.data.entities[].id' | dont " + t.Name + " -", Description: "pipe entity ids, one per line"})
	default:
		a.exit = worst
	}
	return nil
}

// caller returns a function that runs one call of t and gives its envelope
// and exit code: through the remote API when an endpoint is set, else
// against the embedded store, opened once for all the calls.
func (a *app) caller(t *tools.Tool) (func(context.Context, map[string]any) (envelope.Envelope, int), func(), error) {
	if err := a.loginProblem(); err != nil {
		return nil, nil, err
	}
	if ep := a.remote(); ep != "" {
		c := a.apiClient(ep, a.storedToken(ep))
		return func(ctx context.Context, args map[string]any) (envelope.Envelope, int) {
			start := time.Now()
			env, err := c.CallConfirmed(ctx, t.Name, args, a.confirm.confirmed)
			if err != nil {
				return a.envelopeOf(tools.Output{}, err, start), present.Exit(err)
			}
			if id, held := confirmclient.HeldID(env); held && a.confirm.feature {
				err := a.staleError(id)
				return a.envelopeOf(tools.Output{}, err, start), present.Exit(err)
			}
			if !env.OK {
				return env, present.Exit(envelope.ErrorOf(env))
			}
			return env, present.ExitOK
		}, func() {}, nil
	}
	svc, release, err := a.embedded(t)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, args map[string]any) (envelope.Envelope, int) {
		start := time.Now()
		res, err := tools.CallGated(ctx, svc, t.Name, args, a.arrival())
		if err == nil && tools.Held(res) {
			err = a.staleError(res.Data.(service.HeldView).ID)
		}
		return a.envelopeOf(res, err, start), present.Exit(err)
	}, release, nil
}

// envelopeOf is the envelope of one call that started at start.
func (a *app) envelopeOf(res tools.Output, err error, start time.Time) envelope.Envelope {
	var env envelope.Envelope
	if err == nil {
		if env, err = envelope.New(res.Kind, res.Data, append(res.Warnings, a.settings.notices...), res.Hints); err != nil {
			err = errs.E(errs.Internal, "cannot encode the result").Wrap(err)
		}
	}
	if err != nil {
		env = envelope.Fail(err, append(res.Warnings, a.settings.notices...))
	}
	env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds(), RequestID: ids.New(ids.Request, start), Mode: string(a.mode)}
	return env
}

// pipeGuard is stdout or stderr with SIGPIPE turned into a quiet ending:
// once the reader has gone (`dont list | head -c1`), writes are dropped and
// the process exits 0 instead of dying of the signal.
type pipeGuard struct {
	f      *os.File
	broken atomic.Bool
}

func (g *pipeGuard) Write(p []byte) (int, error) {
	if g.broken.Load() {
		return len(p), nil
	}
	n, err := g.f.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		g.broken.Store(true)
		return len(p), nil
	}
	return n, err
}

// Fd lets isTerminal see through the guard.
func (g *pipeGuard) Fd() uintptr { return g.f.Fd() }
