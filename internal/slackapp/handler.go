package slackapp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/service"
)

// Request error codes (internal/present has their exit codes and steps).
const (
	BadSignature    errs.Code = "slack-signature-invalid"
	StaleRequest    errs.Code = "slack-request-stale"
	ReplayedRequest errs.Code = "slack-request-replayed"
	BadRequest      errs.Code = "slack-request-invalid"
)

// MaxAge is how old a request's X-Slack-Request-Timestamp may be, and
// MaxSkew how far ahead of this server's clock.
const (
	MaxAge  = 5 * time.Minute
	MaxSkew = 30 * time.Second
)

// DefaultResponseURLPrefix is where Slack's response_url points: a
// response is posted nowhere else.
const DefaultResponseURLPrefix = "https://hooks.slack.com/"

// Project is the service and idempotency store a Slack request acts on.
type Project struct {
	Service *service.Service
	// Replays remembers every accepted request (by its signature) for
	// idempotency.Window, longer than MaxAge: a replay is refused.
	Replays idempotency.Store
}

// Config is a Slack app's endpoint.
type Config struct {
	// SigningSecret is the Slack app's signing secret (a person-set
	// secret: docs/approvals.md, "Slack").
	SigningSecret string
	// Project finds the project the app answers for.
	Project func(ctx context.Context) (Project, error)
	// PublicURL is the approvals page, for "Open in dont".
	PublicURL string
	// ResponseURLPrefix bounds response_url (DefaultResponseURLPrefix if
	// empty; tests point it at a fake Slack).
	ResponseURLPrefix string
	// HTTPClient posts to response_url (http.DefaultClient if nil).
	HTTPClient *http.Client
	// Clock is "now" (nil: the wall clock).
	Clock func() time.Time
	Log   *slog.Logger
}

// Handler serves Slack's requests: POST …/interactions (block_actions)
// and POST …/commands (`/dont link <code>`). Fail writes a refusal (the
// transport's error envelope).
type Handler struct {
	cfg  Config
	fail func(w http.ResponseWriter, r *http.Request, err error)
}

// NewHandler returns the handler of cfg.
func NewHandler(cfg Config, fail func(w http.ResponseWriter, r *http.Request, err error)) *Handler {
	if cfg.ResponseURLPrefix == "" {
		cfg.ResponseURLPrefix = DefaultResponseURLPrefix
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, fail: fail}
}

func (h *Handler) now() time.Time {
	if h.cfg.Clock != nil {
		return h.cfg.Clock()
	}
	return time.Now()
}

// maxBody caps a Slack request body (an interaction payload carries the
// whole message it came from).
const maxBody = 1 << 20

// verified reads the request's body once it is shown to be Slack's:
// signed with the signing secret, stamped within MaxAge (and not beyond
// MaxSkew ahead), and never seen before. Anything else is refused before
// the body is read as a request.
func (h *Handler) verified(w http.ResponseWriter, r *http.Request) ([]byte, Project, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		h.fail(w, r, errs.E(BadRequest, "the request body could not be read").Wrap(err))
		return nil, Project{}, false
	}
	ts, err := strconv.ParseInt(r.Header.Get("X-Slack-Request-Timestamp"), 10, 64)
	if err != nil {
		h.fail(w, r, errs.E(BadSignature, "no X-Slack-Request-Timestamp: not a request Slack signed; nothing changed").Unmet("Slack signs every request"))
		return nil, Project{}, false
	}
	at := time.Unix(ts, 0)
	if now := h.now(); now.Sub(at) > MaxAge || at.Sub(now) > MaxSkew {
		h.fail(w, r, errs.E(StaleRequest, "the request was stamped "+at.UTC().Format(time.RFC3339)+", outside "+MaxAge.String()+" of now; nothing changed").
			Unmet("a Slack request is answered within "+MaxAge.String()+" of its timestamp"))
		return nil, Project{}, false
	}
	if h.cfg.SigningSecret == "" {
		h.fail(w, r, errs.E(service.SlackUnavailable, "this server has no Slack signing secret; nothing changed"))
		return nil, Project{}, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, h.cfg.SigningSecret)
	if err == nil {
		_, err = sv.Write(body)
	}
	if err == nil {
		err = sv.Ensure()
	}
	if err != nil {
		h.fail(w, r, errs.E(BadSignature, "the request's X-Slack-Signature does not verify with the signing secret; nothing changed").
			Unmet("Slack signs every request with the app's signing secret").Wrap(err))
		return nil, Project{}, false
	}
	p, err := h.cfg.Project(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return nil, Project{}, false
	}
	if p.Replays == nil {
		h.fail(w, r, errs.E(service.SlackUnavailable, "this server keeps no record of Slack requests, so it cannot refuse a replay; nothing changed"))
		return nil, Project{}, false
	}
	// The signature covers the timestamp and the body: one key per
	// request Slack sent.
	sum := sha256.Sum256([]byte(r.Header.Get("X-Slack-Signature")))
	key := "slack/" + hex.EncodeToString(sum[:])
	existing, err := p.Replays.Claim(r.Context(), key, key, h.now())
	if err != nil {
		h.fail(w, r, err)
		return nil, Project{}, false
	}
	if existing != nil {
		h.fail(w, r, errs.E(ReplayedRequest, "this Slack request was received before; a replay changes nothing").
			Unmet("each Slack request is acted on once"))
		return nil, Project{}, false
	}
	if err := p.Replays.Complete(r.Context(), key, http.StatusOK, nil); err != nil {
		h.fail(w, r, err)
		return nil, Project{}, false
	}
	return body, p, true
}

