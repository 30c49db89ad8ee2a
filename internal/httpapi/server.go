// Package httpapi is dont's HTTPS JSON API as one net/http handler. The
// same handler runs under `dont serve`, in the API Lambda function and in
// tests. It decodes, authenticates, authorises and calls the tool surface;
// rules live in the service.
package httpapi

import (
	"context"
	"encoding/json"
	"github.com/dont-cli/dont/internal/idempotency"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/readmemo"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
)

// Project is what one authenticated caller works on.
type Project struct {
	Service     *service.Service
	Idempotency idempotency.Store // optional
}

// Backend resolves a presented token to its principal and project.
type Backend interface {
	Authenticate(ctx context.Context, presented string) (auth.Principal, Project, error)
}

// SingleProject is the backend of `dont serve`: one project, its tokens in its store.
type SingleProject struct{ Project Project }

// Authenticate implements Backend.
func (b SingleProject) Authenticate(ctx context.Context, presented string) (auth.Principal, Project, error) {
	p, err := b.Project.Service.Credentials.Authenticate(ctx, presented)
	return p, b.Project, err
}

// Options configure the handler.
type Options struct {
	Backend Backend
	// MaxBody caps request bodies (default 64 KiB).
	MaxBody int64
	// RatePerSecond and Burst limit each token (DefaultRatePerSecond and
	// DefaultBurst if zero); RatePerSecond < 0 disables.
	RatePerSecond float64
	Burst         int
	// TotalPerSecond and TotalBurst limit every request together, before
	// its token is read (DefaultTotalPerSecond and DefaultTotalBurst if
	// zero); TotalPerSecond < 0 disables.
	TotalPerSecond float64
	TotalBurst     int
	// ProjectPerSecond and ProjectBurst limit each project, its tokens
	// together, once the token is known (DefaultProjectPerSecond and
	// DefaultProjectBurst if zero); ProjectPerSecond < 0 disables.
	ProjectPerSecond float64
	ProjectBurst     int
	// Clock is the rate limits' "now" (nil: the wall clock).
	Clock func() time.Time
	Log   *slog.Logger
	// DisableInteractiveConfirm turns the server-side gate of the
	// interactive-confirm contract off (it is on by default): the schema
	// advertises no features.interactive_confirm, cli_confirmed is ignored
	// and every gated call goes through the server's own flow.
	DisableInteractiveConfirm bool
	// Slack, when set, serves a Slack app's requests on
	// /v1/slack/interactions and /v1/slack/commands (docs/approvals.md,
	// "Slack"); the backend must be a SlackBackend.
	Slack *SlackOptions
}

// SlackOptions configure the Slack app's endpoint (slackapp.Config).
type SlackOptions struct {
	// SigningSecret is the app's signing secret, set by a person where
	// they start the server (never read from a workspace).
	SigningSecret string
	// Project names the project the app answers for ("" for `dont serve`'s one).
	Project   string
	PublicURL string
	// ResponseURLPrefix and HTTPClient are slackapp.Config's (tests).
	ResponseURLPrefix string
	HTTPClient        *http.Client
}

// SlackBackend finds the project a Slack app answers for: a Slack
// request carries no bearer token, its signature is its authority.
type SlackBackend interface {
	SlackProject(ctx context.Context, name string) (Project, error)
}

// SlackProject implements SlackBackend: the one project.
func (b SingleProject) SlackProject(context.Context, string) (Project, error) { return b.Project, nil }

// DefaultMaxBody is the request body cap.
const DefaultMaxBody = 64 << 10

type server struct {
	opts    Options
	limiter *limiter
	total   *limiter
	project *limiter
	// refused remembers the bearer tokens the backend refused lately, so
	// that one repeated in a loop costs no read.
	refused *refusals
	log     *slog.Logger
}

// New returns the API handler.
func New(o Options) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.RatePerSecond == 0 {
		o.RatePerSecond = DefaultRatePerSecond
		if o.Burst == 0 {
			o.Burst = DefaultBurst
		}
	}
	if o.TotalPerSecond == 0 {
		o.TotalPerSecond, o.TotalBurst = DefaultTotalPerSecond, DefaultTotalBurst
	}
	if o.ProjectPerSecond == 0 {
		o.ProjectPerSecond = DefaultProjectPerSecond
		if o.ProjectBurst == 0 {
			o.ProjectBurst = DefaultProjectBurst
		}
	}
	s := &server{opts: o, log: o.Log, refused: newRefusals(o.Clock)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.RatePerSecond > 0 {
		s.limiter = newLimiter(o.RatePerSecond, o.Burst, o.Clock)
	}
	if o.TotalPerSecond > 0 {
		s.total = newLimiter(o.TotalPerSecond, o.TotalBurst, o.Clock)
	}
	if o.ProjectPerSecond > 0 {
		s.project = newLimiter(o.ProjectPerSecond, o.ProjectBurst, o.Clock)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/health", s.method(http.MethodGet, s.health))
	mux.HandleFunc("/v1/tools", s.method(http.MethodGet, s.toolList))
	mux.HandleFunc("/v1/openapi.json", s.method(http.MethodGet, s.openapi))
	mux.HandleFunc("/v1/tools/{name}", s.method(http.MethodPost, s.call))
	mux.HandleFunc("/approvals", s.method(http.MethodGet, s.approvalsPage))
	if o.Slack != nil {
		sh := s.slackHandler(*o.Slack)
		mux.HandleFunc("/v1/slack/interactions", s.method(http.MethodPost, sh.Interactions))
		mux.HandleFunc("/v1/slack/commands", s.method(http.MethodPost, sh.Commands))
	}
	mux.HandleFunc("/v1/passkeys/signin/begin", s.method(http.MethodPost, s.passkeySignInBegin))
	mux.HandleFunc("/v1/passkeys/signin/finish", s.method(http.MethodPost, s.passkeySignInFinish))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errs.E(NotFoundRoute, "no route "+r.Method+" "+r.URL.Path))
	})
	return mux
}

