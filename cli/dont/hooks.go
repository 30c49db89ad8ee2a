package main

import (
	"context"
	"strings"
	"time"

	"log/slog"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/webhook"
)

// Environment overrides of `[hooks]` in config.toml (docs/hooks.md).
const (
	envHooksAllowPrivate = "DONT_HOOKS_ALLOW_PRIVATE"
	envPublicURL         = "DONT_PUBLIC_URL"
)

// hooksConfig is the webhook configuration of the project: the store, the
// address policy and the delivering client, and the approvals page's URL.
func (a *app) hooksConfig(p project.Project, store *sqlite.Store) (service.HooksConfig, error) {
	cfg, err := p.LoadConfig()
	if err != nil {
		return service.HooksConfig{}, err
	}
	allow := strings.Join(cfg.Hooks.AllowPrivate, ",")
	if v := a.getenv(envHooksAllowPrivate); v != "" {
		allow = v
	}
	prefixes, err := hooks.ParsePrefixes(allow)
	if err != nil {
		return service.HooksConfig{}, err
	}
	public := cfg.Hooks.PublicURL
	if v := a.getenv(envPublicURL); v != "" {
		public = v
	}
	policy := hooks.AddrPolicy{Allow: prefixes}
	return service.HooksConfig{Store: store, Sender: webhook.New(policy), Policy: policy, PublicURL: public}, nil
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
	configured := svc.HooksConfig.Sender != nil
	pass := func(ctx context.Context) {
		if due, err := store.HasDue(ctx, time.Now()); err != nil || !due {
			return
		}
		if !configured {
			cfg, err := a.hooksConfig(p, store)
			if err != nil {
				return
			}
			svc.HooksConfig, configured = cfg, true
		}
		a.beforeDelivery()
		svc.Hooks.Deliver(ctx, 10) //nolint:errcheck // best effort: what is left stays due
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

// deliverLoop is `dont serve`'s delivery worker: every interval, the due
// deliveries (a read when none is due), until ctx ends.
func (a *app) deliverLoop(ctx context.Context, svc *service.Service, store *sqlite.Store, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for ctx.Err() == nil {
			if due, err := store.HasDue(ctx, time.Now()); err != nil || !due {
				break
			}
			res, err := svc.Hooks.Deliver(ctx, 50)
			if err != nil {
				log.Warn("webhook delivery pass failed", "error", err.Error())
				break
			}
			if res.Attempted == 0 {
				break
			}
		}
	}
}
