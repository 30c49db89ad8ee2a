package main

// `dont hook claude-code|codex`: the harnesses' PermissionRequest (and
// PreToolUse) hook. It reads the harness's payload on stdin, asks the
// question as a dont escalation — through the embedded store, or
// DONT_ENDPOINT with a harness token — waits for the verdict and writes
// the harness's decision JSON on stdout. Every failure is a deny
// (docs/harnesses.md, "Permission hooks"): the decision is written by one
// deferred function that starts from a deny and recovers a panic.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/harnesshook"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// maxHookPayload bounds what the hook reads of stdin.
const maxHookPayload = 1 << 20

// defaultHookTier is the default tier of the dont session the hook opens
// for a harness session when the person set none (harness_tier):
// read-only, so that every write, command and network request is a
// question (or a rule's answer).
const defaultHookTier = approvals.ReadOnly

// hookTier is the person's harness_tier (their config, or a workspace
// config they trusted), else read-only.
func (a *app) hookTier() (approvals.Tier, error) {
	p, err := a.locateProject()
	if err != nil {
		return defaultHookTier, nil
	}
	cfg, err := a.projectSettings(p)
	if err != nil {
		return defaultHookTier, err
	}
	if cfg.HarnessTier == "" {
		return defaultHookTier, nil
	}
	if t := approvals.Tier(cfg.HarnessTier); t.Valid() {
		return t, nil
	}
	return defaultHookTier, errs.E(errs.ConfigInvalid, "harness_tier must be a tier ("+approvals.TierNames(approvals.Tiers)+"), got "+fmt.Sprintf("%q", cfg.HarnessTier)).
		Unmet("harness_tier is a tier")
}

