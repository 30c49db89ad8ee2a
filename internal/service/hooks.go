package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/ids"
)

// HookStore keeps webhook subscriptions, the outbox and the delivery log
// (docs/hooks.md). The outbox itself is written by the store inside the
// transaction of the event it announces — Commit for the spawn events,
// CreateApproval and ResolveApproval for the questions, PutConfirmation
// for held calls — with hooks.OfEvent, OfAsked, OfEnded and OfHeld: one
// delivery per live hook that hears the event. A transaction that rolls
// back therefore announces nothing, and one that commits is delivered at
// least once.
type HookStore interface {
	// PutHook creates h with its secret; ConditionFailed if its id exists.
	PutHook(ctx context.Context, h hooks.Hook) error
	// GetHook returns a hook with its secret, or ErrNotFound.
	GetHook(ctx context.Context, id string) (hooks.Hook, error)
	// ListHooks returns every hook (removed ones too), oldest first,
	// with their secrets.
	ListHooks(ctx context.Context) ([]hooks.Hook, error)
	// RemoveHook marks a hook removed at at; its pending deliveries are
	// failed. ErrNotFound for an unknown or already removed hook.
	RemoveHook(ctx context.Context, id string, at time.Time) error
	// Enqueue stores m with one pending delivery to each of hookIDs, due
	// at m.At (hooks test; events are enqueued by their own transaction).
	Enqueue(ctx context.Context, m hooks.Message, hookIDs []string) error
	// ClaimDue returns up to limit pending deliveries due at or before
	// now, with their messages, and moves each one's next attempt to
	// now+lease in the same write, so that concurrent workers rarely
	// take the same one and a worker that dies lets it fall due again.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueDelivery, error)
	// RecordAttempt appends a to the delivery log and stores d, the
	// delivery after it, in one transaction.
	RecordAttempt(ctx context.Context, a hooks.Attempt, d hooks.Delivery) error
	// Deliveries returns a hook's deliveries, newest first, and its
	// attempts, newest first, up to limit each.
	Deliveries(ctx context.Context, hookID string, limit int) ([]hooks.Delivery, []hooks.Attempt, error)
	// LastAttempt is the newest attempt of hook id, ok false if none.
	LastAttempt(ctx context.Context, hookID string) (hooks.Attempt, bool, error)
}

// DueDelivery is a claimed delivery with what it delivers.
type DueDelivery struct {
	Delivery hooks.Delivery
	Message  hooks.Message
}

// Sender makes one attempt at a delivery: internal/webhook over HTTP.
type Sender interface {
	Send(ctx context.Context, url, secret, id string, at time.Time, body []byte) SendResult
}

// SendResult is what an attempt observed (0 status: no response).
type SendResult struct {
	Status     int
	Latency    time.Duration
	RetryAfter time.Duration
	Err        error
	Refused    bool // the address policy refused the target
}

// EventBus publishes one message to a deployment's event bus
// (internal/eventbus: EventBridge).
type EventBus interface {
	Publish(ctx context.Context, m hooks.Message) SendResult
}

// HooksConfig configures webhooks.
type HooksConfig struct {
	// Bus, when set, receives the deliveries of hooks.BusHook, which a
	// store with an event bus queues for every event.
	Bus    EventBus
	Store  HookStore
	Sender Sender
	// Policy is the address policy applied when a hook is added (the
	// sender applies it again at dial time).
	Policy hooks.AddrPolicy
	// PublicURL is where the approvals page is served, for links.
	PublicURL string
}

// Hooks manages webhook subscriptions and delivers their messages.
type Hooks struct{ *core }

// HookUnavailable is the refusal of a hook operation on a store without them.
const HookUnavailable errs.Code = "hooks-unavailable"

func (s *core) hookStore() (HookStore, error) {
	if s.HooksConfig.Store == nil {
		return nil, errs.E(HookUnavailable, "this deployment keeps no webhooks")
	}
	return s.HooksConfig.Store, nil
}

// HookView is a hook as callers see it: never its secret, except in the
// answer to Add (Secret).
type HookView struct {
	hooks.Hook
	Secret      string         `json:"secret,omitempty"`
	LastAttempt *hooks.Attempt `json:"last_attempt,omitempty"`
}

// HookAddInput is a new subscription.
type HookAddInput struct {
	URL    string
	Events []string
	Format string
}

// Add creates a subscription and returns it with its signing secret,
// which is shown this once.
func (s *Hooks) Add(ctx context.Context, in HookAddInput) (HookView, error) {
	// The input first, so that a bad one gets the same refusal everywhere.
	u, err := hooks.CheckURL(in.URL, s.HooksConfig.Policy)
	if err != nil {
		return HookView{}, err
	}
	events, err := hooks.ParseEvents(in.Events)
	if err != nil {
		return HookView{}, err
	}
	format, err := hooks.ParseFormat(in.Format)
	if err != nil {
		return HookView{}, err
	}
	if u.Scheme == hooks.SlackAppScheme {
		format = hooks.FormatJSON // dont's Slack app renders the messages itself
	}
	st, err := s.hookStore()
	if err != nil {
		return HookView{}, err
	}
	secret, err := hooks.NewSecret()
	if err != nil {
		return HookView{}, errs.E(errs.Internal, "no randomness for a secret").Wrap(err)
	}
	now := s.now()
	h := hooks.Hook{ID: ids.New(ids.Hook, now), URL: u.String(), Events: events, Format: format, CreatedAt: now, CreatedBy: s.actor(ctx), Secret: secret}
	if err := st.PutHook(ctx, h); err != nil {
		return HookView{}, storeErr(err)
	}
	return HookView{Hook: h, Secret: secret}, nil
}

