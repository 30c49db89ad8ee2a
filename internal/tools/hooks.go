package tools

import (
	"context"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
)

func init() {
	RegisterGroup("hooks", "Webhook subscriptions for approvals, spawns and held calls (admin; docs/hooks.md).")
	admin := []string{auth.RoleAdmin}
	events := make([]string, len(hooks.EventTypes))
	for i, t := range hooks.EventTypes {
		events[i] = string(t)
	}
	register("hooks.add", func() *Tool {
		return &Tool{Name: "hooks.add", Summary: "Subscribe a URL to events; the signing secret is shown once.", Roles: admin,
			Params: []Param{
				{Name: "url", Type: String, Required: true, Description: "the receiver: https (http only to loopback)"},
				{Name: "events", Type: Strings, Required: true, Description: "comma-separated or repeated: " + joinNames(events)},
				{Name: "format", Type: String, Enum: hooks.Formats, Default: string(hooks.FormatJSON), Description: "json (Standard Webhooks) or slack (an incoming-webhook URL)"},
			},
			// The hook and a keyed call's response are one commit.
			answer: presentBy(hookAdded),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return hookAdded(s.Hooks.Add(ctx, service.HookAddInput{URL: a.Str("url"), Events: a.Strs("events"), Format: a.Str("format"), Key: o.Key}))
			}}
	})
	register("hooks.list", func() *Tool {
		return &Tool{Name: "hooks.list", Summary: "List webhook subscriptions (never their secrets) with their last attempt.", Roles: admin, Annotations: Annotations{ReadOnly: true},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				return data[service.HookList](envelope.KindHooks)(s.Hooks.List(ctx))
			}}
	})
	register("hooks.remove", func() *Tool {
		return &Tool{Name: "hooks.remove", Summary: "Remove a webhook subscription; its pending deliveries fail.", Roles: admin, Annotations: Annotations{Destructive: true},
			Params: []Param{{Name: "id", Type: String, Required: true, Positional: true, Description: "hook id (hook:…)"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.HookView](envelope.KindHook)(s.Hooks.Remove(ctx, a.Str("id")))
			}}
	})
	register("hooks.test", func() *Tool {
		return &Tool{Name: "hooks.test", Summary: "Send a signed hook.test message to one hook now.", Roles: admin,
			Params: []Param{{Name: "id", Type: String, Required: true, Positional: true, Description: "hook id (hook:…)"}},
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return data[service.HookTestResult](envelope.KindHookTest)(s.Hooks.TestResuming(ctx, a.Str("id"), o.ResumeSince))
			}}
	})
	register("hooks.deliveries", func() *Tool {
		return &Tool{Name: "hooks.deliveries", Summary: "Show a hook's deliveries and delivery log, newest first, in pages (the CLI reads every page unless given --limit or --cursor).",
			Roles: admin, Annotations: Annotations{ReadOnly: true},
			Params: []Param{
				{Name: "id", Type: String, Required: true, Positional: true, Description: "hook id (hook:…)"},
				deliveriesLimitParam, cursorParam,
			},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				d, err := s.Hooks.DeliveriesPage(ctx, a.Str("id"), page(a))
				out, err := data[service.HookDeliveries](envelope.KindHookDeliveries)(d, err)
				out.Hints = moreHint("dont hooks deliveries "+a.Str("id")+limitFlag(a), d.NextCursor)
				return out, err
			}}
	})
	register("hooks.deliver", func() *Tool {
		return &Tool{Name: "hooks.deliver", Summary: "Attempt the due webhook deliveries now (dont serve does so every second).", Roles: admin,
			Params: []Param{{Name: "limit", Type: Integer, Default: 100, Description: "at most this many"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.DeliverResult](envelope.KindHookDeliver)(s.Hooks.Deliver(ctx, a.Int("limit")))
			}}
	})
}

func joinNames(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// hookAdded presents a new hook with its secret.
func hookAdded(v service.HookView, err error) (Output, error) {
	if err != nil {
		return Output{}, err
	}
	return Output{Kind: envelope.KindHook, Data: v, Hints: []string{
		"the signing secret is shown once; give it to the receiver now (it verifies webhook-signature with it)",
		"send a test delivery with: dont hooks test " + v.ID,
	}}, nil
}
