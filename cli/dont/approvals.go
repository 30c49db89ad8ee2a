package main

// CLI-only parts of tier escalation: the trailing command preview of
// `dont escalate … -- <command>`, the "asked, waiting" notice, NDJSON
// frames and `dont approvals watch`, the terminal client. The rules live
// in internal/approvals and internal/service; this file only wires them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/watchscreen"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/spf13/cobra"
)

// approvalsConfig reads the escalation settings: a question's deadline
// (default 120s) and the range a requester may ask for (approval_timeout_min,
// approval_timeout_max), and how recently a client must have read a session's
// frames to count as live (default 10s), each held to its setting's rule
// (internal/settings), as the Lambda functions hold them. Only a person
// sets them (config.go): DONT_APPROVAL_TIMEOUT and DONT_SUBSCRIBER_LEASE
// without a harness signal (personEnv), else approval_timeout and
// subscriber_lease of the person's config or of the workspace config they
// trusted. The commands that use them (strict) read the files and fail
// on a malformed value; the others (which only sweep) take the
// environment's and ignore a malformed one.
func (a *app) approvalsConfig(store store.ApprovalStore, strict bool) (service.Approvals, error) {
	cfg := service.Approvals{Store: store}
	var file project.Config
	if strict {
		if p, err := a.configProject(); err == nil {
			if file, err = a.projectSettings(p); err != nil {
				return cfg, err
			}
		}
	}
	for _, v := range []struct {
		env, key, inFile string
		setting          settings.Duration
		dst              *time.Duration
	}{{settings.EnvApprovalTimeout, settings.KeyApprovalTimeout, file.ApprovalTimeout, settings.ApprovalTimeout, &cfg.Timeout},
		{settings.EnvApprovalTimeoutMin, settings.KeyApprovalTimeoutMin, file.ApprovalTimeoutMin, settings.ApprovalTimeoutMin, &cfg.TimeoutMin},
		{settings.EnvApprovalTimeoutMax, settings.KeyApprovalTimeoutMax, file.ApprovalTimeoutMax, settings.ApprovalTimeoutMax, &cfg.TimeoutMax},
		{settings.EnvSubscriberLease, settings.KeySubscriberLease, file.SubscriberLease, settings.SubscriberLease, &cfg.Lease}} {
		var d time.Duration
		var err error
		switch s := a.personEnv(v.env); {
		case s != "":
			d, err = v.setting.FromEnv(v.env, s)
		case v.inFile != "":
			d, err = v.setting.FromConfig(v.key, v.inFile)
		default:
			continue
		}
		if err != nil {
			if !strict {
				continue
			}
			return cfg, err
		}
		*v.dst = d
	}
	// The reminder's share of the deadline, by the same sources.
	var share float64
	var err error
	switch v := a.personEnv(settings.EnvApprovalRemindAt); {
	case v != "":
		share, err = settings.ShareFromSource(settings.EnvApprovalRemindAt, v)
	case file.ApprovalRemindAt != "":
		share, err = settings.ShareFromSource(settings.KeyApprovalRemindAt, string(file.ApprovalRemindAt))
	}
	if err != nil && strict {
		return cfg, err
	}
	if err == nil {
		cfg.RemindAt = share
	}
	// The two-person rule, by the same sources.
	from := file.TwoPersonFrom
	if v := a.personEnv(settings.EnvTwoPersonFrom); v != "" {
		from = v
	}
	rule, err := twoPersonRule(from)
	if err != nil && strict {
		return cfg, err
	}
	if err == nil {
		cfg.TwoPersonFrom = rule
	}
	level, err := passkeyLevel(a.personEnv(settings.EnvPasskeyRequiredFrom), file.PasskeyRequiredFrom)
	if err != nil && strict {
		return cfg, err
	}
	cfg.PasskeyRequiredFrom = level
	return cfg, nil
}

// passkeyLevel reads passkey_required_from: the person's environment
// first, then the file value (from the person's config or a workspace
// config they trusted). A bad value is config-invalid.
func passkeyLevel(env, inFile string) (approvals.Tier, error) {
	name, v := settings.EnvPasskeyRequiredFrom, env
	if v == "" {
		name, v = settings.KeyPasskeyRequiredFrom, inFile
	}
	t, ok := approvals.ParsePasskeyLevel(strings.TrimSpace(v))
	if !ok {
		return "", errs.E(errs.ConfigInvalid, name+" must be a tier ("+approvals.TierNames(approvals.Tiers)+") or off, got "+strconv.Quote(v),
			errs.Step{Command: settings.KeyPasskeyRequiredFrom + " = \"danger-full-access\"  # in your own config (dont config show)", Description: "name the narrowest tier whose approve needs a passkey"}).
			Unmet(name + " is a tier or off")
	}
	return t, nil
}

