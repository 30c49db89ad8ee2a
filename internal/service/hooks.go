package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/store"
)

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
	Store  store.HookStore
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

func (s *core) hookStore() (store.HookStore, error) {
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
	// Key is the call's Idempotency-Key, committed with the hook (nil:
	// none).
	Key *idempotency.Pending
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
	h := hooks.Hook{ID: s.newID(ids.Hook, now), URL: u.String(), Events: events, Format: format, CreatedAt: now, CreatedBy: s.actor(ctx), Secret: secret}
	view := HookView{Hook: h, Secret: secret}
	var keyed func(*idempotency.Put) error
	if k := keyedPuts(st); k != nil {
		keyed = func(put *idempotency.Put) error { return k.PutHookKeyed(ctx, h, put) }
	}
	if err := s.putKeyed(in.Key, view, func() error { return st.PutHook(ctx, h) }, keyed); err != nil {
		return HookView{}, storeErr(err)
	}
	return view, nil
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

func (s *Hooks) live(ctx context.Context, st store.HookStore, id string) (hooks.Hook, error) {
	if ids.Kind(id) != ids.Hook {
		return hooks.Hook{}, errs.E(errs.InvalidID, "not a hook id: "+quoteID(id)).Unmet("hook ids look like hook:<ULID>")
	}
	h, err := st.GetHook(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && h.RemovedAt != nil) {
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
		if errors.Is(err, store.ErrNotFound) {
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
	return s.TestResuming(ctx, id, time.Time{})
}

// TestResuming is Test for a keyed call whose earlier run (cut by a
// crash) claimed its key at resumeSince (the zero time: none): if that
// run queued its test message, the call reports that message's delivery
// as it stands and sends nothing (resumedTest); it tests afresh only if
// no test message was queued.
func (s *Hooks) TestResuming(ctx context.Context, id string, resumeSince time.Time) (HookTestResult, error) {
	st, err := s.hookStore()
	if err != nil {
		return HookTestResult{}, err
	}
	h, err := s.live(ctx, st, id)
	if err != nil {
		return HookTestResult{}, err
	}
	if !resumeSince.IsZero() {
		prior, ok, err := resumedTest(ctx, st, h.ID, resumeSince)
		if err != nil {
			return HookTestResult{}, err
		}
		if ok {
			return prior, nil
		}
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

// resumedTest is the test message a cut run of a keyed hooks test queued
// for hook, with its delivery and its newest attempt, ok false if it
// queued none: the newest hook.test delivery of the hook made within the
// key's lifetime (idempotency.Window before the retry's claim; a takeover
// re-times the claim, so the cut run's time is not known). Its delivery
// is reported as it stands, never attempted here: the cut run may have
// sent it and died before recording the attempt, and the delivery worker
// attempts a pending one anyway, so the receiver gets one test message,
// not two. The one imprecision: a cut run that died before queuing,
// after another test of the same hook, reports that test — which any
// admin reads with hooks deliveries, and which sends nothing twice
// (docs/proof.md, "Idempotency across crashes").
func resumedTest(ctx context.Context, st store.HookStore, hookID string, resumeSince time.Time) (HookTestResult, bool, error) {
	since := resumeSince.Add(-idempotency.Window)
	f := store.DeliveryFilter{Deliveries: 100}
	for {
		page, err := st.Deliveries(ctx, hookID, f)
		if err != nil {
			return HookTestResult{}, false, storeErr(err)
		}
		for _, d := range page.Deliveries {
			if d.CreatedAt.Before(since) {
				return HookTestResult{}, false, nil
			}
			if d.Type != hooks.Test {
				continue
			}
			res := HookTestResult{MessageID: d.MessageID, Delivery: d}
			if d.Attempts > 0 {
				if a, ok, err := lastAttemptOf(ctx, st, hookID, d.MessageID); err != nil {
					return HookTestResult{}, false, err
				} else if ok {
					res.Attempt = &a
				}
			}
			return res, true, nil
		}
		if len(page.Deliveries) < f.Deliveries {
			return HookTestResult{}, false, nil
		}
		f.DeliveriesBefore = page.Deliveries[len(page.Deliveries)-1].MessageID
	}
}

// lastAttemptOf is the newest logged attempt of one message to a hook.
func lastAttemptOf(ctx context.Context, st store.HookStore, hookID, messageID string) (hooks.Attempt, bool, error) {
	f := store.DeliveryFilter{Attempts: 100}
	for {
		page, err := st.Deliveries(ctx, hookID, f)
		if err != nil {
			return hooks.Attempt{}, false, storeErr(err)
		}
		for _, a := range page.Attempts {
			if a.MessageID == messageID {
				return a, true, nil
			}
		}
		if len(page.Attempts) < f.Attempts || len(page.Positions) == 0 {
			return hooks.Attempt{}, false, nil
		}
		f.AttemptsBefore = page.Positions[len(page.Positions)-1]
	}
}

// HookDeliveries is what Deliveries returns. NextCursor names the next
// page; it is absent on the last.
type HookDeliveries struct {
	HookID     string           `json:"hook_id"`
	Deliveries []hooks.Delivery `json:"deliveries"`
	Attempts   []hooks.Attempt  `json:"attempts"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// Deliveries returns every delivery of a hook and its whole delivery
// log, page by page.
func (s *Hooks) Deliveries(ctx context.Context, id string) (HookDeliveries, error) {
	return walk(func(p Page) (HookDeliveries, error) { return s.DeliveriesPage(ctx, id, p) },
		func(d HookDeliveries) string { return d.NextCursor },
		func(all *HookDeliveries, d HookDeliveries) {
			all.Deliveries = append(all.Deliveries, d.Deliveries...)
			all.Attempts = append(all.Attempts, d.Attempts...)
			all.NextCursor = d.NextCursor
		})
}

// deliveryPositions is the position a cursor of hooks.deliveries names:
// where each of its two lists goes on, joined by a newline. An empty
// part is a list already read to its end.
func deliveryPositions(deliveries, attempts string) string { return deliveries + "\n" + attempts }

// DeliveriesPage returns one page of a hook's deliveries, newest message
// first, and one of its delivery log, newest attempt first: at most
// p.Limit of each. The two lists page side by side under one cursor,
// each from where its last page ended; the cursor is absent once both
// are read to their ends.
func (s *Hooks) DeliveriesPage(ctx context.Context, id string, p Page) (HookDeliveries, error) {
	if ids.Kind(id) != ids.Hook {
		return HookDeliveries{}, errs.E(errs.InvalidID, "not a hook id: "+quoteID(id)).Unmet("hook ids look like hook:<ULID>")
	}
	q := pageQuery{project: s.Project, query: "hooks.deliveries\x00" + id}
	limit, after, err := q.open(p, "hooks.deliveries", func(after string) bool {
		ds, as, ok := strings.Cut(after, "\n")
		return ok && (ds == "" || ids.Kind(ds) == ids.Message) && (ds != "" || as != "") && !strings.Contains(as, "\n")
	})
	if err != nil {
		return HookDeliveries{}, err
	}
	st, err := s.hookStore()
	if err != nil {
		return HookDeliveries{}, err
	}
	if _, err := st.GetHook(ctx, id); errors.Is(err, store.ErrNotFound) {
		return HookDeliveries{}, errs.E(hooks.HookNotFound, "no such hook "+id).On(id)
	} else if err != nil {
		return HookDeliveries{}, storeErr(err)
	}
	// One more of each than the page: whether it exists says whether the
	// list goes on.
	f := store.DeliveryFilter{Deliveries: limit + 1, Attempts: limit + 1}
	if p.Cursor != "" {
		f.DeliveriesBefore, f.AttemptsBefore, _ = strings.Cut(after, "\n")
		if f.DeliveriesBefore == "" {
			f.Deliveries = 0
		}
		if f.AttemptsBefore == "" {
			f.Attempts = 0
		}
	}
	pg, err := st.Deliveries(ctx, id, f)
	if errors.Is(err, store.ErrInvalidPosition) {
		return HookDeliveries{}, invalidPosition("hooks.deliveries")
	}
	if err != nil {
		return HookDeliveries{}, storeErr(err)
	}
	res := HookDeliveries{HookID: id, Deliveries: pg.Deliveries, Attempts: pg.Attempts}
	var nextDeliveries, nextAttempts string
	if len(res.Deliveries) > limit {
		res.Deliveries = res.Deliveries[:limit]
		nextDeliveries = res.Deliveries[limit-1].MessageID
	}
	if len(res.Attempts) > limit {
		if len(pg.Positions) != len(pg.Attempts) {
			return HookDeliveries{}, storeErr(errors.New("the store gave no position for an attempt"))
		}
		res.Attempts = res.Attempts[:limit]
		nextAttempts = pg.Positions[limit-1]
	}
	if nextDeliveries != "" || nextAttempts != "" {
		res.NextCursor = q.cursor(deliveryPositions(nextDeliveries, nextAttempts))
	}
	if res.Deliveries == nil {
		res.Deliveries = []hooks.Delivery{}
	}
	if res.Attempts == nil {
		res.Attempts = []hooks.Attempt{}
	}
	return res, nil
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
func (s *core) attempt(ctx context.Context, st store.HookStore, h hooks.Hook, d hooks.Delivery, m hooks.Message) (hooks.Attempt, hooks.Delivery, error) {
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
