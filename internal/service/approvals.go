package service

// Tier escalation with human approval, as docs/design.md §6 describes
// it. The rules live in internal/approvals; this file orders them
// so that the escalation fails closed: the hop is validated before any
// question exists, a question exists only if someone can answer it, an
// answer is mapped to a verdict before anything acts on it, the first
// answer wins by a conditional write, and every ending of a question is
// announced through one best-effort helper.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/store"
)

// Approvals configures tier escalation: its store and its timings.
type Approvals struct {
	Store store.ApprovalStore
	// Timeout is a question's deadline (approvals.DefaultTimeout if zero).
	Timeout time.Duration
	// TimeoutMin and TimeoutMax bound the deadline a requester may ask
	// for (approvals.DeadlineRange: 30 s and Timeout if zero). Person-only
	// settings, like Timeout.
	TimeoutMin, TimeoutMax time.Duration
	// RemindAt is the person's share of a question's deadline (0 < RemindAt
	// < 1; 0: no reminders) after which, if nobody has answered, the hooks
	// that hear approval.reminder are told once (approvalreminder.go).
	RemindAt float64
	// TwoPersonFrom is the person's two-person rule: a question for this
	// tier or a wider one is approved only by two different approvers
	// (approvaltwoperson.go; unset: one approval decides).
	TwoPersonFrom approvals.TwoPersonFrom
	// Lease is how recently a client must have read a session's frames to
	// count as a live subscriber (DefaultSubscriberLease if zero).
	Lease time.Duration
	// Poll is how often blocking waits re-read the store (DefaultPoll if zero).
	Poll time.Duration
	// SessionCeiling is the widest tier an agent may open a session at
	// (approvals.DefaultSessionCeiling if unset); above it only a person
	// may (auth.Principal.IsPerson). It is a person's setting, read where
	// an agent cannot write it: dont serve's start-up flag or environment,
	// the deployment's configuration (docs/security.md).
	SessionCeiling approvals.Tier
	// PasskeyRequiredFrom is the narrowest tier whose approve needs a
	// fresh passkey assertion bound to the question (passkey.go); "" for
	// none. A person's setting, read like SessionCeiling.
	PasskeyRequiredFrom approvals.Tier
	// Rules are the person's approval rules (internal/rules), read by the
	// front end from the person's settings only: a rule that matches a
	// question answers it before a person is asked, recorded and
	// announced like a person's answer, by "rule:<name>".
	Rules rules.Set
	// Scheduled says a scheduled sweep ends due questions and repairs
	// missing ending frames (AWS: the sweeper function, every minute,
	// besides a queue message per deadline), so that every call's
	// sweep-first covers spawns only: two index reads fewer per call.
	Scheduled bool
}

// Defaults of the Approvals settings.
const (
	DefaultSubscriberLease = 10 * time.Second
	DefaultPoll            = 25 * time.Millisecond
	// MaxFramesWait bounds one long-poll of a session's frames.
	MaxFramesWait = 60 * time.Second
)

// Error codes of tier escalation. Every refusal exits 1; a missing
// session or request exits 3 like other state errors.
const (
	SessionNotFound      errs.Code = "session-not-found"
	ApprovalNotFound     errs.Code = "approval-not-found"
	UnknownTier          errs.Code = errs.Code(approvals.RuleUnknownTier)
	HopNotAllowed        errs.Code = errs.Code(approvals.RuleNotInRow)
	HopRatchet           errs.Code = errs.Code(approvals.RuleRatchet)
	CallOfAnotherSession errs.Code = errs.Code(approvals.RuleOtherSession)
	EscalationPending    errs.Code = errs.Code(approvals.RulePending)
	NoSubscriber         errs.Code = errs.Code(approvals.CauseNoSubscriber)
	ApprovalRefused      errs.Code = "approval-refused"
	ApprovalTimedOut     errs.Code = "approval-timed-out"
	ApprovalCancelled    errs.Code = "approval-cancelled"
	ApprovalChannelError errs.Code = "approval-channel-error"
	ApprovalsUnavailable errs.Code = "approvals-unavailable"
	FrameLogInconsistent errs.Code = "frame-log-inconsistent"
	// QuestionChanged refuses an answer whose shown digest is not the
	// question's: it was for another question, or another version of it.
	QuestionChanged errs.Code = "question-changed"
	// SessionAboveCeiling: an agent asked for a session wider than the
	// person's ceiling; only a person opens one.
	SessionAboveCeiling errs.Code = "session-above-ceiling"
)

func (s *core) approvalStore() (store.ApprovalStore, error) {
	if s.Approvals.Store == nil {
		return nil, errs.E(ApprovalsUnavailable, "this store keeps no sessions or approvals")
	}
	return s.Approvals.Store, nil
}

func (s *core) approvalTimeout() time.Duration {
	if s.Approvals.Timeout > 0 {
		return s.Approvals.Timeout
	}
	return approvals.DefaultTimeout
}

func (s *core) subscriberLease() time.Duration {
	if s.Approvals.Lease > 0 {
		return s.Approvals.Lease
	}
	return DefaultSubscriberLease
}

func (s *core) approvalPoll() time.Duration {
	if s.Approvals.Poll > 0 {
		return s.Approvals.Poll
	}
	return DefaultPoll
}

// SessionView is a session as callers see it.
type SessionView struct {
	approvals.Session
	LastRead       *time.Time `json:"last_read_at,omitempty"`
	LiveSubscriber bool       `json:"live_subscriber"`
}

// OpenSessionInput opens a session at its default tier.
type OpenSessionInput struct {
	Tier string
	Name string
	By   string
}