// API-only error codes.
const (
	NotFoundRoute       errs.Code = "route-not-found"
	MethodNotAllowed    errs.Code = "method-not-allowed"
	BodyTooLarge        errs.Code = "body-too-large"
	BadJSON             errs.Code = "bad-json"
	IdempotencyConflict errs.Code = "idempotency-in-progress"
	IdempotencyMismatch errs.Code = "idempotency-key-reused"
	// IdempotencyOutcomeUnknown: the first request with this key did not
	// finish, and its tool is not harmless to repeat, so it is not run
	// again under the key (idempotency.Record.OutcomeUnknown).
	IdempotencyOutcomeUnknown errs.Code = "idempotency-outcome-unknown"
	UnsupportedMediaType      errs.Code = "unsupported-media-type"
)

func (s *server) method(m string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			w.Header().Set("Allow", m)
			s.fail(w, r, errs.E(MethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+m))
			return
		}
		h(w, r)
	}
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	s.write(w, r, http.StatusOK, tools.Output{Kind: envelope.KindHealth, Data: map[string]any{"ok": true}}, time.Now())
}

// callRequest is the body of POST /v1/tools/{name}.
type callRequest struct {
	Args map[string]any `json:"args"`
	// CLIConfirmed says a person confirmed this call on the client
	// (the CLI's [y/N] prompt, a button on the web page).
	CLIConfirmed bool `json:"cli_confirmed,omitempty"`
}

