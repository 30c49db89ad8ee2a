package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"golang.org/x/time/rate"
)

// Default rate limits (docs/security.md, "Rate limits"), sized to what
// SQLite commits on two cores: bench/serveload's floor (the same durable
// work done the simplest way on the same driver) does ~2,500 lifecycles a
// second, 5,000 requests. One token may use all of that, so the server,
// not a bucket, is what bounds one harness running 16 subagents; every
// token together may ask twice that, and a flood beyond it is answered
// 429 with Retry-After before its token is read.
const (
	// DefaultRatePerSecond and DefaultBurst are each token's bucket.
	DefaultRatePerSecond = 5000
	DefaultBurst         = 5000
	// DefaultTotalPerSecond and DefaultTotalBurst are the bucket every
	// request shares, taken before the token is even read.
	DefaultTotalPerSecond = 10000
	DefaultTotalBurst     = 10000
	// DefaultProjectPerSecond and DefaultProjectBurst are each project's
	// bucket, its tokens together: under `dont serve` (one project) no
	// stricter than the total; the API function sets its own
	// (DONT_PROJECT_RATE).
	DefaultProjectPerSecond = DefaultTotalPerSecond
	DefaultProjectBurst     = DefaultTotalBurst
)

// frontDoor refuses, before any bucket or read, a presented token that
// is missing, of no shape dont makes (auth.WellFormed), or one the
// backend refused within refusalMemory.
func (s *server) frontDoor(presented string) error {
	switch {
	case presented == "":
		return errs.E(service.Unauthenticated, "no bearer token")
	case !auth.WellFormed(presented):
		return errs.E(service.Unauthenticated, "malformed bearer token")
	case s.refused.has(presented):
		return errs.E(service.Unauthenticated, "unknown or wrong bearer token")
	}
	return nil
}

// tokenKey is the key of a presented token in the buckets and the
// refusals: its SHA-256, so that neither keeps a secret.
func tokenKey(presented string) string {
	sum := sha256.Sum256([]byte(presented))
	return string(sum[:])
}

// refusalMemory is how long a refused bearer token is refused without a
// read; maxRefusals bounds how many are remembered.
const (
	refusalMemory = time.Minute
	maxRefusals   = 4096
)

// refusals remembers bearer tokens the backend refused (unknown, wrong
// secret, revoked): a client retrying one in a loop, or an attacker
// replaying a revoked one, costs no store read for a minute. A bearer
// token's secret is random, so a refused token never becomes a valid
// one; a callback token is not remembered (a secret rotating under a
// warm process may make it valid later).
type refusals struct {
	mu  sync.Mutex
	at  map[string]time.Time
	now func() time.Time
}

func newRefusals(now func() time.Time) *refusals {
	if now == nil {
		now = time.Now
	}
	return &refusals{at: map[string]time.Time{}, now: now}
}

func (f *refusals) add(presented string) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.at) >= maxRefusals {
		for k, at := range f.at {
			if now.Sub(at) >= refusalMemory {
				delete(f.at, k)
			}
		}
		if len(f.at) >= maxRefusals { // a flood of distinct tokens: start over
			clear(f.at)
		}
	}
	f.at[tokenKey(presented)] = now
}

func (f *refusals) has(presented string) bool {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.at[tokenKey(presented)]
	return ok && now.Sub(at) < refusalMemory
}

// limiter is a token bucket per key (a token id, or a callback token's
// request id). Buckets that have refilled are dropped as the map grows,
// so one bucket per spawn a callback token was used for does not pile up.
type limiter struct {
	mu        sync.Mutex
	rate      rate.Limit
	burst     int
	buckets   map[string]*rate.Limiter
	nextPrune int
	now       func() time.Time
}

