// Package deployment is what the Lambda functions (api, sweeper, operator) share: their
// configuration from the environment, the AWS clients (built once per
// cold start), one service per project over the DynamoDB store, the
// project registry the scheduled sweep walks, and the API function's
// backend, which leads a presented token to its project (Backend).
package deployment

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// Environment variables. DONT_TABLE and DONT_TIMEOUT_QUEUE_URL are set by
// the CDK stack; region, credentials and endpoints come from the SDK's
// own defaults (AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS, ...).
const (
	EnvTable           = "DONT_TABLE"
	EnvTimeoutQueueURL = "DONT_TIMEOUT_QUEUE_URL"
	EnvSpawnTimeout    = settings.EnvSpawnTimeout
	EnvSweepLimit      = "DONT_SWEEP_LIMIT"
	// EnvSweepQueueURL is the sweep work queue (set by the stack for the
	// sweeper): the schedule's run enqueues one message per project there.
	// Unset, the run sweeps every project itself, in turn.
	EnvSweepQueueURL = "DONT_SWEEP_QUEUE_URL"
	EnvProjects      = "DONT_PROJECTS"
	// Tier escalation: a question's deadline, the subscriber lease, how
	// often waits re-read the table, and how long frames are kept.
	EnvApprovalTimeout = settings.EnvApprovalTimeout
	EnvSubscriberLease = settings.EnvSubscriberLease
	EnvApprovalPoll    = "DONT_APPROVAL_POLL"
	EnvFrameRetention  = settings.EnvFrameRetention
	// EnvDeliveryRetention lets DynamoDB's TTL delete finished webhook
	// deliveries and logged attempts (settings.DeliveryRetention).
	EnvDeliveryRetention = settings.EnvDeliveryRetention
	// EnvSecretsKey is the KMS key (id, ARN or alias) that seals every
	// project's callback secret at rest; set by the stack. Unset, secrets
	// are stored as they are (the stand-ins' default; docs/aws.md).
	EnvSecretsKey = "DONT_SECRETS_KEY"
	// Webhooks (docs/hooks.md): the event bus events are put on ("off":
	// none), the private ranges a hook may reach, the approvals page's URL.
	EnvEventBus     = "DONT_EVENT_BUS"
	EnvAllowPrivate = "DONT_HOOKS_ALLOW_PRIVATE"
	EnvPublicURL    = "DONT_PUBLIC_URL"
	// EnvHookCache is how long a function instance's commits announce to
	// the project's hooks as last read (DefaultHookCache; "0s": read on
	// every commit); adding a hook waits that long before it answers.
	EnvHookCache = "DONT_HOOK_CACHE"
	// EnvSweepAfterEvery is how often, at most, an instance sweeps after a
	// callback (DefaultSweepAfterEvery; "0s": after every callback): that
	// sweep concerns other spawns only, which their timeout messages and
	// the scheduled sweep end anyway (service.SweepFirstPolicy).
	EnvSweepAfterEvery = "DONT_SWEEP_AFTER_EVERY"
	// EnvSessionCeiling is the widest tier a harness token may open a
	// session at (default workspace-write); above it only an approver or
	// admin token may (docs/security.md). The operator sets it on the
	// functions; no caller of the API can.
	EnvSessionCeiling = "DONT_SESSION_CEILING"
)

// DefaultSweepAfterEvery is dont serve's default sweep interval.
const DefaultSweepAfterEvery = time.Second

// DefaultHookCache spares every commit its read of the project's hooks
// (a strongly consistent Query, a read unit, even in projects without
// hooks) but one per instance and project every 10 seconds; a hook add
// takes 10 seconds to answer, after which every commit hears it.
const DefaultHookCache = 10 * time.Second

// maxHookCache keeps a hook add's wait well inside API Gateway's 30 s.
const maxHookCache = 20 * time.Second

// DefaultApprovalPoll is how often a long-poll of a session's frames, or a
// requester's wait, re-reads the table in AWS: each read is a strongly
// consistent Query or GetItem, so the embedded 25 ms would cost 40 reads a
// second per open approvals page.
const DefaultApprovalPoll = 200 * time.Millisecond

// DefaultSweepLimit is the page size of a project's scheduled sweep: each
// read of due spawns, or of the horizon, returns at most this many, and
// the sweep pages on until done.
const DefaultSweepLimit = 1000