// OpenSession records a new session with its default tier.
func (s *Escalations) OpenSession(ctx context.Context, in OpenSessionInput) (SessionView, error) {
	var res SessionView
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	if !approvals.Tier(in.Tier).Valid() {
		return res, errs.E(errs.InvalidArgument, "unknown tier "+quoteID(in.Tier)).
			Unmet("tier is one of " + approvals.TierNames(approvals.Tiers))
	}
	if p := s.PrincipalOf(ctx); approvals.AboveCeiling(approvals.Tier(in.Tier), s.Approvals.SessionCeiling) && !p.IsPerson() {
		ceiling := approvals.CeilingOrDefault(s.Approvals.SessionCeiling)
		return res, errs.E(SessionAboveCeiling, "a "+p.Role+" may open a session at most at "+string(ceiling)+", the person's session ceiling; "+
			in.Tier+" needs a person").Unmet("tier at most "+string(ceiling)+" for an agent").
			With("tier", in.Tier).With("ceiling", string(ceiling))
	}
	if len(in.Name) > 200 {
		return res, errs.E(errs.InvalidArgument, "a session name is at most 200 bytes").
			Unmet("a session name is at most 200 bytes").With("tier", in.Tier)
	}
	now := s.now()
	ses := approvals.Session{ID: s.newID(ids.Session, now), Name: in.Name, Tier: approvals.Tier(in.Tier), OpenedBy: s.by(ctx, in.By), OpenedAt: now}
	if err := st.CreateSession(ctx, ses); err != nil {
		return res, storeErr(err)
	}
	return SessionView{Session: ses}, nil
}

// ShowSession returns a session and whether a subscriber is live.
func (s *Escalations) ShowSession(ctx context.Context, id string) (SessionView, error) {
	var res SessionView
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	ses, err := s.session(ctx, st, id)
	if err != nil {
		return res, err
	}
	v := SessionView{Session: ses}
	last, err := s.lastRead(ctx, st, id)
	if err != nil {
		return res, storeErr(err)
	}
	if !last.IsZero() {
		v.LastRead = &last
		v.LiveSubscriber = s.live(last)
	}
	return v, nil
}

func (s *core) session(ctx context.Context, st store.ApprovalStore, id string) (approvals.Session, error) {
	if ids.Kind(id) != ids.Session {
		return approvals.Session{}, errs.E(errs.InvalidID, "not a session id: "+quoteID(id)).Unmet("session ids look like ses:<ULID>")
	}
	ses, err := st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ses, errs.E(SessionNotFound, "no session "+id+" in this project").On(id)
	}
	if err != nil {
		return ses, storeErr(err)
	}
	return ses, nil
}

func (s *core) live(lastRead time.Time) bool {
	return !lastRead.IsZero() && s.now().Sub(lastRead) < s.subscriberLease()
}

// by names who acts: the explicit name, else the API caller's token, else
// the service's author (the embedded CLI's user).
func (s *core) by(ctx context.Context, who string) string {
	if who != "" {
		return who
	}
	return s.actor(ctx)
}

// ApprovalView is an approval as callers see it.
type ApprovalView struct {
	approvals.Approval
	// GrantedTier is set only on an approval: the tier for this one call.
	GrantedTier approvals.Tier `json:"granted_tier,omitempty"`
	// SessionTier is the session's default, unchanged by any grant.
	SessionTier approvals.Tier `json:"session_tier,omitempty"`
	// RemainingMS is the time left of a pending question.
	RemainingMS *int64 `json:"remaining_ms,omitempty"`
	// Applied tells an answerer or a canceller whether its call decided.
	Applied *bool `json:"applied,omitempty"`
	// ShownDigest is the digest of what every answering medium shows of
	// the question (approvals.ShownDigest); an answer sends it back.
	ShownDigest string `json:"shown_digest"`
}

func (s *core) view(a approvals.Approval) ApprovalView {
	v := ApprovalView{Approval: a, ShownDigest: approvals.ShownDigest(a.Shown())}
	v.GrantedTier, _ = a.Grant()
	if a.State == approvals.Pending && a.Asked {
		ms := approvals.Remaining(a, s.now()).Milliseconds()
		v.RemainingMS = &ms
	}
	return v
}

// EscalateInput asks for one wider tier for one call of a session.
type EscalateInput struct {
	SessionID string
	CallID    string
	To        string
	Reason    string
	Preview   string // the command, as the approver will see it
	Requester string // who asks (an author name; a token id over HTTP)
	NoWait    bool
	// Deadline is how long the requester asks the question to stay open
	// (0: the person's default); it must lie in the person's range
	// (questionTimeout).
	Deadline time.Duration
}

type askedKey struct{}

// WithAskedNotice returns a context under which Escalate calls f once its
// question exists, before it starts to wait: front ends tell the person
// where the question went.
func WithAskedNotice(ctx context.Context, f func(approvals.Approval)) context.Context {
	return context.WithValue(ctx, askedKey{}, f)
}

