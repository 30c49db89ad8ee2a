package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/scheduler"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/spf13/cobra"
)

func (a *app) serveCommand() *cobra.Command {
	var addr string
	var sweepEvery time.Duration
	var rate float64
	var interactiveConfirm bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTPS JSON API on this project's embedded store; a timer per spawn expires it when due, a ticker sweep backs it up.",
		Args:  a.argCount(0),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.serve(c.Context(), addr, sweepEvery, rate, interactiveConfirm)
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:8787", "listen address (port 0 picks a free port)")
	c.Flags().DurationVar(&sweepEvery, "sweep-interval", time.Second, "how often the in-process sweeper runs")
	c.Flags().Float64Var(&rate, "rate", 0, "requests per second per token (0: default 500, negative: no limit)")
	c.Flags().BoolVar(&interactiveConfirm, "interactive-confirm", true, "the server-side gate of client-side confirmation: advertise interactive_confirm to CLIs and honour cli_confirmed (=false: every gated call waits for dont confirmations confirm)")
	return c
}

func (a *app) serve(ctx context.Context, addr string, sweepEvery time.Duration, rate float64, interactiveConfirm bool) error {
	wd, _ := os.Getwd()
	p, err := project.Find(wd, a.getenv("DONT_PROJECT_DIR"))
	if err != nil {
		return err
	}
	cfg, err := p.LoadConfig()
	if err != nil {
		return err
	}
	timeout, err := cfg.Timeout(a.getenv(settings.EnvSpawnTimeout))
	if err != nil {
		return err
	}
	store, err := a.openStore(p)
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.NewJSONHandler(a.stderr, nil))
	// Two depths of expiry, as in AWS: a timer per spawn issued through this
	// server fires at its expires_at (the SQS message's role), and the ticker
	// sweep is the backstop (the scheduled sweep's role) for spawns the CLI
	// issued on the same file, for timers lost in a restart and for a full heap.
	timers := &scheduler.Timers{Log: log}
	svc := service.New(service.Deps{Store: store, Confirmations: store, Tokens: store, SpawnTimeout: timeout, Author: "api", Log: log, Scheduler: timers})
	if svc.Approvals, err = a.approvalsConfig(store, true); err != nil {
		return err
	}
	if svc.HooksConfig, err = a.hooksConfig(p, store); err != nil {
		return err
	}
	handler := httpapi.New(httpapi.Options{
		Backend:       httpapi.SingleProject{Project: httpapi.Project{Service: svc, Idempotency: store}},
		RatePerSecond: rate, Log: log, DisableInteractiveConfirm: !interactiveConfirm,
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.E(errs.ConfigInvalid, "cannot listen on "+addr+": "+err.Error()).Wrap(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	fmt.Fprintf(a.stdout, "{\"listening\":\"http://%s\"}\n", ln.Addr())
	a.debugServer(ctx)

	timersDone := make(chan struct{})
	go func() {
		defer close(timersDone)
		timers.Run(ctx, svc)
	}()
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		scheduler.Backstop{Every: sweepEvery, Log: log}.Run(ctx, svc)
	}()
	deliverDone := make(chan struct{})
	go func() {
		defer close(deliverDone)
		a.deliverLoop(ctx, svc, store, sweepEvery, log)
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errs.E(errs.Internal, "the server stopped: "+err.Error()).Wrap(err)
	case <-ctx.Done():
	}
	// Graceful: stop accepting, let in-flight requests finish their transactions.
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	<-sweepDone
	<-timersDone
	<-deliverDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errs.E(errs.Internal, "shutdown: "+err.Error()).Wrap(err)
	}
	return nil
}