// Config is the functions' configuration.
type Config struct {
	Table    string
	QueueURL string
	// SpawnTimeout applies to every project (default 24h).
	SpawnTimeout time.Duration
	// SpawnMaxLease bounds heartbeats in every project (0: 7 days).
	SpawnMaxLease time.Duration
	// SweepLimit is the page size of a project's scheduled sweep.
	SweepLimit int
	// SweepQueueURL is the sweep work queue ("": none, sweep in turn).
	SweepQueueURL string
	// Projects are swept by the schedule in addition to the registry.
	Projects []string
	// ApprovalTimeout is a question's deadline (0: the service's 120 s).
	ApprovalTimeout time.Duration
	// ApprovalTimeoutMin and ApprovalTimeoutMax bound the deadline a
	// requester may ask for (0: the service's 30 s and ApprovalTimeout).
	ApprovalTimeoutMin, ApprovalTimeoutMax time.Duration
	// ApprovalRemindAt is the share of a question's deadline after which
	// the second line is reminded (0: no reminders).
	ApprovalRemindAt float64
	// TwoPersonFrom is the two-person rule's tier ("": none).
	TwoPersonFrom approvals.TwoPersonFrom
	// SubscriberLease is how recently a reader of a session's frames
	// makes it watched (0: the service's default).
	SubscriberLease time.Duration
	// ApprovalPoll is how often waits and long-polls re-read the table.
	ApprovalPoll time.Duration
	// FrameRetention lets DynamoDB's TTL delete frames this long after
	// they were written, a question's frame after its deadline (0: kept
	// for good).
	FrameRetention time.Duration
	// DeliveryRetention lets DynamoDB's TTL delete finished deliveries
	// and logged attempts this long after they were made (0: kept for
	// good; a pending delivery never).
	DeliveryRetention time.Duration
	// SecretsKey is the KMS key sealing project secrets ("" for none).
	SecretsKey string
	// EventBus is the EventBridge bus every event is put on ("": none,
	// the default; the stack's dont:eventBus sets it).
	EventBus string
	// HookPolicy is the webhook address policy; PublicURL the approvals page.
	HookPolicy hooks.AddrPolicy
	PublicURL  string
	// SlackBotToken delivers the slack-app:<channel> hooks
	// (DONT_SLACK_BOT_TOKEN; docs/approvals.md, "Slack").
	SlackBotToken string
	// HookCache is how long commits announce to the hooks as last read
	// (0: read on every commit; see EnvHookCache).
	HookCache time.Duration
	// SweepAfterEvery rate-limits the sweep after a callback (0: none;
	// see EnvSweepAfterEvery).
	SweepAfterEvery time.Duration
	// SessionCeiling is the widest tier a harness token may open a session
	// at ("": approvals.DefaultSessionCeiling; see EnvSessionCeiling).
	SessionCeiling approvals.Tier
	// PasskeyRequiredFrom is the narrowest tier whose approve needs a
	// passkey assertion bound to the question ("": none;
	// settings.EnvPasskeyRequiredFrom, for every project of the deployment).
	PasskeyRequiredFrom approvals.Tier
}