// Escalate asks a person for one wider tier for one call. Fail-closed by
// order: the input is checked, the hop table is consulted before any
// question exists (a refusal is recorded, no question is created), then
// the question is created only if a subscriber is live (else refused and
// recorded), and a store failure anywhere while asking is a refusal. It
// then waits for the verdict unless NoWait; an interrupted wait cancels
// the question. Only an approval returns without error, and only it
// carries a tier.
func (s *Escalations) Escalate(ctx context.Context, in EscalateInput) (ApprovalView, []envelope.Warning, error) {
	var res ApprovalView
	st, err := s.approvalStore()
	if err != nil {
		return res, nil, err
	}
	if err := checkEscalateInput(in); err != nil {
		return res, nil, err
	}
	timeout, err := s.questionTimeout(in.Deadline)
	if err != nil {
		return res, nil, err
	}
	in.Requester = s.by(ctx, in.Requester)
	ses, err := s.session(ctx, st, in.SessionID)
	if err != nil {
		if errs.Is(err, errs.StoreError) || errs.Is(err, errs.DBLocked) {
			return res, nil, channelRefusal("", err)
		}
		return res, nil, err
	}
	var a approvals.Approval
	for attempt := 0; ; attempt++ {
		records, err := st.ListApprovals(ctx, store.ApprovalFilter{CallID: in.CallID})
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, approvals.Call{}, approvals.CauseChannelError, err)
		}
		call := approvals.CallOf(ses.ID, ses.Tier, in.CallID, records)
		// 1. The hop table, before the channel is consulted.
		if r := approvals.ValidateHop(ses.ID, call, approvals.Tier(in.To)); r != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, r.Rule, r)
		}
		// 2. The person's rules answer before a person is asked.
		if v, ok := s.Approvals.Rules.Decide(in.Preview, in.To); ok && v.Decision != rules.Ask {
			return s.answerByRule(ctx, st, ses, in, call, v, timeout)
		}
		// 3. A question needs someone who can answer it.
		last, err := s.lastRead(ctx, st, ses.ID)
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
		}
		if !s.live(last) && !s.hookSubscribed(ctx) {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseNoSubscriber, nil)
		}
		// 4. The question, created together with its delivery.
		now := s.now()
		a = approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
			To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, Asked: true,
			State: approvals.Pending, CreatedAt: now, Deadline: now.Add(timeout)}
		a.RemindAt = s.reminderAt(now, a.Deadline)
		a.TwoPerson = s.Approvals.TwoPersonFrom.Covers(a.To)
		q := approvals.RequestFrame(a)
		err = st.CreateApproval(ctx, a, &q)
		if store.FailedOn(err, in.CallID) && attempt < 3 {
			continue // another question for this call committed first: validate again
		}
		if err != nil {
			return res, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
		}
		break
	}
	if s.ApprovalScheduler != nil {
		if err := s.ApprovalScheduler.ScheduleApprovalTimeout(ctx, a.ID, a.Deadline); err != nil {
			s.logWarn("schedule approval timeout", "approval_id", a.ID, "err", err)
		}
	}
	if f, ok := ctx.Value(askedKey{}).(func(approvals.Approval)); ok && f != nil {
		f(a)
	}
	if in.NoWait {
		v := s.view(a)
		v.SessionTier = ses.Tier
		return v, nil, nil
	}
	return s.waitVerdict(ctx, st, a.ID, true)
}

// RuleAuthor is how a rule's verdict names who answered: "rule:<name>".
const RuleAuthor = "rule:"

// answerByRule records the question a rule answers, as asked (its
// question frame, so that the inbox, webhooks and audit see it like any
// other), and settles it at once by the rule: approved by an allow rule,
// refused by a forbid rule, announced with its ending frame. The
// requester receives the verdict as from a person.
func (s *core) answerByRule(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput, call approvals.Call, v rules.Verdict, timeout time.Duration) (ApprovalView, []envelope.Warning, error) {
	now := s.now()
	a := approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
		To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, Asked: true,
		State: approvals.Pending, CreatedAt: now, Deadline: now.Add(timeout)}
	q := approvals.RequestFrame(a)
	if err := st.CreateApproval(ctx, a, &q); err != nil {
		return ApprovalView{}, nil, s.refuseUnasked(ctx, st, ses, in, call, approvals.CauseChannelError, err)
	}
	d := approvals.Decision{Verdict: approvals.Approved, Cause: approvals.CauseAnswer, By: RuleAuthor + v.Rule, Answer: string(v.Decision),
		Detail: "the person's rule " + v.Rule + " allows it"}
	if v.Decision == rules.Forbid {
		d.Verdict, d.Detail = approvals.Refused, "the person's rule "+v.Rule+" forbids it"
	}
	ended, _, warns := s.settle(ctx, st, a, d, now)
	if ended.State != approvals.Resolved {
		return ApprovalView{}, warns, verdictError(approvals.Approval{SessionID: ses.ID, Verdict: approvals.Refused, Cause: approvals.CauseChannelError,
			Detail: "the rule's verdict could not be recorded"}).On(a.ID)
	}
	v2, err := s.verdictResult(ctx, st, ended)
	return v2, warns, err
}

// ApprovalTimeoutScheduler is the optional extension of TimeoutScheduler
// that drives question deadlines from outside (a delayed queue message
// calling ExpireApproval). Embedded mode needs none: every invocation
// sweeps, and a waiting requester ends its own question at the deadline.
type ApprovalTimeoutScheduler interface {
	ScheduleApprovalTimeout(ctx context.Context, approvalID string, deadline time.Time) error
}

func checkEscalateInput(in EscalateInput) error {
	bad := func(msg, clause string) error {
		return errs.E(errs.InvalidArgument, msg).Unmet(clause)
	}
	switch {
	case strings.TrimSpace(in.CallID) == "" || len(in.CallID) > 200 || !utf8.ValidString(in.CallID) || strings.ContainsAny(in.CallID, "\n\r\t"):
		return bad("a `call` id of 1 to 200 printable bytes is required", "call id must not be empty")
	case strings.TrimSpace(in.Reason) == "" || len(in.Reason) > 2048:
		return bad("a `reason` of 1 to 2048 bytes is required: the person answering reads it", "reason must not be empty")
	case len(in.Preview) > 4096:
		return bad("the command preview is at most 4096 bytes", "preview <= 4096 bytes")
	case len(in.To) > 64:
		return bad("`to` names a tier", "to is a tier name")
	}
	return nil
}

// refuseUnasked records a request that was refused before it became a
// question and returns the refusal. Recording is best-effort: the refusal
// stands even if the store cannot record it.
func (s *core) refuseUnasked(ctx context.Context, st store.ApprovalStore, ses approvals.Session, in EscalateInput, call approvals.Call, cause approvals.Cause, why error) error {
	now := s.now()
	a := approvals.Approval{ID: s.newID(ids.Approval, now), SessionID: ses.ID, CallID: in.CallID, From: call.Current,
		To: approvals.Tier(in.To), Preview: in.Preview, Reason: in.Reason, Requester: in.Requester, State: approvals.Pending,
		CreatedAt: now, Deadline: now}
	d := approvals.Decision{Verdict: approvals.Refused, Cause: cause}
	if why != nil {
		d.Detail = why.Error()
		var r *approvals.Refusal
		if errors.As(why, &r) {
			d.Detail = r.Message
		}
	}
	a, _ = approvals.Resolve(a, d, now)
	recorded := true
	if err := st.CreateApproval(context.WithoutCancel(ctx), a, nil); err != nil {
		recorded = false
		s.logWarn("record refused escalation", "session_id", ses.ID, "call_id", in.CallID, "cause", cause, "err", err)
	}
	e := verdictError(a)
	if recorded {
		e = e.On(a.ID)
	}
	if why != nil && cause == approvals.CauseChannelError {
		e = e.Wrap(why)
	}
	return e
}

