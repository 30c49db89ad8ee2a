package main

// CLI-only parts of tier escalation: the trailing command preview of
// `dont escalate … -- <command>`, the "asked, waiting" notice, NDJSON
// frames and `dont approvals watch`, the terminal client. The rules live
// in internal/approvals and internal/service; this file only wires them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
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
		cd := &countdown{}
		a.waiting = cd
		defer cd.end()
		wait, _ := c.Flags().GetBool("no-wait")
		wait = !wait
		c.SetContext(service.WithAskedNotice(c.Context(), func(ap approvals.Approval) {
			if wait {
				fmt.Fprintf(a.stderr, "asked %s: %s → %s for call %s; waiting until %s for an answer (dont approvals watch --session %s). Ctrl-C cancels the request.\n",
					ap.ID, visible.Line(string(ap.From)), visible.Line(string(ap.To)), visible.Line(ap.CallID), ap.Deadline.Local().Format("15:04:05"), visible.Line(ap.SessionID))
				a.startCountdown(cd, "waiting for a person to answer "+visible.Line(ap.ID), []string{" (Ctrl-C cancels the request)"}, ap.Deadline)
			}
		}))
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
				fmt.Fprintln(out, frameLine(f))
			}
		}
		return nil
	}
}

// frameLine is one frame for a person: its agent-written fields (call id,
// tiers, preview, who answered) are made visible, never obeyed.
func frameLine(f approvals.Frame) string {
	if f.Kind == approvals.FrameRequested {
		until := "-"
		if f.Deadline != nil {
			until = f.Deadline.Local().Format("15:04:05")
		}
		return fmt.Sprintf("#%d %s asked: %s → %s for call %s, until %s: %s", f.Cursor, visible.Line(f.RequestID), visible.Line(string(f.From)),
			visible.Line(string(f.To)), visible.Line(f.CallID), until, visible.Line(f.Preview))
	}
	return fmt.Sprintf("#%d %s %s%s", f.Cursor, visible.Line(f.RequestID), visible.Line(string(f.Verdict)), byLine(f.By))
}

// byLine is " by <who answered>", or "" when nobody did.
func byLine(by string) string {
	if by == "" {
		return ""
	}
	return " by " + visible.Line(by)
}

// toolCaller runs any tool and returns its envelope: in-process on the
// embedded store (opened once), or over the API with --endpoint /
// DONT_ENDPOINT. The watch client calls frames, approve and refuse.
type toolCaller func(ctx context.Context, tool string, args map[string]any) envelope.Envelope