func form(body []byte) (map[string][]string, error) {
	r, _ := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	return r.PostForm, nil
}

// Interactions serves a block_actions request: a click on Approve or
// Refuse. Every refusal of the answer itself (an unlinked user, a token
// no longer an approver's, a question that ended or changed, an approve
// forged for a question too long to show) answers 200 — Slack shows no
// error of an interactivity URL — with a message to the user alone, and
// changes nothing.
func (h *Handler) Interactions(w http.ResponseWriter, r *http.Request) {
	body, p, ok := h.verified(w, r)
	if !ok {
		return
	}
	f, err := form(body)
	if err != nil {
		h.fail(w, r, errs.E(BadRequest, "the body is not a form").Wrap(err))
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(firstOf(f["payload"])), &cb); err != nil || cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		h.fail(w, r, errs.E(BadRequest, "the payload is not a block_actions interaction").Unmet("dont reads block_actions payloads"))
		return
	}
	act := cb.ActionCallback.BlockActions[0]
	if act.ActionID != ActionApprove && act.ActionID != ActionRefuse {
		w.WriteHeader(http.StatusOK) // "Open in dont" is a link: nothing to do
		return
	}
	id, digest, ok := ParseButtonValue(act.Value)
	if !ok {
		h.fail(w, r, errs.E(BadRequest, "the button names no question").Unmet("a dont button carries its question and digest"))
		return
	}
	team := cb.Team.ID
	if team == "" {
		team = cb.User.TeamID
	}
	ctx := r.Context()
	in := service.SlackAnswerInput{Team: team, User: cb.User.ID, ApprovalID: id, ShownDigest: digest, Approve: act.ActionID == ActionApprove}
	if !in.Approve {
		in.Reason = "refused in Slack"
	}
	decided, _, err := p.Service.Slack().Answer(ctx, in)
	w.WriteHeader(http.StatusOK)
	if err != nil {
		h.tell(ctx, cb.ResponseURL, refusalText(err))
		return
	}
	text, blocks := Ending(decided.View.Approval, h.cfg.PublicURL)
	h.respond(ctx, cb.ResponseURL, &slack.WebhookMessage{Text: text, Blocks: &slack.Blocks{BlockSet: blocks}, ReplaceOriginal: true})
}

// refusalText tells the Slack user why their click changed nothing.
func refusalText(err error) string {
	var e *errs.Error
	if !errors.As(err, &e) {
		return "dont could not record this answer; nothing changed. Answer on the approvals page."
	}
	switch e.Code {
	case service.SlackUnlinked:
		return "Your Slack user is not linked to a dont approver, so this click changed nothing. " +
			"To link it: with your approver token run `dont approvals slack-link`, then send `/dont link <code>` here within 10 minutes."
	case service.SlackNotApprover:
		return "The approver token your Slack user is linked to is revoked or no approver's; this click changed nothing. Link again with a current approver token."
	case service.SlackNotShownWhole:
		return "This question is too long to show whole in Slack, so it is approved only on the approvals page; nothing changed."
	}
	return "Nothing changed: " + e.Message
}

// Commands serves the `/dont` slash command: `/dont link <code>` links
// the sending Slack user to the approver who made the code.
func (h *Handler) Commands(w http.ResponseWriter, r *http.Request) {
	body, p, ok := h.verified(w, r)
	if !ok {
		return
	}
	f, err := form(body)
	if err != nil {
		h.fail(w, r, errs.E(BadRequest, "the body is not a form").Wrap(err))
		return
	}
	words := strings.Fields(firstOf(f["text"]))
	reply := "Usage: /dont link <code> (make the code with your approver token: dont approvals slack-link)"
	if len(words) == 2 && words[0] == "link" {
		_, err := p.Service.Slack().Link(r.Context(), firstOf(f["team_id"]), firstOf(f["user_id"]), words[1])
		switch {
		case err == nil:
			reply = "Linked: your clicks on dont's buttons now answer as the approver who made this code."
		default:
			reply = "Not linked: " + errMessage(err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(slack.Msg{ResponseType: slack.ResponseTypeEphemeral, Text: reply})
}

func errMessage(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "the link could not be recorded"
}

func firstOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// tell posts text to the clicking user alone.
func (h *Handler) tell(ctx context.Context, responseURL, text string) {
	h.respond(ctx, responseURL, &slack.WebhookMessage{Text: text, ResponseType: slack.ResponseTypeEphemeral})
}

// respond posts msg to the interaction's response_url, only where Slack's
// response URLs are.
func (h *Handler) respond(ctx context.Context, responseURL string, msg *slack.WebhookMessage) {
	if !strings.HasPrefix(responseURL, h.cfg.ResponseURLPrefix) {
		h.cfg.Log.Warn("slack: response_url outside the allowed prefix; not posted", "url_prefix", h.cfg.ResponseURLPrefix)
		return
	}
	if err := slack.PostWebhookCustomHTTPContext(ctx, responseURL, h.cfg.HTTPClient, msg); err != nil {
		h.cfg.Log.Warn("slack: response_url post failed", "err", err)
	}
}