// HookList is what List returns.
type HookList struct {
	Count int        `json:"count"`
	Hooks []HookView `json:"hooks"`
}

// List returns the live subscriptions with their last attempt.
func (s *Hooks) List(ctx context.Context) (HookList, error) {
	st, err := s.hookStore()
	if err != nil {
		return HookList{}, err
	}
	all, err := st.ListHooks(ctx)
	if err != nil {
		return HookList{}, storeErr(err)
	}
	out := HookList{Hooks: []HookView{}}
	for _, h := range all {
		if h.RemovedAt != nil {
			continue
		}
		v := HookView{Hook: h}
		if a, ok, err := st.LastAttempt(ctx, h.ID); err != nil {
			return HookList{}, storeErr(err)
		} else if ok {
			v.LastAttempt = &a
		}
		out.Hooks = append(out.Hooks, v)
	}
	out.Count = len(out.Hooks)
	return out, nil
}

func (s *Hooks) live(ctx context.Context, st HookStore, id string) (hooks.Hook, error) {
	if ids.Kind(id) != ids.Hook {
		return hooks.Hook{}, errs.E(errs.InvalidID, "not a hook id: "+quoteID(id)).Unmet("hook ids look like hook:<ULID>")
	}
	h, err := st.GetHook(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && h.RemovedAt != nil) {
		return h, errs.E(hooks.HookNotFound, "no such hook "+id).On(id)
	}
	if err != nil {
		return h, storeErr(err)
	}
	return h, nil
}

// Remove ends a subscription; its pending deliveries are failed.
func (s *Hooks) Remove(ctx context.Context, id string) (HookView, error) {
	st, err := s.hookStore()
	if err != nil {
		return HookView{}, err
	}
	h, err := s.live(ctx, st, id)
	if err != nil {
		return HookView{}, err
	}
	now := s.now()
	if err := st.RemoveHook(ctx, id, now); err != nil {
		if errors.Is(err, ErrNotFound) {
			return HookView{}, errs.E(hooks.HookNotFound, "no such hook "+id).On(id)
		}
		return HookView{}, storeErr(err)
	}
	h.RemovedAt = &now
	return HookView{Hook: h}, nil
}

// HookTestResult is the answer to Test: the test message and its first
// attempt, made at once.
type HookTestResult struct {
	MessageID string         `json:"message_id"`
	Attempt   *hooks.Attempt `json:"attempt,omitempty"`
	Delivery  hooks.Delivery `json:"delivery"`
}

// Test enqueues a hook.test message for one hook and attempts it now; a
// failed attempt is retried like any other delivery.
func (s *Hooks) Test(ctx context.Context, id string) (HookTestResult, error) {
	st, err := s.hookStore()
	if err != nil {
		return HookTestResult{}, err
	}
	h, err := s.live(ctx, st, id)
	if err != nil {
		return HookTestResult{}, err
	}
	m := hooks.TestMessage(h.ID, s.now())
	if err := st.Enqueue(ctx, m, []string{h.ID}); err != nil {
		return HookTestResult{}, storeErr(err)
	}
	d := hooks.Delivery{MessageID: m.ID, HookID: h.ID, Type: m.Type, State: hooks.StatePending, CreatedAt: m.At, NextAt: m.At}
	a, d, err := s.attempt(ctx, st, h, d, m)
	if err != nil {
		return HookTestResult{}, err
	}
	return HookTestResult{MessageID: m.ID, Attempt: &a, Delivery: d}, nil
}

// HookDeliveries is what Deliveries returns.
type HookDeliveries struct {
	HookID     string           `json:"hook_id"`
	Deliveries []hooks.Delivery `json:"deliveries"`
	Attempts   []hooks.Attempt  `json:"attempts"`
}

// Deliveries returns a hook's recent deliveries and delivery log.
func (s *Hooks) Deliveries(ctx context.Context, id string, limit int) (HookDeliveries, error) {
	st, err := s.hookStore()
	if err != nil {
		return HookDeliveries{}, err
	}
	if ids.Kind(id) != ids.Hook {
		return HookDeliveries{}, errs.E(errs.InvalidID, "not a hook id: "+quoteID(id)).Unmet("hook ids look like hook:<ULID>")
	}
	if _, err := st.GetHook(ctx, id); errors.Is(err, ErrNotFound) {
		return HookDeliveries{}, errs.E(hooks.HookNotFound, "no such hook "+id).On(id)
	} else if err != nil {
		return HookDeliveries{}, storeErr(err)
	}
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	ds, as, err := st.Deliveries(ctx, id, limit)
	if err != nil {
		return HookDeliveries{}, storeErr(err)
	}
	if ds == nil {
		ds = []hooks.Delivery{}
	}
	if as == nil {
		as = []hooks.Attempt{}
	}
	return HookDeliveries{HookID: id, Deliveries: ds, Attempts: as}, nil
}

