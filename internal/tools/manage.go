package tools

import (
	"context"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
)

// The gated actions of the confirmation contract that are not plain
// ledger verbs: cancelling a spawn, the --op dispatched management
// actions, revoking every token, and the server's own confirmation flow.
func init() {
	RegisterGroup("spawns", "List spawn requests (--pending, --timed-out, --all), cancel one, or manage them with --op.")
	RegisterGroup("confirmations", "Calls held for an approver: list, show, confirm (runs the call once) or refuse.")

	spawnID := Param{Name: "request_id", Type: String, Required: true, Positional: true, Description: "the spawn request (spawn:…)"}
	register("spawns.cancel", func() *Tool {
		return &Tool{Name: "spawns.cancel", Summary: "Cancel a pending spawn: it resolves as cancelled and the entity gets its pre-spawn status back.",
			Params: []Param{spawnID, {Name: "reason", Type: String, Description: "why it is cancelled"}},
			sweep:  always, answer: presentAs[service.CancelResult](envelope.KindSpawnCancel),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return withWarnings[service.CancelResult](envelope.KindSpawnCancel)(s.Spawns.Cancel(ctx, a.Str("request_id"), a.Str("reason"), o.Key))
			}}
	})
	register("spawns.heartbeat", func() *Tool {
		return &Tool{Name: "spawns.heartbeat", Summary: "Keep a pending spawn alive: move its expires_at to now + --extend (never past spawn_max_lease from its issue).",
			Params: []Param{spawnID, {Name: "extend", Type: String, Description: "how far from now the expiry moves, a Go duration (default: the project's spawn timeout)"}},
			sweep:  always, // an expired spawn is timed out first: a heartbeat never revives it
			answer: presentAs[service.HeartbeatResult](envelope.KindSpawnHeartbeat),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				var extend time.Duration
				if v := a.Str("extend"); v != "" {
					d, err := settings.SpawnHeartbeat.FromArgument("extend", v,
						errs.Step{Command: "dont spawns heartbeat " + a.Str("request_id") + " --extend " + settings.SpawnHeartbeat.Example, Description: "give --extend as " + settings.SpawnHeartbeat.Rule()})
					if err != nil {
						return Output{}, err
					}
					extend = d
				}
				return withWarnings[service.HeartbeatResult](envelope.KindSpawnHeartbeat)(s.Spawns.Heartbeat(ctx, a.Str("request_id"), extend, o.Key))
			}}
	})
	register("spawns.manage", func() *Tool {
		return &Tool{Name: "spawns.manage", Summary: "One action for spawn requests: --op list, show or cancel (--op is required).",
			Params: []Param{
				{Name: "op", Type: String, Short: "o", Required: true, Enum: []string{"list", "show", "cancel"}, Description: "list, show or cancel"},
				{Name: "request_id", Type: String, Description: "the spawn request (show, cancel)"},
				{Name: "view", Type: String, Enum: []string{service.ViewPending, service.ViewTimedOut, service.ViewAll}, Description: "pending, timed-out or all (list; default all)"},
				{Name: "reason", Type: String, Description: "why it is cancelled (cancel)"},
				limitParam, cursorParam,
			},
			check: func(a Args) error {
				if op := a.Str("op"); op != "list" {
					return need(a, "spawns.manage", op, "request_id")
				}
				return nil
			},
			// Its one write, a cancel, is one commit; list and show write nothing.
			sweep: always, answer: presentAs[service.CancelResult](envelope.KindSpawnCancel),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				switch a.Str("op") {
				case "list":
					l, err := s.Spawns.ListPage(ctx, a.Str("view"), page(a))
					out, err := data[service.SpawnList](envelope.KindSpawns)(l, err)
					out.Hints = moreHint("dont spawns manage --op list --view "+l.View+limitFlag(a), l.NextCursor)
					return out, err
				case "show":
					return data[service.SpawnView](envelope.KindSpawn)(s.Spawns.Record(ctx, a.Str("request_id")))
				default:
					return withWarnings[service.CancelResult](envelope.KindSpawnCancel)(s.Spawns.Cancel(ctx, a.Str("request_id"), a.Str("reason"), o.Key))
				}
			}}
	})

	admin := []string{auth.RoleAdmin}
	register("tokens.manage", func() *Tool {
		return &Tool{Name: "tokens.manage", Summary: "One action for bearer tokens: --op list (the default), create or revoke.", Roles: admin,
			Annotations: Annotations{PersonOnly: true},
			Params: []Param{
				{Name: "op", Type: String, Short: "o", Enum: []string{"list", "create", "revoke"}, Default: "list", Description: "list (default), create or revoke"},
				{Name: "role", Type: String, Enum: auth.Roles, Description: "harness, approver or admin (create)"},
				{Name: "name", Type: String, Description: "a label (create)"},
				{Name: "id", Type: String, Description: "token id tok:… (revoke)"},
			},
			// --op create: the token and a keyed call's response are one commit.
			answer: presentBy(CreatedToken),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				switch a.Str("op") {
				case "create":
					if err := need(a, "tokens.manage", "create", "role"); err != nil {
						return Output{}, err
					}
					return CreatedToken(s.Credentials.CreateKeyed(ctx, a.Str("role"), a.Str("name"), o.Key))
				case "revoke":
					if err := need(a, "tokens.manage", "revoke", "id"); err != nil {
						return Output{}, err
					}
					return token(s.Credentials.Revoke(ctx, a.Str("id")))
				default:
					return data[service.TokenList](envelope.KindTokens)(s.Credentials.List(ctx))
				}
			}}
	})
	register("tokens.revoke-all", func() *Tool {
		return &Tool{Name: "tokens.revoke-all", Summary: "Revoke every bearer token of the project at once (incident response; interactive only).", Roles: admin,
			Annotations: Annotations{PersonOnly: true},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				v, err := s.Credentials.RevokeAll(ctx)
				if err != nil {
					return Output{}, err
				}
				return Output{Kind: envelope.KindTokensRevoked, Data: v,
					Hints: []string{"dont tokens create --role <role>  # on the project's machine, to issue new tokens"}}, nil
			}}
	})

	confID := Param{Name: "id", Type: String, Required: true, Positional: true, Description: "the confirmation (conf:…)"}
	deciders := []string{auth.RoleApprover, auth.RoleAdmin}
	register("confirmations.list", func() *Tool {
		return &Tool{Name: "confirmations.list", Summary: "List the calls waiting for confirmation (--all: every one ever held).", Annotations: Annotations{ReadOnly: true}, Roles: deciders,
			Params: []Param{{Name: "all", Type: Boolean, Description: "include confirmed, refused and expired ones"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.ConfirmationList](envelope.KindConfirmations)(s.Held.List(ctx, a.Bool("all")))
			}}
	})
	register("confirmations.show", func() *Tool {
		return &Tool{Name: "confirmations.show", Summary: "Show one held call and how it ended.", Annotations: Annotations{ReadOnly: true}, Roles: deciders,
			Params: []Param{confID},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return confirmation(s.Held.Show(ctx, a.Str("id")))
			}}
	})
	register("confirmations.confirm", func() *Tool {
		return &Tool{Name: "confirmations.confirm", Summary: "Confirm a held call: it runs now, exactly once (an approver or admin who may call it, never the token that asked).", Roles: deciders,
			Annotations: Annotations{Presence: true},
			Params:      []Param{confID, shownDigest(true, "held call")},
			run:         runConfirmed}
	})
	register("confirmations.refuse", func() *Tool {
		return &Tool{Name: "confirmations.refuse", Summary: "Refuse a held call: it never runs (approver or admin).", Roles: deciders,
			Params: []Param{confID, {Name: "reason", Type: String, Description: "why"}, shownDigest(false, "held call")},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return confirmation(s.Held.Refuse(ctx, a.Str("id"), a.Str("reason"), a.Str("shown_digest")))
			}}
	})
}