func (a *app) watchCaller() (toolCaller, func(), error) {
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

// watch runs the terminal client: it long-polls the session's frames,
// reads one line per answer from in, and keeps its pending state bounded
// by the ending frames and by its own clock. With prove set (embedded),
// every answer is sent only after prove succeeds; in is not read
// meanwhile, so that prove reads the passphrase from the same terminal.
func (a *app) watch(ctx context.Context, call toolCaller, session, subscriber string, in io.Reader, prove func(context.Context) error) error {
	// On a terminal the prompt, with its countdown, is redrawn in place on
	// stderr (where long waits count down); what happens goes to stdout.
	tty := isTerminal(a.stderr)
	m := newWatchModel()
	outFile, _ := a.stdout.(*os.File)
	m.width = a.promptWidth(outFile)
	drawn := "" // the prompt on screen (terminals only)
	out := func(lines []string) {
		if len(lines) == 0 {
			return
		}
		if tty && drawn != "" {
			fmt.Fprint(a.stderr, "\r\033[K")
			drawn = ""
		}
		for _, l := range lines {
			fmt.Fprintln(a.stdout, l)
		}
	}
	// The first read makes this client a live subscriber; say so only then.
	env := call(ctx, "approvals.frames", map[string]any{"session": session, "subscriber": subscriber})
	if !env.OK {
		a.print(env)
		a.exit = present.Exit(envelope.ErrorOf(env))
		return nil
	}
	// Catch up silently with the session's history; then show what is open.
	var cursor int64
	for {
		var page service.FramesPage
		json.Unmarshal(env.Data, &page)
		for _, f := range page.Frames {
			m.Frame(f, time.Now())
		}
		cursor = page.Cursor
		if page.Count == 0 {
			break
		}
		if env = call(ctx, "approvals.frames", map[string]any{"session": session, "after": float64(cursor), "subscriber": subscriber}); !env.OK {
			a.print(env)
			a.exit = present.Exit(envelope.ErrorOf(env))
			return nil
		}
	}
	out([]string{fmt.Sprintf("watching %s as %s: y approves, n refuses the oldest open request; Ctrl-D or Ctrl-C quits", visible.Line(session), visible.Line(subscriber))})
	for _, it := range m.items() {
		out([]string{m.describe(it.frame)})
	}
	frames := make(chan approvals.Frame, 64)
	failures := make(chan envelope.Envelope, 1)
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	deliver := func(env envelope.Envelope) int64 {
		var page service.FramesPage
		json.Unmarshal(env.Data, &page)
		for _, f := range page.Frames {
			select {
			case frames <- f:
			case <-pollCtx.Done():
			}
		}
		return page.Cursor
	}
	go func() {
		for pollCtx.Err() == nil {
			env := call(pollCtx, "approvals.frames", map[string]any{"session": session, "after": float64(cursor), "wait": "2s", "subscriber": subscriber})
			if pollCtx.Err() != nil {
				return
			}
			if !env.OK {
				failures <- env
				return
			}
			cursor = deliver(env)
		}
	}()
	lines := make(chan string)
	next := make(chan struct{}) // the loop is done with a line: read the next
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	prompt := ""
	show := func(now time.Time) {
		p := m.Prompt(now)
		if tty {
			if p != drawn {
				fmt.Fprint(a.stderr, "\r\033[K"+p)
				drawn = p
			}
		} else if p != "" && m.promptKey() != prompt {
			fmt.Fprintln(a.stdout, p)
		}
		prompt = m.promptKey()
	}
	erase := func() {
		if tty && drawn != "" {
			fmt.Fprint(a.stderr, "\r\033[K")
		}
	}
	for {
		select {
		case <-ctx.Done():
			erase()
			return nil
		case env := <-failures:
			erase()
			a.print(env)
			a.exit = present.Exit(envelope.ErrorOf(env))
			return nil
		case f := <-frames:
			out(m.Frame(f, time.Now()))
		case <-tick.C:
			out(m.Tick(time.Now()))
		case line, ok := <-lines:
			if !ok {
				erase()
				return nil
			}
			drawn = "" // the terminal echoed the line and moved on
			act, said := m.Key(line, time.Now())
			out(said)
			if act != nil {
				tool := "approvals.refuse"
				if act.Approve {
					tool = "approvals.approve"
				}
				if err := provenAnswer(ctx, prove); err != nil {
					m.Unsent(act.RequestID) // still open: the person may answer it again
					out([]string{notAnswered(act, errs.As(err))})
				} else {
					// Bound to the question shown: if it is another one by now,
					// the server answers nothing (question-changed).
					env := call(ctx, tool, map[string]any{"id": act.RequestID, "shown_digest": act.ShownDigest})
					out([]string{answerLine(env, act)})
				}
			}
			select {
			case next <- struct{}{}:
			case <-ctx.Done():
			}
		}
		show(time.Now())
	}
}

// provenAnswer runs prove, if any (embedded: the passphrase).
func provenAnswer(ctx context.Context, prove func(context.Context) error) error {
	if prove == nil {
		return nil
	}
	return prove(ctx)
}

func notAnswered(act *watchAnswer, e *errs.Error) string {
	return fmt.Sprintf("%s: not answered: %s: %s", act.RequestID, visible.Line(string(e.Code)), visible.Line(e.Message))
}

func answerLine(env envelope.Envelope, act *watchAnswer) string {
	if !env.OK {
		e := envelope.ErrorOf(env)
		return fmt.Sprintf("%s: not answered: %s: %s", act.RequestID, visible.Line(string(e.Code)), visible.Line(e.Message))
	}
	var v service.ApprovalView
	json.Unmarshal(env.Data, &v)
	if v.Applied != nil && *v.Applied {
		return fmt.Sprintf("%s: %s (your answer decided)", visible.Line(v.ID), visible.Line(string(v.Verdict)))
	}
	return fmt.Sprintf("%s: the question you answered had already ended (%s); nothing was answered", visible.Line(v.ID), visible.Line(string(v.Verdict)))
}

// watchModel is the watch client's state, kept apart from I/O so that its
// rules are tested directly. A request is pending from its question frame
// until its ending frame arrives or its deadline passes on this client's
// own clock, whichever is first: a keystroke is never sent as an answer
// to a request that has ended.
//
// A keystroke answers the question that was on the screen: the one the
// prompt last showed (Prompt). If that question ends other than by this
// client's answer (the agent cancels it, another client answers it, its
// deadline passes), the next line answers nothing and says so, even when
// another question is on the screen by then: a y typed for A never
// answers B. And the answer names the digest of what was shown, so the
// server answers nothing if the question is another one.
type watchModel struct {
	pending map[string]*watchItem
	// shown is the request the prompt last showed; lost, one that ended
	// while it was the one a keystroke would answer.
	shown, lost string
	// width is the terminal's width, for wrapping questions.
	width int
}

type watchItem struct {
	frame    approvals.Frame
	deadline time.Time // on this client's clock
	seen     time.Time
	answered bool
}

// watchAnswer is what a keystroke sends.
type watchAnswer struct {
	RequestID   string
	ShownDigest string
	Approve     bool
}

func newWatchModel() *watchModel { return &watchModel{pending: map[string]*watchItem{}} }

// Frame applies a frame received at now. A question's deadline is bounded
// on the client's clock too: never later than now plus the time the
// server gave it, so a skewed or late-delivered frame cannot extend it.
func (m *watchModel) Frame(f approvals.Frame, now time.Time) []string {
	switch f.Kind {
	case approvals.FrameRequested:
		if f.Deadline == nil {
			return nil
		}
		deadline := *f.Deadline
		if own := now.Add(f.Deadline.Sub(f.At)); own.Before(deadline) {
			deadline = own
		}
		if !now.Before(deadline) {
			return nil // already dead: nothing to ask
		}
		m.pending[f.RequestID] = &watchItem{frame: f, deadline: deadline, seen: now}
		return []string{m.describe(f)}
	case approvals.FrameResolved:
		it, ok := m.pending[f.RequestID]
		if !ok {
			return nil
		}
		m.losing(it, now)
		delete(m.pending, f.RequestID)
		if f.Cause == approvals.CauseClientGone {
			return []string{fmt.Sprintf("%s: %s: the asking client went away (cleared)", visible.Line(f.RequestID), visible.Line(string(f.Verdict)))}
		}
		return []string{fmt.Sprintf("%s: %s%s (cleared)", visible.Line(f.RequestID), visible.Line(string(f.Verdict)), byLine(f.By))}
	}
	return nil
}

// describe shows a question whole, as every answering medium does
// (render.QuestionLines): session, requester, both tiers, the reason and
// the command wrapped to the terminal's width, never cut, control
// characters made visible, so that nothing can fake a line of its own,
// return the cursor or erase what the person is about to approve.
func (m *watchModel) describe(f approvals.Frame) string {
	q := render.Question{ID: f.RequestID, Session: f.SessionID, Requester: f.Requester, CallID: f.CallID,
		From: string(f.From), To: string(f.To), Reason: f.Reason, Preview: f.Preview}
	return strings.Join(render.QuestionLines(q, m.width), "\n")
}

// losing notes that it is ending: if it is the question a keystroke
// would answer and this client has not answered it, the next line
// answers nothing.
func (m *watchModel) losing(it *watchItem, now time.Time) {
	if it.answered {
		return
	}
	if t := m.target(now); t != nil && t.frame.RequestID == it.frame.RequestID {
		m.lost = it.frame.RequestID
	}
}

// target is the question the next keystroke answers: the one the prompt
// shows, else (no prompt yet) the oldest open one.
func (m *watchModel) target(now time.Time) *watchItem {
	if it, ok := m.pending[m.shown]; ok && !it.answered && now.Before(it.deadline) {
		return it
	}
	return m.Current(now)
}

// Tick clears every request whose deadline has passed on the client's clock.
func (m *watchModel) Tick(now time.Time) []string {
	var out []string
	for _, it := range m.items() {
		if !now.Before(it.deadline) {
			m.losing(it, it.deadline.Add(-time.Nanosecond))
			delete(m.pending, it.frame.RequestID)
			out = append(out, fmt.Sprintf("%s: deadline passed; cleared (nothing was sent)", visible.Line(it.frame.RequestID)))
		}
	}
	return out
}

// Current is the request the next keystroke answers: the oldest open one
// not yet answered from here.
func (m *watchModel) Current(now time.Time) *watchItem {
	for _, it := range m.items() {
		if !it.answered && now.Before(it.deadline) {
			return it
		}
	}
	return nil
}

func (m *watchModel) items() []*watchItem {
	out := make([]*watchItem, 0, len(m.pending))
	for _, it := range m.pending {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].seen.Equal(out[j].seen) {
			return out[i].seen.Before(out[j].seen)
		}
		return out[i].frame.Cursor < out[j].frame.Cursor
	})
	return out
}