// DeliverResult counts one delivery pass.
type DeliverResult struct {
	Attempted int `json:"attempted"`
	Delivered int `json:"delivered"`
	Retrying  int `json:"retrying"`
	Failed    int `json:"failed"`
}

// DeliveryLease is how long a claimed delivery stays with its worker.
const DeliveryLease = 30 * time.Second

// Deliver attempts up to limit due deliveries, one at a time. It is the
// delivery worker's pass: `dont serve` runs it in the background, `dont
// hooks deliver` and `dont sweep` once. With no store or sender it does
// nothing.
func (s *Hooks) Deliver(ctx context.Context, limit int) (DeliverResult, error) {
	var res DeliverResult
	st := s.HooksConfig.Store
	if st == nil || s.HooksConfig.Sender == nil && s.HooksConfig.Bus == nil {
		return res, nil
	}
	due, err := st.ClaimDue(ctx, s.now(), DeliveryLease, limit)
	if err != nil {
		return res, storeErr(err)
	}
	for _, dd := range due {
		if ctx.Err() != nil {
			break
		}
		var h hooks.Hook
		if dd.Delivery.HookID == hooks.BusHook {
			h = hooks.Bus()
		} else if h, err = st.GetHook(ctx, dd.Delivery.HookID); err != nil {
			return res, storeErr(err)
		}
		_, d, err := s.attempt(ctx, st, h, dd.Delivery, dd.Message)
		if err != nil {
			return res, err
		}
		res.Attempted++
		switch d.State {
		case hooks.StateDelivered:
			res.Delivered++
		case hooks.StateFailed:
			res.Failed++
		default:
			res.Retrying++
		}
	}
	return res, nil
}

// attempt makes one attempt at d and records it.
func (s *core) attempt(ctx context.Context, st HookStore, h hooks.Hook, d hooks.Delivery, m hooks.Message) (hooks.Attempt, hooks.Delivery, error) {
	a := hooks.Attempt{MessageID: m.ID, HookID: h.ID, N: d.Attempts + 1, At: s.now()}
	if h.RemovedAt != nil {
		a.Outcome, a.Error = hooks.Rejected, "the hook was removed"
		d = hooks.Next(d, a, 0, 0)
		return a, d, storeErr(st.RecordAttempt(ctx, a, d))
	}
	var retryAfter time.Duration
	body, err := hooks.Body(h.Format, m, s.HooksConfig.PublicURL)
	if err != nil {
		a.Outcome, a.Error = hooks.Rejected, "cannot encode: "+err.Error()
	} else if h.ID == hooks.BusHook && s.HooksConfig.Bus == nil || h.ID != hooks.BusHook && s.HooksConfig.Sender == nil {
		a.Outcome, a.Error = hooks.Retry, "no sender in this process"
	} else {
		var r SendResult
		if h.ID == hooks.BusHook {
			r = s.HooksConfig.Bus.Publish(ctx, m)
		} else {
			r = s.HooksConfig.Sender.Send(ctx, h.URL, h.Secret, m.ID, a.At, body)
		}
		a.Status, a.LatencyMS, retryAfter = r.Status, r.Latency.Milliseconds(), r.RetryAfter
		a.Outcome = hooks.Classify(r.Status)
		switch {
		case r.Refused:
			a.Outcome = hooks.Rejected
		case r.Err != nil:
			a.Outcome = hooks.Retry
		}
		if r.Err != nil {
			a.Error = r.Err.Error()
			if len(a.Error) > 512 {
				a.Error = a.Error[:512]
			}
		}
	}
	d = hooks.Next(d, a, retryAfter, rand.Float64())
	if err := st.RecordAttempt(context.WithoutCancel(ctx), a, d); err != nil {
		return a, d, storeErr(err)
	}
	return a, d, nil
}

// hookSubscribed reports whether a hook that hears approval.asked last
// delivered successfully: the live-subscriber rule's second half
// (docs/approvals.md).
func (s *core) hookSubscribed(ctx context.Context) bool {
	st := s.HooksConfig.Store
	if st == nil {
		return false
	}
	all, err := st.ListHooks(ctx)
	if err != nil {
		return false
	}
	for _, h := range all {
		if !h.Hears(hooks.ApprovalAsked) {
			continue
		}
		if a, ok, err := st.LastAttempt(ctx, h.ID); err == nil && ok && a.Outcome == hooks.Delivered {
			return true
		}
	}
	return false
}

// DeliverHooks is Hooks.Deliver on the service itself, for consumers that
// take a project's service as a whole (the sweeper function).
func (s *Service) DeliverHooks(ctx context.Context, limit int) (DeliverResult, error) {
	return s.Hooks.Deliver(ctx, limit)
}