// pruneAt is the map size at which full buckets are first dropped.
const pruneAt = 1024

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if burst <= 0 {
		burst = int(perSecond) + 1
	}
	if now == nil {
		now = time.Now
	}
	return &limiter{rate: rate.Limit(perSecond), burst: burst, buckets: map[string]*rate.Limiter{}, nextPrune: pruneAt, now: now}
}

// allow takes one token from key's bucket, or says how long to wait.
func (l *limiter) allow(key string) (time.Duration, bool) {
	now := l.now()
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.nextPrune {
			l.prune(now)
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	res := b.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// prune drops the buckets that are full again: a new bucket is the same.
// It runs when the map has doubled since, so its cost is constant per key.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	l.nextPrune = max(pruneAt, 2*len(l.buckets))
}

// size is how many buckets the limiter keeps.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// idempotentCall is one call's Idempotency-Key. What the store keeps is
// the package comment of internal/idempotency: read-only tools skip it,
// a response carrying a secret is stored redacted (idempotency.StoredForm).
type idempotentCall struct {
	store idempotency.Store
	key   string
	// scope is the principal and the tool: "<principal>/<tool name>".
	scope   string
	claimed bool
	// exclusive calls are applied at most once by the service's own
	// conditions (a callback resolves its spawn once; an entity has one
	// pending verification spawn): a concurrent duplicate is refused
	// there, so the key needs no claim before the call runs, only its
	// successful response remembered after: one write instead of two.
	//
	// A tool that CommitsKey is one too, by its commit's condition on the
	// key: of two requests with one key only one commit can carry it, and
	// the other applies nothing (idempotency.ErrTaken).
	exclusive bool
	// mayDefer: the service's own conditions make the call once
	// (idempotency.Put.MayDefer), not only the key's record.
	mayDefer    bool
	fingerprint string
	// readOnly: the tool is annotated read-only, so the key is ignored.
	readOnly bool
	// repeatable: running the call twice changes nothing more, or
	// nothing harmful (tools.Tool.RerunSafe), so a retry may take over a
	// stale claim.
	// Otherwise a stale claim is refused (IdempotencyOutcomeUnknown) and
	// an interrupted call keeps its claim: it may have been applied.
	repeatable bool
	// resumable: a retry of a stale claim runs again, told when the cut
	// run claimed the key (resumeSince, tools.Tool.ResumesKey), and
	// resumes from what that run wrote.
	resumable   bool
	resumeSince time.Time
}

// begin claims the key, or returns the first response to replay.
func (i *idempotentCall) begin(ctx context.Context, body []byte) (*idempotency.Record, error) {
	if i.store == nil || i.key == "" {
		return nil, nil
	}
	if len(i.key) > 255 {
		return nil, errs.E(errs.InvalidArgument, "Idempotency-Key is longer than 255 bytes")
	}
	if i.readOnly {
		// A read changes nothing, so a retry may simply run again; a
		// replayed read would answer stale data. No record, no writes.
		return nil, nil
	}
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	var existing *idempotency.Record
	var err error
	if i.exclusive {
		i.fingerprint = fp
		if existing, err = i.store.Lookup(ctx, i.name(), time.Now()); err != nil {
			return nil, errs.E(errs.StoreError, "cannot read the Idempotency-Key").Wrap(err)
		}
		if existing == nil || !existing.Done {
			return nil, nil
		}
	} else {
		if !i.repeatable {
			// A stale claim is one whose call may have been applied: read
			// the key before Claim could take it over. A claim made after
			// this read is fresh, and Claim returns it.
			if existing, err = i.store.Lookup(ctx, i.name(), time.Now()); err != nil {
				return nil, errs.E(errs.StoreError, "cannot read the Idempotency-Key").Wrap(err)
			}
			if existing.OutcomeUnknown(time.Now()) && existing.Fingerprint == fp && i.resumable {
				// Take the stale claim over (Claim below) and resume.
				i.resumeSince, existing = existing.At, nil
			} else if existing.OutcomeUnknown(time.Now()) && existing.Fingerprint == fp {
				return nil, errs.E(IdempotencyOutcomeUnknown, "the first request with this Idempotency-Key did not finish and may have been applied; it is not run again under this key")
			}
		}
		if existing != nil {
			// Known already: replayed, refused as reused or as running below.
		} else if existing, err = i.store.Claim(ctx, i.name(), fp, time.Now()); err != nil {
			return nil, errs.E(errs.StoreError, "cannot record the Idempotency-Key").Wrap(err)
		}
		if existing == nil {
			i.claimed = true
			return nil, nil
		}
	}
	if existing.Fingerprint != fp {
		return nil, errs.E(IdempotencyMismatch, "this Idempotency-Key was used for a different request")
	}
	if !existing.Done {
		return nil, errs.E(IdempotencyConflict, "the first request with this Idempotency-Key is still running")
	}
	return existing, nil
}

// pending is the call's idempotency.Pending: for an exclusive call (and a
// tool that CommitsKey), its response is written in the commit that
// applies it (internal/service commitAnswering), encoded here as respond
// would encode it; nil for every other call, claimed and completed
// around it.
func (i *idempotentCall) pending(r *http.Request, start time.Time) *idempotency.Pending {
	if !i.exclusive || i.fingerprint == "" {
		return nil
	}
	return &idempotency.Pending{Name: i.name(), Fingerprint: i.fingerprint, MayDefer: i.mayDefer,
		Encode: func(out any) (int, []byte, bool) {
			res, ok := out.(tools.Output)
			if !ok {
				return 0, nil, false
			}
			env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
			if err != nil {
				return 0, nil, false
			}
			env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds(), RequestID: requestID(r)}
			return okStatus(res), envelope.Marshal(env), true
		}}
}