// channelRefusal is the refusal when the store failed before even the
// session could be read.
func channelRefusal(id string, err error) *errs.Error {
	e := errs.E(ApprovalChannelError, "the escalation is refused: the store failed while asking ("+errs.As(err).Message+")").
		Unmet("the question must reach the session's subscribers").Wrap(err)
	if id != "" {
		e = e.On(id)
	}
	return e
}

// verdictError is the error a requester receives for every ending but an
// approval. Its remediation names the request's session, which is not the
// error's entity, so the session goes along as an argument.
func verdictError(a approvals.Approval) *errs.Error {
	return verdictErrorOf(a).With("session", a.SessionID)
}

func verdictErrorOf(a approvals.Approval) *errs.Error {
	detail := ""
	if a.Detail != "" {
		detail = ": " + a.Detail
	}
	switch a.Verdict {
	case approvals.TimedOut:
		return errs.E(ApprovalTimedOut, "nobody answered before the deadline "+a.Deadline.Format(timeFormat)+"; the escalation is refused and the command must not run").
			Unmet("approved by a person before the deadline")
	case approvals.Cancelled:
		return errs.E(ApprovalCancelled, "the request was cancelled"+by(a)+"; the command must not run").Unmet("approved by a person before the deadline")
	case approvals.Refused:
		switch a.Cause {
		case approvals.RuleUnknownTier, approvals.RuleNotInRow, approvals.RuleRatchet, approvals.RuleOtherSession, approvals.RulePending:
			return errs.E(errs.Code(a.Cause), "refused before any question was asked"+detail).Unmet("the target is in the row of the call's current tier, once per call, within its own session")
		case approvals.CauseNoSubscriber:
			return errs.E(NoSubscriber, "refused: no client has read session "+a.SessionID+"'s frames recently, so nobody could answer; no question was asked").
				Unmet("a live subscriber on the session")
		case approvals.CauseChannelError:
			return errs.E(ApprovalChannelError, "refused: the store failed while asking"+detail).Unmet("the question must reach the session's subscribers")
		case approvals.CauseUnreadable:
			return errs.E(ApprovalRefused, "refused: the answer"+by(a)+" could not be read ("+quoteID(a.Answer)+"), and an unreadable answer is a refusal; the command must not run").
				Unmet("an explicit approval")
		}
		return errs.E(ApprovalRefused, "refused"+by(a)+detail+"; the command must not run, at this tier or any other").Unmet("an explicit approval")
	}
	return errs.E(errs.Internal, "approval "+a.ID+" has no verdict "+string(a.Verdict))
}

func by(a approvals.Approval) string {
	if a.AnsweredBy == "" {
		return ""
	}
	return " by " + a.AnsweredBy
}

// verdictResult is what a requester gets for an ended approval: the grant
// on approval (GrantedTier set), the verdict's error otherwise.
func (s *core) verdictResult(ctx context.Context, st store.ApprovalStore, a approvals.Approval) (ApprovalView, error) {
	if _, ok := a.Grant(); !ok {
		return ApprovalView{}, verdictError(a).On(a.ID)
	}
	v := s.view(a)
	if ses, err := st.GetSession(ctx, a.SessionID); err == nil {
		v.SessionTier = ses.Tier
	}
	return v, nil
}

// Wait blocks until the approval has a verdict: the requester's
// resumed wait. It returns the grant on approval and the verdict's error
// otherwise. At the deadline it ends the question itself (timed-out). If
// ctx ends first it stops waiting and the question stays open.
func (s *Escalations) Wait(ctx context.Context, id string) (ApprovalView, []envelope.Warning, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalView{}, nil, err
	}
	if _, err := s.approvalRecord(ctx, st, id); err != nil {
		return ApprovalView{}, nil, err
	}
	return s.waitVerdict(ctx, st, id, false)
}