// runConfirmed is `confirmations confirm`: the conditional write
// pending → executing decides the one confirm that runs the held call;
// every other confirm changes nothing. The confirmer receives the call's
// own result; the record keeps only a summary of it.
//
// Before it claims anything, the confirmer must pass MayConfirm and the
// requester's token must still be live; a refused confirm changes nothing.
func runConfirmed(ctx context.Context, s *service.Service, a Args) (Output, error) {
	shown, err := s.Held.Show(ctx, a.Str("id")) // its state as of now: past its deadline, expired
	if err != nil {
		return Output{}, err
	}
	held := shown.Pending
	if held.State == confirm.StatePending { // a closed one only reports how it ended
		if err := MayConfirm(s.PrincipalOf(ctx), held); err != nil {
			return Output{}, err
		}
	}
	if err := s.Held.CheckRequesterLive(ctx, held); err != nil {
		return Output{}, err
	}
	p, dup, err := s.Held.Claim(ctx, a.Str("id"), a.Str("shown_digest"))
	if err != nil {
		return Output{}, err
	}
	if dup != nil {
		return Output{Kind: envelope.KindConfirmation, Data: dup.View, Warnings: []envelope.Warning{dup.Warning}}, nil
	}
	res, callErr := Call(ctx, s, p.Tool, p.Args)
	o := outcomeOf(res, callErr)
	if err := s.Held.Finish(context.WithoutCancel(ctx), p, o); err != nil {
		res.Warnings = append(res.Warnings, warning(envelope.WarnConfirmationRecordFailed, p.ID+" ran, but its record still says executing: "+errs.As(err).Message))
	}
	res.Hints = append(res.Hints, p.ID+" confirmed: "+p.Tool+" ran once (dont confirmations show "+p.ID+")")
	return res, callErr
}

func need(a Args, tool, op, param string) error {
	if a.Str(param) != "" {
		return nil
	}
	msg := "--op " + op + " needs " + param
	return errs.E(errs.Usage, tool+": "+msg, errs.Step{Command: "dont " + cliPath(tool) + " --help", Description: "see the parameters"}).Unmet(msg)
}

func cliPath(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i] + " " + name[i+1:]
		}
	}
	return name
}