// twoPersonRule reads two_person_from: a tier, or nothing for no rule.
func twoPersonRule(v string) (approvals.TwoPersonFrom, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if !approvals.Tier(v).Valid() {
		return "", errs.E(errs.ConfigInvalid, settings.KeyTwoPersonFrom+" must be a tier ("+approvals.TierNames(approvals.Tiers)+"), got "+strconv.Quote(v),
			errs.Step{Command: settings.KeyTwoPersonFrom + " = \"danger-full-access\"  # in your own ~/.config/dont/config.toml", Description: "require two approvers for danger-full-access, or remove it"}).
			Unmet(settings.KeyTwoPersonFrom + " is a tier")
	}
	return approvals.TwoPersonFrom(v), nil
}

// approvalRules are the person's approval rules of the project, for the
// calls that ask (escalate, dont serve): only they fail on a rule that
// does not load, so that a broken rule never keeps a person from
// answering, listing or auditing.
func (a *app) approvalRules() (rules.Set, error) {
	p, err := a.configProject()
	if err != nil {
		return rules.Set{}, nil
	}
	file, err := a.projectSettings(p)
	if err != nil || len(file.Rules) == 0 {
		return rules.Set{}, err
	}
	return loadRules(file.Rules)
}

// loadRules checks the person's approval rules ([[rules]], from their
// config or a workspace config they trusted: project.Resolve) against
// their own match and not_match examples. A rule that fails them refuses
// every command that would use the rules, naming the rule.
func loadRules(rs []rules.Rule) (rules.Set, error) {
	set, err := rules.Load(rs)
	var p *rules.Problem
	if errors.As(err, &p) {
		return set, errs.E(errs.ConfigInvalid, "the approval rule "+strconv.Quote(p.Rule)+" does not load: "+p.Message,
			errs.Step{Command: "dont config show", Description: "see where the rule comes from, then fix or remove it in that file ([[rules]], docs/harnesses.md)"}).
			Unmet("every rule matches its match examples and none of its not_match examples").With("rule", p.Rule)
	}
	return set, err
}

// usesApprovals reports whether a tool reads the escalation settings.
func usesApprovals(t *tools.Tool) bool {
	return t.Name == "escalate" || strings.HasPrefix(t.Name, "approvals.") || strings.HasPrefix(t.Name, "sessions.")
}

// approvalCommands adjusts the generated escalation commands (once they
// are built) and adds the CLI-only ones.
func (a *app) approvalCommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "escalate":
			a.later(c, func() { a.escalateCommand(c) })
		case "approvals":
			for _, sub := range c.Commands() {
				switch sub.Name() {
				case "frames":
					a.later(sub, func() { a.framesCommand(sub) })
				case "wait":
					a.later(sub, func() { a.waitCountdown(sub) })
				}
			}
			c.AddCommand(a.watchCommand())
		}
	}
}

// escalateCommand takes the command preview after `--` and tells the
// person at the terminal where the question went while it waits.
func (a *app) escalateCommand(c *cobra.Command) {
	c.Use = "escalate --session <ses:…> --call <call-id> --to <tier> --reason <why> [--no-wait] -- <command…>"
	c.Args = cobra.ArbitraryArgs
	run := c.RunE
	c.RunE = func(c *cobra.Command, argv []string) error {
		if len(argv) > 0 {
			if c.Flags().Changed("preview") {
				return errs.E(errs.Usage, "give the command either after -- or with --preview, not both",
					errs.Step{Command: "dont escalate … -- make install", Description: "put the command after --"})
			}
			if err := c.Flags().Set("preview", shellJoin(argv)); err != nil {
				return errs.E(errs.Usage, err.Error())
			}
		}
		cd := &watchscreen.Countdown{}
		a.waiting = cd
		defer cd.End()
		wait, _ := c.Flags().GetBool("no-wait")
		wait = !wait
		a.asked = func(ap approvals.Approval) {
			if wait {
				fmt.Fprintf(a.stderr, "asked %s: %s → %s for call %s; waiting until %s for an answer (dont approvals watch --session %s). Ctrl-C cancels the request.\n",
					ap.ID, visible.Line(string(ap.From)), visible.Line(string(ap.To)), visible.Line(ap.CallID), ap.Deadline.Local().Format("15:04:05"), visible.Line(ap.SessionID))
				a.startCountdown(cd, "waiting for a person to answer "+visible.Line(ap.ID), []string{" (Ctrl-C cancels the request)"}, ap.Deadline)
			}
		}
		if wait && a.remote() != "" {
			// Over the API the question is asked by the server: count the
			// time waited until its verdict comes back.
			a.startCountdown(cd, "asked a person for "+visible.Line(c.Flags().Lookup("to").Value.String()), []string{" (Ctrl-C cancels the request)"}, time.Time{})
		}
		return run(c, nil)
	}
}