// waitVerdict polls the store (across processes: the SQLite file) until
// the approval ends. A store failure while waiting is a refusal: the
// requester stops and ends the question as refused if it still can.
func (s *core) waitVerdict(ctx context.Context, st store.ApprovalStore, id string, cancelOnInterrupt bool) (ApprovalView, []envelope.Warning, error) {
	var warns []envelope.Warning
	withWarnings := func(v ApprovalView, err error) (ApprovalView, []envelope.Warning, error) {
		return v, warns, err
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	<-poll.C
	reminded := false
	for {
		a, err := st.GetApproval(ctx, id)
		if err != nil && ctx.Err() == nil {
			// The channel failed: fail closed. Try to end the question as
			// refused so that nobody approves a request nobody waits for.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if cur, gerr := st.GetApproval(cctx, id); gerr == nil {
				ended, _, w := s.settle(cctx, st, cur, approvals.Decision{Verdict: approvals.Refused, Cause: approvals.CauseChannelError,
					Detail: "the requester could not read the verdict: " + errs.As(err).Message}, s.now())
				warns = append(warns, w...)
				if ended.State == approvals.Resolved && ended.Verdict != approvals.Approved {
					return withWarnings(ApprovalView{}, verdictError(ended).On(id))
				}
			}
			return withWarnings(ApprovalView{}, channelRefusal(id, storeErr(err)))
		}
		if err == nil && a.State == approvals.Resolved {
			return withWarnings(s.verdictResult(ctx, st, a))
		}
		now := s.now()
		if err == nil && !reminded && approvals.NeedsReminder(a, now) {
			// The requester is a sweeper of its own question too; a failure
			// here is left to the next sweep.
			_, rerr := s.remind(ctx, st, a, now)
			reminded = rerr == nil
		}
		if err == nil && approvals.Expired(a, now) {
			ended, _, w := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
			warns = append(warns, w...)
			if ended.State == approvals.Resolved {
				return withWarnings(s.verdictResult(ctx, st, ended))
			}
			continue
		}
		wait := s.approvalPoll()
		if err == nil {
			wait = min(wait, approvals.Remaining(a, now)+time.Millisecond)
			if !reminded && a.RemindAt != nil && now.Before(*a.RemindAt) {
				wait = min(wait, a.RemindAt.Sub(now))
			}
		}
		poll.Reset(wait)
		select {
		case <-poll.C:
			continue
		case <-ctx.Done():
		}
		if !cancelOnInterrupt {
			return withWarnings(ApprovalView{}, errs.E(errs.Interrupted, "stopped waiting; "+id+" is still open until its deadline").On(id))
		}
		// The requester gave up: cancel the question (announced like every ending).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cur, gerr := st.GetApproval(cctx, id)
		if gerr != nil {
			return withWarnings(ApprovalView{}, channelRefusal(id, storeErr(gerr)))
		}
		ended, _, w := s.settle(cctx, st, cur, interruptDecision(ctx, cur), s.now())
		warns = append(warns, w...)
		if ended.Verdict == approvals.Approved {
			return withWarnings(ApprovalView{}, errs.E(errs.Interrupted, "interrupted; "+id+" had just been approved, but the grant is not used").On(id).
				Unmet("an interrupted wait does not use its grant").With("session", ended.SessionID))
		}
		return withWarnings(ApprovalView{}, verdictError(ended).On(id))
	}
}

// settle commits decision d on a (first answer wins) and announces the
// ending. It returns the approval as it ended — by d, or by whichever
// resolver committed first — and whether d's commit was the one.
func (s *core) settle(ctx context.Context, st store.ApprovalStore, a approvals.Approval, d approvals.Decision, now time.Time) (approvals.Approval, bool, []envelope.Warning) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		r, ok := approvals.Resolve(a, d, now)
		if !ok {
			return a, false, nil
		}
		if r.State == approvals.Pending { // a two-person question's first approval: no ending yet
			err := st.RecordFirstApproval(ctx, r)
			if err == nil {
				return r, true, nil
			}
			if !isCondition(err) {
				s.logWarn("record first approval", "approval_id", a.ID, "err", err)
				return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID,
					Message: "could not record the approval: " + errs.As(storeErr(err)).Message}}
			}
			cur, err := st.GetApproval(ctx, a.ID)
			if err != nil {
				return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID, Message: "could not re-read " + a.ID}}
			}
			a = cur
			continue
		}
		err := st.ResolveApproval(ctx, r)
		if err == nil {
			return r, true, s.announce(ctx, st, r)
		}
		if !isCondition(err) {
			s.logWarn("resolve approval", "approval_id", a.ID, "err", err)
			return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID,
				Message: "could not record the verdict " + string(r.Verdict) + ": " + errs.As(storeErr(err)).Message}}
		}
		cur, err := st.GetApproval(ctx, a.ID)
		if err != nil {
			return a, false, []envelope.Warning{{Code: envelope.CodeOf(ApprovalChannelError), RequestID: a.ID, Message: "could not re-read " + a.ID}}
		}
		a = cur
	}
	return a, false, nil
}

// announce is the one helper that announces an ending: it appends the
// ending frame of a resolved question to its session's log. It is
// best-effort and never raises: the verdict already happened, so a failed
// announce is logged and becomes a warning, and the next sweep appends
// the missing frame. The store appends at most one ending frame per
// request, so a racing repair cannot announce twice.
func (s *core) announce(ctx context.Context, st store.ApprovalStore, a approvals.Approval) []envelope.Warning {
	f, ok := approvals.EndingFrame(a)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := st.AnnounceEnding(cctx, f)
	if err == nil || isCondition(err) {
		return nil
	}
	s.logWarn("announce ending", "approval_id", a.ID, "verdict", string(a.Verdict), "err", err)
	return []envelope.Warning{{Code: envelope.WarnAnnounceFailed, RequestID: a.ID, Outcome: string(a.Verdict),
		Message: "the verdict " + string(a.Verdict) + " stands, but its ending frame could not be appended yet (" + errs.As(storeErr(err)).Message + "); the next sweep announces it"}}
}

func (s *core) logWarn(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Warn(msg, args...)
	}
}

// AnswerInput is an answer to a question. Answer is mapped to a verdict
// before anything acts on it (approvals.VerdictOf): only an explicit yes
// approves, and anything unreadable refuses.
type AnswerInput struct {
	ApprovalID string
	Answer     any
	Reason     string
	By         string
	// ShownDigest is the digest of the question as the person saw it
	// (approvals.ShownDigest). When given, nothing is answered unless the
	// question is still open and its digest is this one.
	ShownDigest string
	// PasskeyAssertion is the browser's assertion (PublicKeyCredential
	// JSON) over the challenge issued for this question (Passkeys.ApproveBegin);
	// an approve needs it at or above the person's level (passkeys.go).
	PasskeyAssertion json.RawMessage
}

// Answer answers a question. The first answer wins; a later one
// (same or contrary) changes nothing and receives the recorded verdict
// with a warning. An answer at or after the deadline ends the question as
// timed-out instead.
func (s *Escalations) Answer(ctx context.Context, in AnswerInput) (Decided, []envelope.Warning, error) {
	d := approvals.VerdictOf(in.Answer)
	if len(in.Reason) > 2048 {
		return Decided{}, nil, errs.E(errs.InvalidArgument, "a reason is at most 2048 bytes").Unmet("a reason is at most 2048 bytes")
	}
	d.By = s.by(ctx, in.By)
	if in.Reason != "" {
		d.Detail = in.Reason
	}
	if err := s.passkeyCheck(ctx, in, d); err != nil {
		return Decided{}, nil, err
	}
	return s.decideShown(ctx, in.ApprovalID, d, in.ShownDigest)
}

