package main

import (
	"context"
	"strings"

	"github.com/dont-cli/dont/cli/dont/deliveryworker"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

// hooksConfig is the webhook configuration of the project: the store, the
// address policy and the delivering client, and the approvals page's URL.
// Both settings are a person's (DONT_HOOKS_ALLOW_PRIVATE and
// DONT_PUBLIC_URL without a harness signal, else [hooks] of the person's
// config or of the trusted workspace config: config.go).
func (a *app) hooksConfig(p project.Project, store *sqlite.Store) (service.HooksConfig, error) {
	cfg, err := a.projectSettings(p)
	if err != nil {
		return service.HooksConfig{}, err
	}
	allow := strings.Join(cfg.Hooks.AllowPrivate, ",")
	if v := a.personEnv(settings.EnvHooksAllowPrivate); v != "" {
		allow = v
	}
	prefixes, err := hooks.ParsePrefixes(allow)
	if err != nil {
		return service.HooksConfig{}, err
	}
	public := cfg.Hooks.PublicURL
	if v := a.personEnv(settings.EnvPublicURL); v != "" {
		public = v
	}
	policy := hooks.AddrPolicy{Allow: prefixes}
	return service.HooksConfig{Store: store, Sender: webhookSender(policy), Policy: policy, PublicURL: public}, nil
}

// deliverAfter is the embedded CLI's part of the delivery worker
// (cli/dont/deliveryworker) for one call: none for a call that writes
// nothing (or manages hooks); a pass every so often while a call that may
// wait runs, and one after the call.
func (a *app) deliverAfter(ctx context.Context, svc *service.Service, p project.Project, store *sqlite.Store, t *tools.Tool) func() {
	if t.Annotations.ReadOnly || strings.HasPrefix(t.Name, "hooks.") {
		return func() {}
	}
	w := deliveryworker.Worker{Due: store.HasDue, Deliver: func(ctx context.Context) {
		a.beforeDelivery()
		a.deliverDue(ctx, svc, p, store)
	}}
	return w.Around(ctx, usesApprovals(t))
}

// deliverAround starts the embedded delivery pass for one call and
// returns what finishes it.
func (a *app) deliverAround(ctx context.Context, svc *service.Service, t *tools.Tool) func() {
	if a.embeddedStore == nil {
		return func() {}
	}
	return a.deliverAfter(ctx, svc, a.embeddedProject, a.embeddedStore, t)
}