func (s *server) call(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := r.PathValue("name")
	t, ok := tools.Lookup(name)
	if !ok {
		s.fail(w, r, errs.E(NotFoundRoute, "unknown tool "+quote(name), errs.Step{Command: "curl $DONT_ENDPOINT/v1/tools", Description: "list the tools"}))
		return
	}
	// One call reads its token, entity and spawn several times over
	// (authenticate, check the callback's powers, apply it); a store may
	// answer the repeats from this request's memo.
	// The call's context is built here and set on the request once, with
	// its principal (each WithContext copies the request).
	ctx := readmemo.With(r.Context())
	// The front door, cheapest first (docs/security.md, "Rate limits"): a
	// token of no shape dont makes, or one refused lately, costs neither a
	// bucket nor a read; then the server's total, then the token's own
	// bucket, both before the token is read, so a token over its rate
	// costs no read either.
	presented := bearer(r)
	if err := s.frontDoor(presented); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dont"`)
		s.fail(w, r, err)
		return
	}
	if s.total != nil {
		if wait, ok := s.total.allow(""); !ok {
			s.throttled(w, r, wait, "rate limit exceeded for this server")
			return
		}
	}
	if s.limiter != nil {
		// Keyed by the whole presented token, not its id: a caller who
		// knows a token's id but not its secret gets a bucket of its own.
		if wait, ok := s.limiter.allow(tokenKey(presented)); !ok {
			s.throttled(w, r, wait, "rate limit exceeded for this token")
			return
		}
	}
	principal, project, err := s.opts.Backend.Authenticate(ctx, presented)
	if err != nil {
		if errs.Is(err, service.Unauthenticated) && !auth.IsCallback(presented) {
			s.refused.add(presented)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="dont"`)
		s.fail(w, r, err)
		return
	}
	if s.project != nil {
		if wait, ok := s.project.allow(principal.Project); !ok {
			s.throttled(w, r, wait, "rate limit exceeded for this project")
			return
		}
	}
	body, err := readBody(w, r, s.opts.MaxBody)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := decodeCall(body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	replay := idempotentCall{store: project.Idempotency, key: r.Header.Get("Idempotency-Key"), scope: idempotency.Scope(principal.TokenID, principal.RequestID, named(req.Args), name),
		readOnly: t.Annotations.ReadOnly, repeatable: t.RerunSafe(), resumable: t.ResumesKey()}
	// A callback token's calls resolve (or read) its one spawn.
	replay.mayDefer = t.Exclusive || principal.Role == auth.RoleCallback
	// A tool whose write is one commit records its key in that commit.
	replay.exclusive = replay.mayDefer || t.CommitsKey()
	if done, err := replay.begin(ctx, body); err != nil || done != nil {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeReplay(w, done)
		return
	}
	// The one place HTTP (and so Lambda) decides who the call runs as.
	// Passkeys bind to the page that called (service.WithPageOrigin).
	r = r.WithContext(service.WithPageOrigin(service.WithPrincipal(ctx, principal), r.Header.Get("Origin")))
	// A keyed call's response is committed with its writes: the key is
	// handed to the call, not carried in its context.
	pending := replay.pending(r, start)
	res, err := tools.CallWith(r.Context(), project.Service, name, req.Args, s.arrival(r, req), tools.CallOptions{Key: pending, ResumeSince: replay.resumeSince})
	if status, body, ok := pending.Sent(); ok {
		// The response was committed with the call: send those bytes.
		s.send(w, r, status, body, start)
		return
	}
	if err != nil && pending.Taken() {
		// Another request with this key committed first: answer as a
		// retry of it would be answered.
		s.replayTaken(w, r, replay, body)
		return
	}
	if err != nil {
		s.respond(w, r, replay, present.Status(err), envelope.Fail(err, res.Warnings), start)
		return
	}
	env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
	if err != nil {
		s.fail(w, r, errs.E(errs.Internal, "cannot encode the result").Wrap(err))
		return
	}
	s.respond(w, r, replay, okStatus(res), env, start)
}

// named is the entity id a call's arguments name ("" if none).
func named(args map[string]any) string {
	id, _ := args["id"].(string)
	return id
}

// throttled answers 429 with Retry-After in whole seconds (at least 1).
func (s *server) throttled(w http.ResponseWriter, r *http.Request, wait time.Duration, message string) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Seconds()+0.999))))
	s.fail(w, r, errs.E(service.RateLimited, message))
}

func (s *server) respond(w http.ResponseWriter, r *http.Request, replay idempotentCall, status int, env envelope.Envelope, start time.Time) {
	env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds(), RequestID: requestID(r)}
	body := envelope.Marshal(env)
	replay.finish(r.Context(), status, body)
	s.send(w, r, status, body, start)
}

// send writes an encoded response.
func (s *server) send(w http.ResponseWriter, r *http.Request, status int, body []byte, start time.Time) {
	id := requestID(r)
	took := time.Since(start).Milliseconds()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", id)
	// One write of a known length: no chunked encoding for a long answer.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	s.log.Info("call", "request_id", id, "path", r.URL.Path, "status", status, "duration_ms", took)
}

// replayTaken answers a call whose commit found its key recorded by a
// concurrent request with the same key: that request's response if the
// bodies match, the key-reuse refusal otherwise; if the record cannot be
// read yet, the in-progress refusal (a retry then finds it).
func (s *server) replayTaken(w http.ResponseWriter, r *http.Request, replay idempotentCall, body []byte) {
	done, lerr := replay.begin(r.Context(), body)
	switch {
	case lerr != nil:
		s.fail(w, r, lerr)
	case done != nil:
		writeReplay(w, done)
	default:
		s.fail(w, r, errs.E(IdempotencyConflict, "the first request with this Idempotency-Key is still running"))
	}
}

// writeReplay sends a remembered response again.
func writeReplay(w http.ResponseWriter, done *idempotency.Record) {
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(done.Status)
	w.Write(idempotency.ReplayForm(done.Body, tools.Names()))
}

func (s *server) write(w http.ResponseWriter, r *http.Request, status int, res tools.Output, start time.Time) {
	env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
	if err != nil {
		s.fail(w, r, errs.E(errs.Internal, "cannot encode the result").Wrap(err))
		return
	}
	s.respond(w, r, idempotentCall{}, status, env, start)
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.respond(w, r, idempotentCall{}, present.Status(err), envelope.Fail(err, nil), time.Now())
}

// bearer is the token of the Authorization header; the scheme is
// case-insensitive (auth.FromAuthorization).
func bearer(r *http.Request) string { return auth.FromAuthorization(r.Header.Get("Authorization")) }

// requestIDPattern is what a caller's X-Request-Id must match to be
// reused (the OpenAPI document says so); wellFormedRequestID checks it
// byte by byte: every call's answer checks it, and a regexp cost each a
// microsecond of dont serve's CPU.
const requestIDPattern = `^[A-Za-z0-9:._-]{1,64}$`

func wellFormedRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ':', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestID reuses a well-formed X-Request-Id, else makes one (once per request).
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); wellFormedRequestID(id) {
		return id
	}
	id := ids.New(ids.Request, time.Now())
	r.Header.Set("X-Request-Id", id)
	return id
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