// Approve answers yes.
func (s *Escalations) Approve(ctx context.Context, id, by string) (Decided, []envelope.Warning, error) {
	return s.Answer(ctx, AnswerInput{ApprovalID: id, Answer: "approve", By: by})
}

// Refuse answers no.
func (s *Escalations) Refuse(ctx context.Context, id, reason, by string) (Decided, []envelope.Warning, error) {
	return s.Answer(ctx, AnswerInput{ApprovalID: id, Answer: "refuse", Reason: reason, By: by})
}

// Cancel withdraws a question (the requester giving up). Like an
// answer it is conditional on the question still being open.
func (s *Escalations) Cancel(ctx context.Context, id, reason, by string) (Decided, []envelope.Warning, error) {
	if err := s.withdrawable(ctx, id); err != nil {
		return Decided{}, nil, err
	}
	d := approvals.Decision{Verdict: approvals.Cancelled, Cause: approvals.CauseRequester, By: s.by(ctx, by), Detail: reason}
	return s.decide(ctx, id, d)
}

// Decided is what an answer or a cancel did: the approval as it ended
// and, when the call did not simply decide it, a note saying why (the
// answer was unreadable, came after the deadline, or came second).
type Decided struct {
	View ApprovalView
	Note *envelope.Warning
}

// decide returns the warnings settling raised; the note comes apart,
// so that the tool surface can place its sweep's warnings between them.
func (s *core) decide(ctx context.Context, id string, d approvals.Decision) (Decided, []envelope.Warning, error) {
	return s.decideShown(ctx, id, d, "")
}

// decideShown decides id by d. With shown (the digest of the question as
// the person saw it), it answers only the question that was shown: if
// its digest is another one, nothing is answered (question-changed). The
// stored question never changes while pending (its shown fields are
// written once, and the store's answer commit is conditioned on them:
// ApprovalStore.ResolveApproval), so the record checked here is the one
// the commit answers.
func (s *core) decideShown(ctx context.Context, id string, d approvals.Decision, shown string) (Decided, []envelope.Warning, error) {
	st, err := s.approvalStore()
	if err != nil {
		return Decided{}, nil, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return Decided{}, nil, err
	}
	if shown != "" {
		if cur := approvals.ShownDigest(a.Shown()); !approvals.DigestMatches(shown, cur) {
			return Decided{}, nil, errs.E(QuestionChanged, id+" is not the question that was shown (its digest is "+cur+", the answer was for "+quoteID(shown)+"); nothing was answered").
				On(id).Unmet("an answer names the digest of the question as shown")
		}
	}
	ended, committed, warns := s.settle(ctx, st, a, d, s.now())
	var res Decided
	applied := committed && ended.Verdict == d.Verdict
	if n, ok := twoPersonNote(ended, committed, d); ok {
		res.Note, applied = n, committed
		res.View = s.view(ended)
		res.View.Applied = &applied
		return res, warns, nil
	}
	switch {
	case d.Cause == approvals.CauseUnreadable && applied:
		res.Note = &envelope.Warning{Code: envelope.WarningCode(approvals.CauseUnreadable), RequestID: id, Outcome: string(ended.Verdict),
			Message: "the answer " + quoteID(d.Answer) + " could not be read as approve or refuse; it was recorded as a refusal"}
	case committed && !applied:
		res.Note = &envelope.Warning{Code: envelope.WarnApprovalExpired, RequestID: id, Outcome: string(ended.Verdict),
			Message: id + " reached its deadline " + ended.Deadline.Format(timeFormat) + " before this answer; it ended as timed-out and the answer was not applied"}
	case !committed && ended.State == approvals.Resolved:
		res.Note = &envelope.Warning{Code: envelope.WarnApprovalAlreadyResolved, RequestID: id, Outcome: string(ended.Verdict),
			Message: id + " had already ended (" + string(ended.Verdict) + "); the first answer wins and this one changed nothing"}
	case !committed:
		return Decided{}, warns, errs.E(ApprovalChannelError, "the answer could not be recorded (the store failed); "+id+" is still open").On(id).
			Unmet("an answer counts once it is recorded")
	}
	res.View = s.view(ended)
	res.View.Applied = &applied
	return res, warns, nil
}

func (s *core) approvalRecord(ctx context.Context, st store.ApprovalStore, id string) (approvals.Approval, error) {
	if ids.Kind(id) != ids.Approval {
		return approvals.Approval{}, errs.E(ApprovalNotFound, "not an approval id: "+quoteID(id)).Unmet("approval ids look like apr:<ULID>")
	}
	a, err := st.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return a, errs.E(ApprovalNotFound, "no approval "+id+" in this project").On(id)
	}
	if err != nil {
		return a, storeErr(err)
	}
	return a, nil
}

// Show returns one approval.
func (s *Escalations) Show(ctx context.Context, id string) (ApprovalView, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalView{}, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return ApprovalView{}, err
	}
	return s.view(a), nil
}

// ApprovalQuery narrows Escalations.List.
type ApprovalQuery struct {
	SessionID string
	// Pending keeps open questions only (not past their deadline).
	Pending bool
}

// ApprovalList is what Escalations.List returns.
type ApprovalList struct {
	Approvals []ApprovalView `json:"approvals"`
	Count     int            `json:"count"`
}