// Key maps one line of input to an answer. Dead requests are cleared
// first, on the client's own clock: a line typed after the deadline is
// never sent. Only y/yes and n/no answer; anything else sends nothing.
func (m *watchModel) Key(line string, now time.Time) (*watchAnswer, []string) {
	said := m.Tick(now)
	if lost := m.lost; lost != "" {
		m.lost = ""
		if m.target(now) == nil {
			return nil, append(said, "no open request; the input was not sent")
		}
		return nil, append(said, visible.Line(lost)+" ended before your answer: the question you answered is no longer the one open; nothing was answered (the input was not sent). Read what is shown now and answer again")
	}
	it := m.target(now)
	if it == nil {
		return nil, append(said, "no open request; the input was not sent")
	}
	var approve bool
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		approve = true
	case "n", "no":
	default:
		return nil, append(said, "type y to approve or n to refuse "+visible.Line(it.frame.RequestID))
	}
	it.answered = true
	return &watchAnswer{RequestID: it.frame.RequestID, ShownDigest: it.frame.ShownDigest, Approve: approve}, said
}

// Unsent reopens a request whose answer was not sent (its passphrase
// was not proven), so the next keystroke may answer it.
func (m *watchModel) Unsent(id string) {
	if it, ok := m.pending[id]; ok {
		it.answered = false
	}
}

// Prompt is the status line: the current request and its countdown.
func (m *watchModel) Prompt(now time.Time) string {
	it := m.target(now)
	if it == nil {
		return ""
	}
	m.shown = it.frame.RequestID
	left := render.Countdown(it.deadline.Sub(now))
	more := ""
	if n := len(m.pending) - 1; n > 0 {
		more = fmt.Sprintf(" (+%d waiting)", n)
	}
	return fmt.Sprintf("%s [%s left] approve %s for call %s? [y/n]%s ", visible.Line(it.frame.RequestID), left, visible.Line(string(it.frame.To)), visible.Line(it.frame.CallID), more)
}

// promptKey identifies what the prompt is about, so that a terminal that
// cannot redraw gets a new prompt line only when the request changes.
func (m *watchModel) promptKey() string {
	for _, it := range m.items() {
		if !it.answered {
			return it.frame.RequestID
		}
	}
	return ""
}
