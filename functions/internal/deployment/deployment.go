package deployment

import (
	"context"
	"github.com/dont-cli/dont/internal/tools"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dont-cli/dont/internal/eventbus"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/slackapp"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/webauthnrp"
)

// Store is one project's view of the table: everything its service needs.
type Store interface {
	store.Store
	store.TokenStore
	store.ApprovalStore
	store.ConfirmationStore
	store.HookStore
}

// Deployment holds what lives for the whole life of a function's process
// (one cold start): configuration, clients and per-project services.
type Deployment struct {
	Config Config
	// Author is recorded on the events this function writes ("api", "sweeper").
	Author string
	Log    *slog.Logger
	// DynamoDB is the table's client (nil in tests that open other stores).
	DynamoDB *dynamodb.Client
	// Sealer seals project secrets at rest (KMS, DONT_SECRETS_KEY); nil
	// when the deployment has no key.
	Sealer dynamo.Sealer
	// Open returns one project's store; Connect sets it to the DynamoDB store.
	Open  func(project string) Store
	Queue *sqssched.Queue
	// Work is the sweep work queue (nil: the scheduled run sweeps every
	// project itself).
	Work     *sqssched.Queue
	Registry *Registry
	// Webhooks delivers webhooks (nil: no deliveries from this process);
	// EventBridge puts events on Config.EventBus (nil: none).
	Webhooks    service.Sender
	EventBridge eventbus.PutAPI
	// Now is the services' clock (default: the wall clock).
	Now func() time.Time

	services sync.Map // project -> *service.Service
}

// Service returns project's service, built on first use and kept for the
// life of the process (the store caches the project's callback secret).
func (d *Deployment) Service(project string) *service.Service {
	if s, ok := d.services.Load(project); ok {
		return s.(*service.Service)
	}
	actual, _ := d.services.LoadOrStore(project, d.NewService(project, d.Open(project)))
	return actual.(*service.Service)
}

// NewService builds project's service over st: this deployment's clock,
// spawn timeout, approval settings, author and logger, and the SQS timeout
// scheduler for spawns and approval questions (which registers the
// project for the scheduled sweep).
func (d *Deployment) NewService(project string, st Store) *service.Service {
	sched := registering{registry: d.Registry, next: d.Queue.For(project), project: project, log: d.Log}
	hc := service.HooksConfig{Store: st, Sender: d.Webhooks, Policy: d.Config.HookPolicy, PublicURL: d.Config.PublicURL}
	if links, ok := st.(store.SlackLinkStore); ok && d.Config.SlackBotToken != "" && d.Webhooks != nil {
		hc.Sender = slackapp.Sender{Next: d.Webhooks, Client: slackapp.NewClient(d.Config.SlackBotToken, "", nil), Messages: links, PublicURL: d.Config.PublicURL}
	}
	if d.EventBridge != nil && d.Config.EventBus != "" {
		hc.Bus = eventbus.Publisher{Client: d.EventBridge, Bus: d.Config.EventBus, Project: project}
	}
	if ds, ok := st.(*dynamo.Store); ok {
		d.announcing(ds, project)
	}
	return service.New(service.Deps{ToolNames: tools.Names(),
		HooksConfig: hc,
		Store:       st, Confirmations: st, Tokens: st, Project: project, Clock: d.Now, SpawnTimeout: d.Config.SpawnTimeout, SpawnMaxLease: d.Config.SpawnMaxLease, Author: d.Author,
		Log:       d.Log.With("project", project),
		Scheduler: sched, ApprovalScheduler: sched,
		Approvals: service.Approvals{Store: st, Timeout: d.Config.ApprovalTimeout, TimeoutMin: d.Config.ApprovalTimeoutMin, TimeoutMax: d.Config.ApprovalTimeoutMax, RemindAt: d.Config.ApprovalRemindAt, TwoPersonFrom: d.Config.TwoPersonFrom, Lease: d.Config.SubscriberLease,
			Poll: d.Config.ApprovalPoll, Scheduled: true, SessionCeiling: d.Config.SessionCeiling,
			PasskeyRequiredFrom: d.Config.PasskeyRequiredFrom},
		SweepPolicy: service.SweepFirstPolicy{AfterEvery: d.Config.SweepAfterEvery},
		PasskeyRP:   webauthnrp.New,
	})
}

// announcing makes st queue event-bus deliveries (when there is a bus)
// and send the project's delivery message after each write that queued
// deliveries, so that they go out in seconds; the scheduled sweep is the
// backstop for a lost message.
func (d *Deployment) announcing(st *dynamo.Store, project string) {
	st.SetEventBus(d.EventBridge != nil && d.Config.EventBus != "")
	// Commits announce to the project's hooks as read at most HookCache
	// ago (a hook add waits that long before it returns: dynamo.SetHookCache).
	st.SetHookCache(d.Config.HookCache, nil, nil)
	if d.Queue == nil {
		return
	}
	st.SetOnAnnounce(func(ctx context.Context) {
		if err := d.Queue.NudgeDelivery(context.WithoutCancel(ctx), project); err != nil {
			d.Log.Warn("delivery message", "project", project, "err", err)
		}
	})
}

// Project implements sqs.Projects.
func (d *Deployment) Project(_ context.Context, name string) (sqssched.Timeouts, error) {
	return d.Service(name), nil
}

// List implements sqs.Projects: the registered projects and the
// configured ones (DONT_PROJECTS), each once, in name order.
func (d *Deployment) List(ctx context.Context) ([]string, error) {
	names, err := d.Registry.List(ctx)
	if err != nil {
		return nil, err
	}
	names = append(names, d.Config.Projects...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Horizon implements sqs.Horizons: the project's stored scheduled_until,
// when its store keeps one (the DynamoDB store does); nil otherwise.
func (d *Deployment) Horizon(_ context.Context, name string) (sqssched.Horizon, error) {
	if h, ok := d.Open(name).(sqssched.Horizon); ok {
		return h, nil
	}
	return nil, nil
}

// Sweeper is the consumer of the timeout queue and the sweep work queue
// over this deployment.
func (d *Deployment) Sweeper() *sqssched.Sweeper {
	return &sqssched.Sweeper{Queue: d.Queue, Work: d.Work, Projects: d, Log: d.Log, Limit: d.Config.SweepLimit}
}

// registering registers the project the first time each process
// schedules one of its timeouts, so that the scheduled sweep knows to
// visit it: whether or not the queue sends a message then, since a spawn
// beyond the queue's 15-minute horizon gets its message from the
// scheduled sweep. A failed registration does not stop the message: it
// is logged, and the next spawn tries again.
type registering struct {
	registry *Registry
	next     service.TimeoutScheduler
	project  string
	log      *slog.Logger
}

func (r registering) ScheduleTimeout(ctx context.Context, requestID string, expiresAt time.Time) error {
	r.register(ctx, requestID)
	return r.next.ScheduleTimeout(ctx, requestID, expiresAt)
}

// ScheduleApprovalTimeout implements service.ApprovalTimeoutScheduler: a
// project that only ever asks questions is swept by the schedule too.
func (r registering) ScheduleApprovalTimeout(ctx context.Context, approvalID string, deadline time.Time) error {
	next, ok := r.next.(service.ApprovalTimeoutScheduler)
	if !ok {
		return nil
	}
	r.register(ctx, approvalID)
	return next.ScheduleApprovalTimeout(ctx, approvalID, deadline)
}

func (r registering) register(ctx context.Context, requestID string) {
	if err := r.registry.Ensure(ctx, r.project); err != nil {
		r.log.Warn("register project", "project", r.project, "request_id", requestID, "err", err)
	}
}