// List lists approval requests, oldest first.
func (s *Escalations) List(ctx context.Context, q ApprovalQuery) (ApprovalList, error) {
	var res ApprovalList
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	f := store.ApprovalFilter{SessionID: q.SessionID}
	if q.SessionID != "" {
		if _, err := s.session(ctx, st, q.SessionID); err != nil {
			return res, err
		}
	}
	if q.Pending {
		f.State = approvals.Pending
	}
	list, err := st.ListApprovals(ctx, f)
	if err != nil {
		return res, storeErr(err)
	}
	now := s.now()
	out := []ApprovalView{}
	for _, a := range list {
		if q.Pending && approvals.Expired(a, now) {
			continue
		}
		out = append(out, s.view(a))
	}
	return ApprovalList{Approvals: out, Count: len(out)}, nil
}

// FramesInput reads a session's frame stream.
type FramesInput struct {
	SessionID string
	// After is the cursor already read (0: from the start).
	After int64
	// Wait long-polls: return as soon as a frame is there, or after Wait.
	Wait time.Duration
	// Subscriber names the reader for its lease (default: the author).
	Subscriber string
	Limit      int
}

// FramesPage is one read of a session's frames.
type FramesPage struct {
	SessionID string            `json:"session_id"`
	Frames    []approvals.Frame `json:"frames"`
	// Cursor is what to pass as After next time.
	Cursor int64 `json:"cursor"`
	Count  int   `json:"count"`
}

// Frames reads a session's frames after a cursor, long-polling up to
// Wait. Every read renews the reader's subscriber lease: a session has a
// live subscriber while some client has read its frames within the lease.
// While it waits it also sweeps, so timed-out endings appear on the stream.
func (s *Escalations) Frames(ctx context.Context, in FramesInput) (FramesPage, error) {
	var res FramesPage
	st, err := s.approvalStore()
	if err != nil {
		return res, err
	}
	if in.After < 0 || in.Wait < 0 || in.Wait > MaxFramesWait {
		return res, errs.E(errs.InvalidArgument, fmt.Sprintf("`after` must be >= 0 and `wait` between 0 and %s", MaxFramesWait)).
			Unmet(fmt.Sprintf("after >= 0 and 0 <= wait <= %s", MaxFramesWait))
	}
	if in.Limit <= 0 || in.Limit > 1000 {
		in.Limit = 1000
	}
	if _, err := s.session(ctx, st, in.SessionID); err != nil {
		return res, err
	}
	sub := in.Subscriber
	if sub == "" {
		sub = s.by(ctx, "")
	}
	if sub == "" {
		sub = "anonymous"
	}
	touched := time.Time{}
	// Only a reader who could answer makes the session "watched": a
	// principal holding the approver role (an approver token, the owner at
	// the embedded CLI). A harness (MCP, a harness token, the embedded CLI
	// under a harness signal) never does, so it cannot stand in for a person.
	canAnswer := s.PrincipalOf(ctx).Holds(auth.RoleApprover)
	touch := func() error {
		if !canAnswer || time.Since(touched) < s.subscriberLease()/4 {
			return nil
		}
		touched = time.Now()
		return st.TouchSubscriber(ctx, in.SessionID, sub, s.now())
	}
	until := time.Now().Add(in.Wait)
	swept := time.Now()
	poll := time.NewTimer(0)
	defer poll.Stop()
	<-poll.C
	for {
		if err := touch(); err != nil {
			return res, storeErr(err)
		}
		frames, err := st.Frames(ctx, in.SessionID, in.After, in.Limit)
		if err != nil {
			return res, storeErr(err)
		}
		left := time.Until(until)
		if len(frames) > 0 || left <= 0 {
			page := FramesPage{SessionID: in.SessionID, Frames: frames, Cursor: in.After, Count: len(frames)}
			if page.Frames == nil {
				page.Frames = []approvals.Frame{}
			}
			if len(frames) > 0 {
				page.Cursor = frames[len(frames)-1].Cursor
			}
			for i, f := range page.Frames {
				if f.Kind == approvals.FrameRequested {
					page.Frames[i].ShownDigest = approvals.ShownDigest(f.Shown())
				}
			}
			return page, nil
		}
		if time.Since(swept) >= 200*time.Millisecond {
			swept = time.Now()
			if _, err := s.SweepApprovals(ctx, store.SweepBatch); err != nil {
				s.logWarn("sweep approvals", "err", err)
			}
		}
		poll.Reset(min(s.approvalPoll(), left))
		select {
		case <-poll.C:
		case <-ctx.Done():
			return res, errs.E(errs.Interrupted, "stopped reading frames").On(in.SessionID).With("after", strconv.FormatInt(in.After, 10))
		}
	}
}

// ApprovalSweep says what an approvals sweep did.
type ApprovalSweep struct {
	// TimedOut lists questions this sweep ended at their deadline.
	TimedOut []string `json:"timed_out"`
	// Announced lists endings whose missing frame this sweep appended.
	Announced []string `json:"announced"`
	// Reminded lists questions whose reminder this sweep sent.
	Reminded []string `json:"reminded,omitempty"`
	// Warnings name the due questions this sweep could not end and the
	// endings it could not announce, with why: a sweep that could not do
	// its work says so rather than report nothing due.
	Warnings []envelope.Warning `json:"-"`
}

// SweepApprovals ends due questions as timed-out (announced like every
// ending) and appends the ending frames a failed announce left out. It is
// idempotent; questions another resolver ended first are left alone.
func (s *core) SweepApprovals(ctx context.Context, limit int) (ApprovalSweep, error) {
	rep := ApprovalSweep{TimedOut: []string{}, Announced: []string{}}
	st, err := s.approvalStore()
	if err != nil {
		return rep, err
	}
	if limit <= 0 {
		limit = store.SweepBatch
	}
	now := s.now()
	due, err := st.DueApprovals(ctx, now, limit)
	if err != nil {
		return rep, storeErr(err)
	}
	for _, a := range due {
		ended, committed, warns := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
		if committed && ended.Verdict == approvals.TimedOut {
			rep.TimedOut = append(rep.TimedOut, a.ID)
		}
		rep.Warnings = append(rep.Warnings, warns...)
	}
	// Reminders after deadlines: a question at its deadline ends, and is
	// not reminded of.
	reminded, warns, err := s.sweepReminders(ctx, st, now, limit)
	if err != nil {
		return rep, err
	}
	rep.Reminded = reminded
	rep.Warnings = append(rep.Warnings, warns...)
	missing, err := st.Unannounced(ctx, limit)
	if err != nil {
		return rep, storeErr(err)
	}
	for _, a := range missing {
		w := s.announce(ctx, st, a)
		if len(w) == 0 {
			rep.Announced = append(rep.Announced, a.ID)
		}
		rep.Warnings = append(rep.Warnings, w...)
	}
	return rep, nil
}