// name is the key as stored: scoped to the principal and the tool.
func (i *idempotentCall) name() string { return i.scope + "/" + i.key }

// idempotencyKeyDescription is the Idempotency-Key header of a read-only
// or a writing tool in the OpenAPI document.
func idempotencyKeyDescription(readOnly bool) string {
	if readOnly {
		return "ignored: a read-only call is not remembered, and a retry reads again"
	}
	var secrets []string
	for _, kind := range slices.Sorted(maps.Keys(idempotency.SecretFields)) {
		for _, field := range idempotency.SecretFields[kind] {
			secrets = append(secrets, "data."+field+" of a "+kind+" envelope")
		}
	}
	return "for 24 h, a retried request with the same key returns the first response and is not applied twice; " +
		"a secret in it (" + strings.Join(secrets, ", ") + ") is replayed as \"" + idempotency.Redacted + "\" with the warning " + string(idempotency.SecretNotReplayed)
}

// finish stores the response, in the form that may be replayed
// (idempotency.StoredForm: no secret). Responses of interrupted requests
// are not remembered: the key is released so a retry runs again.
func (i *idempotentCall) finish(ctx context.Context, status int, body []byte) {
	if i.exclusive && i.fingerprint != "" && status/100 == 2 && ctx.Err() == nil {
		// Only a success is remembered: a concurrent duplicate's refusal
		// must not become the answer to the call that was applied.
		i.store.Remember(context.WithoutCancel(ctx), i.name(), i.fingerprint, status, idempotency.StoredForm(body), time.Now())
		return
	}
	if !i.claimed {
		return
	}
	if status == 499 || ctx.Err() != nil {
		switch {
		case i.repeatable:
			i.store.Release(context.WithoutCancel(ctx), i.name())
		case status/100 == 2:
			// Applied, though the caller left: keep its response.
			i.store.Complete(context.WithoutCancel(ctx), i.name(), status, idempotency.StoredForm(body))
		}
		// Otherwise the claim stays: the call may have committed before
		// it was interrupted, and a retry must not apply it again.
		return
	}
	i.store.Complete(context.WithoutCancel(ctx), i.name(), status, idempotency.StoredForm(body))
}
