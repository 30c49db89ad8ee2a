package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/store"
)

// A Slack user answers a question only as the approver who linked them
// (docs/approvals.md, "Slack"): the approver makes a one-time link code
// with their own approver token, and the Slack user sends it to dont
// from Slack (`/dont link <code>`, a request Slack signs). Nothing else —
// a display name, an email — ever maps a Slack user to an approver.

// SlackLinkCodeTTL is how long a link code can be used.
const SlackLinkCodeTTL = 10 * time.Minute

// SlackLinkCodePrefix starts every link code.
const SlackLinkCodePrefix = "dontlink_"

// Slack error codes (internal/present has their exit codes and steps).
const (
	SlackUnavailable   errs.Code = "slack-unavailable"
	SlackLinkInvalid   errs.Code = "slack-link-code-invalid"
	SlackUnlinked      errs.Code = "slack-user-unlinked"
	SlackNotApprover   errs.Code = "slack-link-not-approver"
	SlackNotShownWhole errs.Code = "slack-question-not-shown-whole"
)

// Slack links Slack users to approvers and answers their clicks.
type Slack struct{ *core }

// Slack is the Slack use case of s.
func (s *Service) Slack() *Slack { return &Slack{s.core} }

func (s *core) slackLinks() (store.SlackLinkStore, error) {
	if st, ok := s.Tokens.(store.SlackLinkStore); ok {
		return st, nil
	}
	return nil, errs.E(SlackUnavailable, "this store keeps no Slack links")
}

// SlackLinkCodeView is a new link code, shown once to the approver.
type SlackLinkCodeView struct {
	Code      string    `json:"code"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
	// Command is what the approver sends in Slack.
	Command string `json:"command"`
}

// CreateLinkCode makes a one-time link code for the calling approver
// token. Only an approver token makes one: the link says "this Slack
// user answers as this token", so the token's holder must be the caller.
func (s *Slack) CreateLinkCode(ctx context.Context) (SlackLinkCodeView, error) {
	st, err := s.slackLinks()
	if err != nil {
		return SlackLinkCodeView{}, err
	}
	p := s.PrincipalOf(ctx)
	if p.TokenID == "" || p.Role != auth.RoleApprover {
		return SlackLinkCodeView{}, errs.E(Forbidden, "only an approver token links a Slack user (the link answers as that token)").
			Unmet("a Slack link is made with an approver token")
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return SlackLinkCodeView{}, err
	}
	code := SlackLinkCodePrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	c := store.SlackLinkCode{Hash: slackCodeHash(code), TokenID: p.TokenID, ExpiresAt: s.now().Add(SlackLinkCodeTTL)}
	if err := st.PutSlackLinkCode(ctx, c); err != nil {
		return SlackLinkCodeView{}, err
	}
	return SlackLinkCodeView{Code: code, TokenID: p.TokenID, ExpiresAt: c.ExpiresAt, Command: "/dont link " + code}, nil
}

func slackCodeHash(code string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(code)))
	return hex.EncodeToString(h[:])
}

// Link links the Slack user who sent code (Slack signed the request
// that says who sent it) to the approver token that made the code. The
// code works once, before it expires, and only while its token is an
// approver's.
func (s *Slack) Link(ctx context.Context, team, user, code string) (store.SlackLink, error) {
	st, err := s.slackLinks()
	if err != nil {
		return store.SlackLink{}, err
	}
	if team == "" || user == "" {
		return store.SlackLink{}, errs.E(errs.InvalidArgument, "a link names a Slack team and user").Unmet("a Slack request names its team and user")
	}
	c, err := st.TakeSlackLinkCode(ctx, slackCodeHash(code))
	if errors.Is(err, store.ErrNotFound) || err == nil && !s.now().Before(c.ExpiresAt) {
		return store.SlackLink{}, errs.E(SlackLinkInvalid, "this link code is unknown, used or expired; nothing was linked").
			Unmet("a link code works once, within " + SlackLinkCodeTTL.String())
	}
	if err != nil {
		return store.SlackLink{}, err
	}
	if _, err := s.approverToken(ctx, c.TokenID); err != nil {
		return store.SlackLink{}, err
	}
	l := store.SlackLink{Team: team, User: user, TokenID: c.TokenID, LinkedAt: s.now()}
	return l, st.PutSlackLink(ctx, l)
}

// approverToken is the token id's token while it is an approver's:
// present, not revoked, role approver.
func (s *core) approverToken(ctx context.Context, id string) (auth.Token, error) {
	ts, err := s.tokens()
	if err != nil {
		return auth.Token{}, err
	}
	t, err := ts.GetToken(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (t.RevokedAt != nil || t.Role != auth.RoleApprover) {
		return auth.Token{}, errs.E(SlackNotApprover, "the approver token this Slack user is linked to is revoked or no approver's; nothing was answered").
			Unmet("a Slack user answers as a current approver token")
	}
	return t, err
}

// SlackAnswerInput is a click on a question's button in Slack.
type SlackAnswerInput struct {
	Team, User  string
	ApprovalID  string
	ShownDigest string
	Approve     bool
	Reason      string
}

// SlackAnswer answers a question for the approver the Slack user is
// linked to, bound to the digest of what the message showed. An approve
// is refused for a question Slack could not show whole (its message has
// no approve button: one that arrives was forged). Nothing is answered
// unless every check passes.
func (s *Slack) Answer(ctx context.Context, in SlackAnswerInput) (Decided, []envelope.Warning, error) {
	st, err := s.slackLinks()
	if err != nil {
		return Decided{}, nil, err
	}
	l, err := st.GetSlackLink(ctx, in.Team, in.User)
	if errors.Is(err, store.ErrNotFound) {
		return Decided{}, nil, errs.E(SlackUnlinked, "this Slack user is not linked to an approver; nothing was answered").
			Unmet("a Slack user answers only once an approver linked them")
	}
	if err != nil {
		return Decided{}, nil, err
	}
	t, err := s.approverToken(ctx, l.TokenID)
	if err != nil {
		return Decided{}, nil, err
	}
	if in.ShownDigest == "" {
		return Decided{}, nil, errs.E(QuestionChanged, "a Slack answer names the digest of the question it showed; nothing was answered").
			Unmet("an answer names the digest of the question as shown")
	}
	if in.Approve {
		ast, err := s.approvalStore()
		if err != nil {
			return Decided{}, nil, err
		}
		a, err := s.approvalRecord(ctx, ast, in.ApprovalID)
		if err != nil {
			return Decided{}, nil, err
		}
		if !hooks.SlackShowsWhole(a.Shown()) {
			return Decided{}, nil, errs.E(SlackNotShownWhole, in.ApprovalID+" is too long to show whole in Slack, so it is approved only where it is shown whole; nothing was answered").
				On(in.ApprovalID).Unmet("an approve comes from a medium that showed the whole question")
		}
	}
	answer := "refuse"
	if in.Approve {
		answer = "approve"
	}
	ctx = WithPrincipal(ctx, auth.Principal{Role: t.Role, TokenID: t.ID, Project: t.Project})
	return (&Escalations{s.core}).Answer(ctx, AnswerInput{ApprovalID: in.ApprovalID, Answer: answer, Reason: in.Reason, By: t.ID, ShownDigest: in.ShownDigest})
}

// Question is the approval id, for rendering its Slack message.
func (s *Slack) Question(ctx context.Context, id string) (approvals.Approval, error) {
	st, err := s.approvalStore()
	if err != nil {
		return approvals.Approval{}, err
	}
	return s.approvalRecord(ctx, st, id)
}