// sweepApprovalsQuietly is the approvals part of every sweep: it never
// fails the sweep it is part of, but what it could not do comes back as
// warnings (a failed read of the due questions as sweep-failed), so that
// the sweep never says "nothing was due" when it could not look.
func (s *core) sweepApprovalsQuietly(ctx context.Context, limit int) (*ApprovalSweep, []envelope.Warning) {
	if s.Approvals.Store == nil || s.Approvals.Scheduled {
		return nil, nil
	}
	rep, err := s.SweepApprovals(ctx, limit)
	if err != nil {
		s.logWarn("sweep approvals", "err", err)
		rep.Warnings = append(rep.Warnings, envelope.Warning{Code: envelope.WarnSweepFailed,
			Message: "the questions' part of the sweep failed: " + errs.As(err).Message + "; the next sweep, or an answer, ends a due question"})
	}
	if len(rep.TimedOut)+len(rep.Announced)+len(rep.Reminded) == 0 {
		return nil, rep.Warnings
	}
	return &rep, rep.Warnings
}

// ApprovalExpiry is what ExpireApproval found or did.
type ApprovalExpiry struct {
	ApprovalID string            `json:"approval_id"`
	Verdict    approvals.Verdict `json:"verdict,omitempty"`
	// Committed is true when this call ended the question as timed-out,
	// false when another ending (or an earlier delivery) came first.
	Committed bool `json:"-"`
}

// ExpireApproval is the queue-driven timeout of one question: it ends it
// as timed-out if it is still pending and due. Not yet due reports the
// time left, so a delayed-message scheduler can re-enqueue it. Any number
// of calls for one question commit at most one ending.
func (s *core) ExpireApproval(ctx context.Context, id string) (ApprovalExpiry, time.Duration, error) {
	st, err := s.approvalStore()
	if err != nil {
		return ApprovalExpiry{}, 0, err
	}
	a, err := s.approvalRecord(ctx, st, id)
	if err != nil {
		return ApprovalExpiry{}, 0, err
	}
	now := s.now()
	if a.State == approvals.Pending && !approvals.Expired(a, now) {
		return ApprovalExpiry{ApprovalID: id}, approvals.Remaining(a, now), nil
	}
	ended, committed, warns := s.settle(ctx, st, a, approvals.Decision{Verdict: approvals.TimedOut, Cause: approvals.CauseDeadline}, now)
	if (!committed || len(warns) > 0) && approvals.NeedsAnnouncement(ended) {
		// Another ending whose announce is missing, or ours failed: try
		// (again) now rather than at the next sweep.
		s.announce(ctx, st, ended)
	}
	return ApprovalExpiry{ApprovalID: id, Verdict: ended.Verdict, Committed: committed && ended.Verdict == approvals.TimedOut}, 0, nil
}

// AuditFindingsShown is how many findings a failed audit's error names.
const AuditFindingsShown = 100

// Audit runs the frame-log guard over the whole store (`dont
// approvals audit`, and what CI and tests consume): every question has
// exactly one question frame and, once ended, exactly one ending frame
// carrying its verdict; every frame names a known request. Findings fail
// it (frame-log-inconsistent, exit 3), and the report still comes back
// with them; a clean report says how much it looked at, so "nothing
// found" never reads like "nothing read".
func (s *Escalations) Audit(ctx context.Context) (approvals.AuditReport, error) {
	rep, err := s.auditApprovals(ctx)
	if err != nil || rep.OK() {
		return rep, err
	}
	e := errs.E(FrameLogInconsistent, fmt.Sprintf("the frame log is inconsistent: %d finding(s) over %d requests and %d frames", len(rep.Findings), rep.Requests, rep.Frames))
	// The error names the first findings only: one response carries it,
	// and a log broken everywhere would pass a Lambda's 6 MB
	// (docs/design.md, "Paginated reads").
	for i, f := range rep.Findings {
		if i == AuditFindingsShown {
			e.Unmet(fmt.Sprintf("and %d more finding(s)", len(rep.Findings)-i))
			break
		}
		e.Unmet(f.String())
	}
	return rep, e
}

func (s *core) auditApprovals(ctx context.Context) (approvals.AuditReport, error) {
	st, err := s.approvalStore()
	if err != nil {
		return approvals.AuditReport{}, err
	}
	// Frames are read before the records: a frame and its record's
	// announced mark commit together, so every frame read has its record
	// marked. The audit is meant for a quiescent log (a test's final state,
	// CI): a question resolved while it reads may show as unannounced.
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return approvals.AuditReport{}, storeErr(err)
	}
	var frames []approvals.Frame
	for _, ses := range sessions {
		for after := int64(0); ; {
			page, err := st.Frames(ctx, ses.ID, after, 1000)
			if err != nil {
				return approvals.AuditReport{}, storeErr(err)
			}
			if len(page) == 0 {
				break
			}
			frames = append(frames, page...)
			after = page[len(page)-1].Cursor
		}
	}
	records, err := st.ListApprovals(ctx, store.ApprovalFilter{})
	if err != nil {
		return approvals.AuditReport{}, storeErr(err)
	}
	return approvals.Audit(records, frames), nil
}

// CheckApprovals is the error every approvals operation returns when the
// service has no approvals port (nil when it has one). The tool surface
// asks it before the sweep a call runs first, as the operations do.
func (s *core) CheckApprovals() error {
	_, err := s.approvalStore()
	return err
}
