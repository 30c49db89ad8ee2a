package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/oneproc"
	"github.com/dont-cli/dont/internal/scheduler"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/slackapp"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/dont-cli/dont/internal/webauthnrp"
	"github.com/spf13/cobra"
)

// serveFlags gives `dont serve` its flags and its run.
func (a *app) serveFlags(c *cobra.Command) {
	var addr string
	var sweepEvery time.Duration
	var rate, totalRate, projectRate float64
	var burst int
	var interactiveConfirm bool
	var tlsCert, tlsKey string
	var sessionCeiling string
	c.RunE = func(c *cobra.Command, _ []string) error {
		oneproc.Restore() // many callers at once: every CPU
		return a.serve(c.Context(), serveOptions{addr: addr, sweepEvery: sweepEvery, rate: rate, burst: burst, totalRate: totalRate, projectRate: projectRate, interactiveConfirm: interactiveConfirm, tlsCert: tlsCert, tlsKey: tlsKey,
			sessionCeiling: sessionCeiling})
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:8787", "listen address (port 0 picks a free port)")
	c.Flags().DurationVar(&sweepEvery, "sweep-interval", time.Second, "how often the in-process sweeper runs")
	c.Flags().Float64Var(&rate, "rate", 0, "requests per second per token (0: the default, "+strconv.Itoa(httpapi.DefaultRatePerSecond)+"; negative: no limit)")
	c.Flags().IntVar(&burst, "burst", 0, "requests a token may send at once before --rate applies (0: the default, "+strconv.Itoa(httpapi.DefaultBurst)+", or --rate + 1 with --rate)")
	c.Flags().Float64Var(&projectRate, "project-rate", 0, "requests per second for the project's tokens together (0: the default, "+strconv.Itoa(httpapi.DefaultProjectPerSecond)+"; negative: no limit)")
	c.Flags().Float64Var(&totalRate, "total-rate", 0, "requests per second for every token together (0: the default, "+strconv.Itoa(httpapi.DefaultTotalPerSecond)+"; negative: no limit)")
	c.Flags().StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	c.Flags().StringVar(&tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	c.Flags().StringVar(&sessionCeiling, "session-ceiling", "", "the widest tier a harness token may open a session at; above it only a person may (default: "+settings.EnvSessionCeiling+", else session_ceiling in the person's config, else "+string(approvals.DefaultSessionCeiling)+")")
	c.Flags().BoolVar(&interactiveConfirm, "interactive-confirm", true, "the server-side gate of client-side confirmation: advertise interactive_confirm to CLIs and honour cli_confirmed (=false: every gated call waits for dont confirmations confirm)")
}

type serveOptions struct {
	addr               string
	sweepEvery         time.Duration
	rate, totalRate    float64
	burst              int
	projectRate        float64
	interactiveConfirm bool
	tlsCert, tlsKey    string
	sessionCeiling     string
}

func (a *app) serve(ctx context.Context, o serveOptions) error {
	addr, sweepEvery, rate, interactiveConfirm := o.addr, o.sweepEvery, o.rate, o.interactiveConfirm
	var tlsConfig *tls.Config
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errs.E(errs.Usage, "--tls-cert and --tls-key go together").Unmet("both --tls-cert and --tls-key, or neither")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return errs.E(errs.ConfigInvalid, "cannot load the TLS certificate: "+err.Error()).Wrap(err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	p, err := a.locateProject()
	if err != nil {
		return err
	}
	// The person starts dont serve: its environment and flags are theirs
	// (personEnv); its config files count as they do for the CLI.
	a.settings.personStarted = true
	cfg, err := a.projectSettings(p)
	if err != nil {
		return err
	}
	timeout, err := cfg.Timeout(a.getenv(settings.EnvSpawnTimeout))
	if err != nil {
		return err
	}
	lease, err := cfg.MaxLease(a.personEnv(settings.EnvSpawnMaxLease))
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
	// The ticker sweeps every sweepEvery, so a call's own sweep ends due
	// questions at most that often, and a callback's sweep after itself
	// runs at most that often; a call that sweeps first always sweeps
	// expired spawns (service.SweepFirstPolicy).
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: store, Confirmations: store, Tokens: store, SpawnTimeout: timeout, SpawnMaxLease: lease, Author: "api", Log: log, Scheduler: timers, Clock: a.clock(),
		SweepPolicy: service.SweepFirstPolicy{ApprovalsEvery: sweepEvery, AfterEvery: sweepEvery}})
	if svc.Approvals, err = a.approvalsConfig(store, true); err != nil {
		return err
	}
	if svc.Approvals.Rules, err = a.approvalRules(); err != nil {
		return err
	}
	if svc.Approvals.SessionCeiling, err = a.ceiling(p, o.sessionCeiling); err != nil {
		return err
	}
	// Passkeys bind to the page's origin (docs/approvals.md, "Passkeys").
	svc.PasskeyRP = webauthnrp.New
	if svc.HooksConfig, err = a.hooksConfig(p, store); err != nil {
		return err
	}
	svc.HooksConfig = a.withSlackSender(svc.HooksConfig, store)
	keep, err := a.retention(p)
	if err != nil {
		return err
	}
	handler := httpapi.New(httpapi.Options{
		Backend:       httpapi.SingleProject{Project: httpapi.Project{Service: svc, Idempotency: store}},
		RatePerSecond: rate, Burst: o.burst, TotalPerSecond: o.totalRate, ProjectPerSecond: o.projectRate, Log: log, DisableInteractiveConfirm: !interactiveConfirm,
		Slack: a.slackOptions(svc.HooksConfig.PublicURL),
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.E(errs.ConfigInvalid, "cannot listen on "+addr+": "+err.Error()).Wrap(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, TLSConfig: tlsConfig}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsConfig)
	}
	base := scheme + "://" + ln.Addr().String()
	// The first stdout line is for programs (tests and benchmarks parse
	// it); the stderr lines are for the person who started the server.
	line, _ := json.Marshal(struct {
		Listening string `json:"listening"`
		Approvals string `json:"approvals"`
	}{base, base + "/approvals"})
	fmt.Fprintf(a.stdout, "%s\n", line)
	fmt.Fprintf(a.stderr, "dont serve: listening on %s; the approvals page is %s/approvals\n", base, pageBase(scheme, ln.Addr()))
	if tlsConfig == nil && !loopback(ln.Addr()) {
		fmt.Fprintf(a.stderr, "dont serve: warning: %s is reachable beyond this machine over plain HTTP: tokens cross the network in clear; serve HTTPS with --tls-cert and --tls-key, or listen on 127.0.0.1\n", ln.Addr())
	}
	for _, w := range a.settings.notices {
		fmt.Fprintf(a.stderr, "dont serve: warning: %s: %s\n", w.Code, visible.Line(w.Message))
	}
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
	retentionDone := make(chan struct{})
	go func() {
		defer close(retentionDone)
		retentionLoop(ctx, store, keep, log)
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
	<-retentionDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errs.E(errs.Internal, "shutdown: "+err.Error()).Wrap(err)
	}
	return nil
}

// loopback reports whether addr listens on this machine only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// pageBase is the base URL a person opens: an address that listens on
// every interface (0.0.0.0, ::) is shown as localhost, which reaches it.
func pageBase(scheme string, addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return scheme + "://" + net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return scheme + "://" + addr.String()
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

// slackOptions is the Slack app's endpoint when the person set its
// signing secret where they start the server (a person-only variable:
// refused under a harness signal; docs/approvals.md, "Slack").
func (a *app) slackOptions(publicURL string) *httpapi.SlackOptions {
	secret := a.personEnv(settings.EnvSlackSigningSecret)
	if secret == "" {
		return nil
	}
	return &httpapi.SlackOptions{SigningSecret: secret, PublicURL: publicURL}
}

// withSlackSender delivers the slack-app:<channel> hooks through the
// Slack Web API when the person set the app's bot token
// (DONT_SLACK_BOT_TOKEN, person-only like the signing secret).
func (a *app) withSlackSender(cfg service.HooksConfig, store *sqlite.Store) service.HooksConfig {
	if tok := a.personEnv(settings.EnvSlackBotToken); tok != "" && cfg.Sender != nil {
		cfg.Sender = slackapp.Sender{Next: cfg.Sender, Client: slackapp.NewClient(tok, "", nil), Messages: store, PublicURL: cfg.PublicURL}
	}
	return cfg
}