func (a *app) hookCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hook <claude-code|codex>",
		Short: "A harness's PermissionRequest hook: asks the tool call as a dont question and writes the harness's allow/deny JSON.",
		Long: `Reads the harness's PermissionRequest (or PreToolUse) payload on stdin, asks
the tool call as a dont escalation (session per harness session, the
command or edit as the preview, the model's justification as the reason),
waits for the answer and writes the harness's decision JSON on stdout.
The person's rules answer routine calls first. Every failure — dont
unreachable, a bad payload, an unknown tool, the deadline, nobody
watching — is a deny with a message saying what happened. It always
exits 0: the decision is the JSON. dont harness install writes the
configuration that runs it (docs/harnesses.md).`,
		Example: `  dont hook claude-code < payload.json   # as Claude Code runs it, from .claude/settings.json
  dont hook codex < payload.json         # as Codex runs it, from .codex/hooks.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			h := harnesshook.Harness("")
			if len(args) == 1 {
				h = harnesshook.Harness(args[0])
			}
			a.runHook(c.Context(), h)
			return nil
		},
	}
}

// runHook writes exactly one decision on stdout, whatever happens: it
// starts as a deny and only an approval (or a read the session's tier
// covers) turns it into an allow.
func (a *app) runHook(ctx context.Context, h harnesshook.Harness) {
	event := harnesshook.EventPermissionRequest
	outcome := harnesshook.Outcome{Ending: harnesshook.Failed, Detail: "the hook ended before a verdict"}
	defer func() {
		if r := recover(); r != nil {
			outcome = harnesshook.Outcome{Ending: harnesshook.Failed, Detail: "internal error in the hook"}
			fmt.Fprintf(a.stderr, "dont hook: internal error: %v\n", r)
		}
		a.stdout.Write(harnesshook.Decision(event, outcome))
	}()
	raw, err := io.ReadAll(io.LimitReader(a.stdin, maxHookPayload+1))
	if err != nil || len(raw) > maxHookPayload {
		outcome = harnesshook.Outcome{Ending: harnesshook.BadPayload, Detail: "the payload could not be read whole"}
		return
	}
	event = harnesshook.EventOf(raw)
	if !h.Valid() {
		outcome = harnesshook.Outcome{Ending: harnesshook.BadPayload, Detail: "dont hook takes one harness: claude-code or codex"}
		return
	}
	a.hookFault()
	req, err := harnesshook.Parse(h, raw)
	if err != nil {
		outcome = problemOutcome(err)
		return
	}
	outcome = a.askHarness(ctx, req)
	fmt.Fprintf(a.stderr, "dont hook: %s\n", outcome.Message())
}

func problemOutcome(err error) harnesshook.Outcome {
	if p, ok := err.(*harnesshook.Problem); ok {
		return harnesshook.Outcome{Ending: p.Kind, Detail: p.Message}
	}
	return harnesshook.Outcome{Ending: harnesshook.Failed, Detail: err.Error()}
}

// askHarness asks req as a dont question and returns how it ended.
func (a *app) askHarness(ctx context.Context, req harnesshook.Request) harnesshook.Outcome {
	tier, err := a.hookTier()
	if err != nil {
		return a.refusalOutcome(ctx, err)
	}
	if t := approvals.Tier(req.Tier); t.Valid() && approvals.Rank(t) <= approvals.Rank(tier) {
		return harnesshook.Outcome{Ending: harnesshook.Covered}
	}
	ses, out := a.hookSession(ctx, req, tier)
	if out != nil {
		return *out
	}
	call := req.CallID
	if call == "" {
		call = string(req.Harness) + "-" + nonce()
	}
	var granted struct {
		ID         string `json:"approval_id"`
		AnsweredBy string `json:"answered_by"`
	}
	args := map[string]any{"session": ses, "call": call, "to": req.Tier, "reason": req.Reason, "preview": req.Preview}
	if a.remote() == "" {
		err = a.hookCall(ctx, "escalate", args, &granted)
	} else {
		err = a.remoteEscalate(ctx, args, &granted)
	}
	if err == nil {
		return harnesshook.Outcome{Ending: harnesshook.Approved, ApprovalID: granted.ID, AnsweredBy: granted.AnsweredBy}
	}
	return a.refusalOutcome(ctx, err)
}

// remoteWaitSlice bounds one wait request to the endpoint, below the
// HTTP client's own timeout; the hook waits again until the verdict.
const remoteWaitSlice = 45 * time.Second

// remoteEscalate asks through the endpoint without waiting, then waits
// in slices: the server's question keeps its deadline, and the requester
// (this hook) stays until the verdict.
func (a *app) remoteEscalate(ctx context.Context, args map[string]any, out any) error {
	args["no_wait"] = true
	var asked approvals.Approval
	if err := a.hookCall(ctx, "escalate", args, &asked); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "dont hook: asked %s; waiting for a person\n", asked.ID)
	for {
		wctx, cancel := context.WithTimeout(ctx, remoteWaitSlice)
		err := a.hookCall(wctx, "approvals.wait", map[string]any{"id": asked.ID}, out)
		sliceEnded := wctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && sliceEnded && errs.Is(err, errs.Interrupted) {
			continue
		}
		return err
	}
}

// hookSession is the dont session of the harness session: the oldest one
// of its name at the person's harness tier, else a new one. A session of
// that name at another tier (an agent may open one) is not used.
func (a *app) hookSession(ctx context.Context, req harnesshook.Request, tier approvals.Tier) (string, *harnesshook.Outcome) {
	var list struct {
		Sessions []approvals.Session `json:"sessions"`
	}
	if err := a.hookCall(ctx, "sessions.list", map[string]any{}, &list); err != nil {
		o := a.refusalOutcome(ctx, err)
		return "", &o
	}
	for _, s := range list.Sessions {
		if s.Name == req.SessionName && s.Tier == tier {
			return s.ID, nil
		}
	}
	var opened approvals.Session
	if err := a.hookCall(ctx, "sessions.open", map[string]any{"tier": string(tier), "name": req.SessionName}, &opened); err != nil {
		o := a.refusalOutcome(ctx, err)
		return "", &o
	}
	return opened.ID, nil
}

// refusalOutcome maps the error of a call to how the request ended; the
// approval's record, when there is one, names who answered.
func (a *app) refusalOutcome(ctx context.Context, err error) harnesshook.Outcome {
	if u, ok := err.(hookUnreachable); ok {
		return harnesshook.Outcome{Ending: harnesshook.Unreachable, Detail: u.msg}
	}
	o := service.HookOutcome(err)
	var rec approvals.Approval
	if o.Ending == harnesshook.Refused && o.ApprovalID != "" && a.hookCall(ctx, "approvals.show", map[string]any{"id": o.ApprovalID}, &rec) == nil {
		o = service.HookAnswered(o, rec)
	}
	return o
}

// hookUnreachable is a call that never reached dont (the endpoint).
type hookUnreachable struct{ msg string }

func (u hookUnreachable) Error() string { return u.msg }

// hookCall runs one tool as the harness — never as the person, whatever
// this process's environment — through DONT_ENDPOINT or the embedded
// store, and decodes its data into out.
func (a *app) hookCall(ctx context.Context, name string, args map[string]any, out any) error {
	t, ok := tools.Lookup(name)
	if !ok {
		return errs.E(errs.Internal, "no tool "+name)
	}
	var data json.RawMessage
	if ep := a.remote(); ep != "" {
		env, err := a.apiClient(ep, a.getenv("DONT_TOKEN")).CallConfirmed(ctx, name, args, false)
		if err != nil {
			if errs.Is(err, errs.EndpointUnreachable) {
				return hookUnreachable{msg: errs.As(err).Message}
			}
			return err
		}
		if !env.OK {
			return envelope.ErrorOf(env)
		}
		data = env.Data
	} else {
		svc, closeStore, err := a.embedded(t)
		if err != nil {
			return err
		}
		defer closeStore()
		defer a.deliverAround(ctx, svc, t)()
		who := auth.Harness("harness:" + a.author())
		res, err := tools.CallGated(service.WithPrincipal(ctx, who), svc, name, args, a.arrival())
		if err != nil {
			return err
		}
		if data, err = json.Marshal(res.Data); err != nil {
			return errs.E(errs.Internal, "cannot encode "+name+"'s result").Wrap(err)
		}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errs.E(errs.Internal, "cannot read "+name+"'s result").Wrap(err)
	}
	return nil
}

// nonce is a call id's unique tail when the harness sends no tool-use id.
func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