// shellJoin renders argv as one shell-like line for the approver to read.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, s := range argv {
		if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`|&;<>()*?[]#~!{}") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}

// framesCommand prints a frames page as NDJSON: one envelope of kind
// "frame" per frame (a person at a terminal gets one line each). No new
// frame within --wait prints nothing; the reader keeps its cursor.
func (a *app) framesCommand(c *cobra.Command) {
	run := c.RunE
	c.RunE = func(c *cobra.Command, argv []string) error {
		machine, out := a.machine(), a.stdout
		var buf bytes.Buffer
		a.stdout = &buf // the generated command writes one envelope here
		err := run(c, argv)
		a.stdout = out
		if err != nil {
			return err
		}
		var env envelope.Envelope
		if json.Unmarshal(buf.Bytes(), &env) != nil {
			out.Write(buf.Bytes())
			return nil
		}
		var page service.FramesPage
		if !env.OK || env.Kind != envelope.KindFrames || json.Unmarshal(env.Data, &page) != nil {
			a.print(env)
			return nil
		}
		for i, f := range page.Frames {
			line := env
			line.Kind = envelope.KindFrame
			line.Data, _ = envelope.MarshalData(f)
			if i > 0 {
				line.Warnings, line.Hints = []envelope.Warning{}, []string{}
			}
			if machine {
				out.Write(envelope.Marshal(line))
			} else {
				fmt.Fprintln(out, watchscreen.FrameLine(f))
			}
		}
		return nil
	}
}

// watchCaller runs any tool and returns its envelope: in-process on the
// embedded store (opened once), or over the API with --endpoint /
// DONT_ENDPOINT. The watch client calls frames, approve and refuse.
func (a *app) watchCaller() (watchscreen.Caller, func(), error) {
	if err := a.loginProblem(); err != nil {
		return nil, nil, err
	}
	if ep := a.remote(); ep != "" {
		cl := a.apiClient(ep, a.storedToken(ep))
		return func(ctx context.Context, tool string, args map[string]any) envelope.Envelope {
			// An answer typed at the watch prompt is a person's confirmation.
			env, err := cl.CallConfirmed(ctx, tool, args, tool == "approvals.approve" || tool == "approvals.refuse")
			if err != nil {
				return envelope.Fail(err, nil)
			}
			return env
		}, func() {}, nil
	}
	frames, _ := tools.Lookup("approvals.frames")
	svc, closeStore, err := a.embedded(frames)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, tool string, args map[string]any) envelope.Envelope {
		start := time.Now()
		// A line typed at the controlling terminal, proven by the
		// passphrase, is a person's answer: it runs as the person the
		// record names (a.person, set by the proof).
		res, err := tools.CallGated(service.WithPrincipal(ctx, a.principal()), svc, tool, args, confirm.Arrival{Contract: true, CLIConfirmed: true})
		return a.envelopeOf(res, err, start)
	}, closeStore, nil
}

func (a *app) watchCommand() *cobra.Command {
	var session, subscriber string
	c := &cobra.Command{
		Use:   "watch",
		Short: "Answer a session's escalations at the terminal: each open request with a countdown; y approves, n refuses.",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			if session == "" {
				session = a.getenv("DONT_SESSION")
			}
			if session == "" {
				return errs.E(errs.Usage, "watch: --session is required", errs.Step{Command: "dont approvals watch --session ses:…", Description: "name the session to watch"})
			}
			if subscriber == "" {
				subscriber = "watch:" + a.author()
			}
			answers := io.Reader(a.stdin)
			var prove func(context.Context) error
			if a.remote() == "" {
				// Embedded, answers are a person's: read them from the
				// controlling terminal, never from stdin, each proven by
				// the approver passphrase (passphrase.go).
				tty, err := a.personTerminal("answering escalations with dont approvals watch")
				if err != nil {
					return err
				}
				defer tty.Close()
				root, err := a.projectRoot()
				if err != nil {
					return err
				}
				if _, _, err := a.loadPassphrase(root); err != nil {
					return err
				}
				answers = tty
				prove = func(ctx context.Context) error {
					_, err := a.proveAnswer(ctx, tty, true)
					return err
				}
			}
			call, closeCall, err := a.watchCaller()
			if err != nil {
				return err
			}
			defer closeCall()
			return a.watch(c.Context(), call, session, subscriber, answers, prove)
		},
	}
	c.Flags().StringVar(&session, "session", "", "session id (ses:…; default $DONT_SESSION)")
	markRequired(c.Flags().Lookup("session"))
	c.Flags().StringVar(&subscriber, "subscriber", "", "this client's name for its subscriber lease")
	return c
}

// watch runs the terminal screen (internal to cli/dont/watchscreen) on
// this process's streams; a failed frames read ends it with its envelope.
func (a *app) watch(ctx context.Context, call watchscreen.Caller, session, subscriber string, in io.Reader, prove func(context.Context) error) error {
	outFile, _ := a.stdout.(*os.File)
	failed := watchscreen.Run(ctx, watchscreen.Screen{Call: call, Session: session, Subscriber: subscriber, In: in, Prove: prove,
		Out: a.stdout, Status: a.stderr, Redraw: isTerminal(a.stderr), Width: a.promptWidth(outFile)})
	if failed != nil {
		a.print(*failed)
		a.exit = present.Exit(envelope.ErrorOf(*failed))
	}
	return nil
}