// ConfigFromEnv reads the configuration; getenv is os.Getenv in production.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Table:         strings.TrimSpace(getenv(EnvTable)),
		QueueURL:      strings.TrimSpace(getenv(EnvTimeoutQueueURL)),
		SweepQueueURL: strings.TrimSpace(getenv(EnvSweepQueueURL)),
		SpawnTimeout:  service.DefaultSpawnTimeout,
		SweepLimit:    DefaultSweepLimit,
		SecretsKey:    strings.TrimSpace(getenv(EnvSecretsKey)),
		HookCache:     DefaultHookCache,
		// A callback's sweep after itself at most once a second.
		SweepAfterEvery: DefaultSweepAfterEvery,
	}
	if c.Table == "" {
		return c, fmt.Errorf("%s is required: the DynamoDB table name", EnvTable)
	}
	if c.QueueURL == "" {
		return c, fmt.Errorf("%s is required: the spawn-timeout queue URL", EnvTimeoutQueueURL)
	}
	if _, err := dynamo.ParsePendingShards(getenv(dynamo.EnvPendingShards)); err != nil {
		return c, err // the stores read it themselves; a bad value stops init here
	}
	if v := getenv(EnvSweepLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("%s must be a positive integer, got %q", EnvSweepLimit, v)
		}
		c.SweepLimit = n
	}
	if v := strings.TrimSpace(getenv(EnvSweepAfterEvery)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("%s must be a Go duration of 0s or more, got %q", EnvSweepAfterEvery, v)
		}
		c.SweepAfterEvery = d
	}
	if v := strings.TrimSpace(getenv(EnvHookCache)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxHookCache {
			return c, fmt.Errorf("%s must be a Go duration from 0s to %v, got %q", EnvHookCache, maxHookCache, v)
		}
		c.HookCache = d
	}
	c.ApprovalPoll = DefaultApprovalPoll
	// Every duration follows its setting's one rule (internal/settings),
	// as the CLI, `dont serve` and the operator's set_project do.
	for _, d := range []struct {
		env     string
		setting settings.Duration
		dst     *time.Duration
	}{{EnvSpawnTimeout, settings.SpawnTimeout, &c.SpawnTimeout}, {settings.EnvSpawnMaxLease, settings.SpawnMaxLease, &c.SpawnMaxLease}, {EnvApprovalTimeout, settings.ApprovalTimeout, &c.ApprovalTimeout}, {settings.EnvApprovalTimeoutMin, settings.ApprovalTimeoutMin, &c.ApprovalTimeoutMin}, {settings.EnvApprovalTimeoutMax, settings.ApprovalTimeoutMax, &c.ApprovalTimeoutMax},
		{EnvSubscriberLease, settings.SubscriberLease, &c.SubscriberLease},
		{EnvApprovalPoll, settings.ApprovalPoll, &c.ApprovalPoll}, {EnvFrameRetention, settings.FrameRetention, &c.FrameRetention},
		{EnvDeliveryRetention, settings.DeliveryRetention, &c.DeliveryRetention}} {
		v := getenv(d.env)
		if strings.TrimSpace(v) == "" {
			continue
		}
		dur, err := d.setting.FromEnv(d.env, v)
		if err != nil {
			return c, err
		}
		*d.dst = dur
	}
	if v := getenv(settings.EnvApprovalRemindAt); strings.TrimSpace(v) != "" {
		share, err := settings.ShareFromSource(settings.EnvApprovalRemindAt, v)
		if err != nil {
			return c, err
		}
		c.ApprovalRemindAt = share
	}
	if v := strings.TrimSpace(getenv(settings.EnvTwoPersonFrom)); v != "" {
		if !approvals.Tier(v).Valid() {
			return c, fmt.Errorf("%s must be a tier (%s), got %q", settings.EnvTwoPersonFrom, approvals.TierNames(approvals.Tiers), v)
		}
		c.TwoPersonFrom = approvals.TwoPersonFrom(v)
	}
	// Off unless named: every announced event on the bus costs a write
	// more per commit and a PutEvents entry (docs/aws-cost.md).
	switch v := strings.TrimSpace(getenv(EnvEventBus)); v {
	case "", "off", "none":
		c.EventBus = ""
	default:
		c.EventBus = v
	}
	allow, err := hooks.ParsePrefixes(getenv(EnvAllowPrivate))
	if err != nil {
		return c, fmt.Errorf("%s: %w", EnvAllowPrivate, err)
	}
	c.HookPolicy = hooks.AddrPolicy{Allow: allow}
	c.PublicURL = strings.TrimSpace(getenv(EnvPublicURL))
	c.SlackBotToken = strings.TrimSpace(getenv(settings.EnvSlackBotToken))
	if v := strings.TrimSpace(getenv(EnvSessionCeiling)); v != "" {
		if !approvals.Tier(v).Valid() {
			return c, fmt.Errorf("%s must be a tier (%s), got %q", EnvSessionCeiling, approvals.TierNames(approvals.Tiers), v)
		}
		c.SessionCeiling = approvals.Tier(v)
	}
	if v := strings.TrimSpace(getenv(settings.EnvPasskeyRequiredFrom)); v != "" {
		t, ok := approvals.ParsePasskeyLevel(v)
		if !ok {
			return c, fmt.Errorf("%s must be a tier (%s) or off, got %q", settings.EnvPasskeyRequiredFrom, approvals.TierNames(approvals.Tiers), v)
		}
		c.PasskeyRequiredFrom = t
	}
	for _, p := range strings.Split(getenv(EnvProjects), ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.Projects = append(c.Projects, p)
		}
	}
	return c, nil
}
