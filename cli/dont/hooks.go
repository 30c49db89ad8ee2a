package main

import (
	"context"
	"strings"
	"time"

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

// embeddedDeliveryBudget bounds the delivery pass after an embedded command.
const embeddedDeliveryBudget = 2 * hooks.AttemptTimeout

// deliverAfter is the embedded CLI's part of the delivery worker: while
// a call that may wait (escalate, approvals wait) runs, and once after
// any call that writes, it attempts the due deliveries — a read first,
// so that a project with nothing due pays one query. What it does not
// finish, `dont hooks deliver` or `dont serve` does (docs/hooks.md).
func (a *app) deliverAfter(ctx context.Context, svc *service.Service, p project.Project, store *sqlite.Store, t *tools.Tool) func() {
	if t.Annotations.ReadOnly || strings.HasPrefix(t.Name, "hooks.") {
		return func() {}
	}
	pass := func(ctx context.Context) {
		if due, err := store.HasDue(ctx, time.Now()); err != nil || !due {
			return
		}
		a.beforeDelivery()
		a.deliverDue(ctx, svc, p, store)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if !usesApprovals(t) {
			<-done
			return
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				pass(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		if ctx.Err() != nil {
			return
		}
		bounded, cancel := context.WithTimeout(context.WithoutCancel(ctx), embeddedDeliveryBudget)
		defer cancel()
		pass(bounded)
	}
}

// deliverAround starts the embedded delivery pass for one call and
// returns what finishes it.
func (a *app) deliverAround(ctx context.Context, svc *service.Service, t *tools.Tool) func() {
	if a.embeddedStore == nil {
		return func() {}
	}
	return a.deliverAfter(ctx, svc, a.embeddedProject, a.embeddedStore, t)
}
