package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
)

func tierNames(ts []approvals.Tier) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func init() {
	RegisterGroup("sessions", "Sandboxed agent sessions and their default tiers.")
	RegisterGroup("approvals", "Answer, watch and audit tier escalations.")
	approvalID := Param{Name: "id", Type: String, Required: true, Positional: true, Description: "approval request id (apr:…)"}
	sessionParam := Param{Name: "session", Type: String, Env: "DONT_SESSION", Description: "session id (ses:…)"}
	requiredSession := sessionParam
	requiredSession.Required = true
	// Only approvers answer (docs/design.md §6.3): the harness that asked cannot answer its own request.
	answerers := []string{auth.RoleApprover}

	register("sessions.open", func() *Tool {
		return &Tool{Name: "sessions.open", Summary: "Open a session at its default tier; prints its id (ses:…).",
			Params: []Param{
				{Name: "tier", Type: String, Required: true, Enum: tierNames(approvals.Tiers), Description: "the default tier every call of the session runs at"},
				{Name: "name", Type: String, Description: "a label"},
			},
			approvals: true, sweep: always,
			// The session and a keyed call's response are one commit.
			answer: presentBy(opened),
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				return opened(s.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: a.Str("tier"), Name: a.Str("name"), Key: o.Key}))
			}}
	})
	register("sessions.list", func() *Tool {
		return &Tool{Name: "sessions.list", Summary: "List the project's sessions, oldest first: tier, name, who opened it, open questions.", Annotations: Annotations{ReadOnly: true},
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				return data[service.SessionList](envelope.KindSessions)(s.Escalations.ListSessions(ctx))
			}}
	})
	register("sessions.show", func() *Tool {
		return &Tool{Name: "sessions.show", Summary: "Show a session: its default tier and whether a client is watching it.", Annotations: Annotations{ReadOnly: true},
			Params:    []Param{{Name: "id", Type: String, Required: true, Positional: true, Description: "session id (ses:…)"}},
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return session(s.Escalations.ShowSession(ctx, a.Str("id")))
			}}
	})

	register("escalate", func() *Tool {
		return &Tool{Name: "escalate", Summary: "Ask a person for one wider tier for one call; blocks until the verdict (exit 0 with the granted tier, 1 otherwise).",
			Params: []Param{
				requiredSession,
				{Name: "call", Type: String, Required: true, Description: "the call id the wider tier is for (once per call)"},
				// The schema advertises the reachable-in-principle set; the hop
				// table decides at execution what this call may reach, so the
				// name is not an enum here (an unknown tier is refused and recorded).
				{Name: "to", Type: String, Required: true, Description: "target tier: " + approvals.TierNames(approvals.Targets()) + " (the hop table decides what this call may reach)"},
				{Name: "reason", Type: String, Required: true, Description: "why the call needs it; the person answering reads it"},
				{Name: "preview", Type: String, Description: "the command, as the person answering will see it (the CLI takes it after --)"},
				{Name: "no_wait", Type: Boolean, Description: "return the request id at once; resume with dont approvals wait"},
				{Name: "deadline", Type: String, Description: "how long the question stays open (a Go duration such as 10m); within the person's range " +
					"(approval_timeout_min to approval_timeout_max), else refused with deadline-out-of-range; default: approval_timeout"},
			},
			check:     func(a Args) error { _, err := escalateDeadline(a); return err },
			approvals: true, sweep: always,
			runWith: func(ctx context.Context, s *service.Service, a Args, o CallOptions) (Output, error) {
				deadline, _ := escalateDeadline(a)
				return escalated(s.Escalations.Escalate(ctx, service.EscalateInput{SessionID: a.Str("session"), CallID: a.Str("call"), To: a.Str("to"),
					Reason: a.Str("reason"), Preview: a.Str("preview"), NoWait: a.Bool("no_wait"), Deadline: deadline, Asked: o.Asked}))
			}}
	})

	register("approvals.list", func() *Tool {
		return &Tool{Name: "approvals.list", Summary: "List approval requests, oldest first.", Annotations: Annotations{ReadOnly: true},
			Params:    []Param{sessionParam, {Name: "pending", Type: Boolean, Description: "only open questions"}},
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.ApprovalList](envelope.KindApprovals)(s.Escalations.List(ctx, service.ApprovalQuery{SessionID: a.Str("session"), Pending: a.Bool("pending")}))
			}}
	})
	register("approvals.show", func() *Tool {
		return &Tool{Name: "approvals.show", Summary: "Show one approval request.", Annotations: Annotations{ReadOnly: true},
			Params:    []Param{approvalID},
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return approval(s.Escalations.Show(ctx, a.Str("id")))
			}}
	})
	register("approvals.approve", func() *Tool {
		return &Tool{Name: "approvals.approve", Summary: "Approve a request: its call runs at the wider tier. The first answer wins.", Roles: answerers,
			Annotations: Annotations{Presence: true},
			Params: []Param{approvalID, shownDigest(true, "question"), {Name: "passkey_assertion", Type: String,
				Description: "the browser's passkey assertion (PublicKeyCredential JSON) over the challenge of passkeys.approve-begin; needed at or above the project's passkey_required_from"}},
			approvals: true, sweep: answerFirst,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return decided(s.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: a.Str("id"), Answer: "approve", ShownDigest: a.Str("shown_digest"),
					PasskeyAssertion: json.RawMessage(a.Str("passkey_assertion"))}))
			}}
	})
	register("approvals.refuse", func() *Tool {
		return &Tool{Name: "approvals.refuse", Summary: "Refuse a request: its command does not run. The first answer wins.", Roles: answerers,
			Annotations: Annotations{Presence: true},
			Params:      []Param{approvalID, {Name: "reason", Type: String, Description: "why, for the requester"}, shownDigest(false, "question")},
			approvals:   true, sweep: answerFirst,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return decided(s.Escalations.Answer(ctx, service.AnswerInput{ApprovalID: a.Str("id"), Answer: "refuse", Reason: a.Str("reason"), ShownDigest: a.Str("shown_digest")}))
			}}
	})
	register("approvals.cancel", func() *Tool {
		return &Tool{Name: "approvals.cancel", Summary: "Withdraw a request (the requester giving up); announced like every ending.",
			Params:    []Param{approvalID, {Name: "reason", Type: String, Description: "why"}},
			approvals: true, sweep: answerFirst,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return decided(s.Escalations.Cancel(ctx, a.Str("id"), a.Str("reason"), ""))
			}}
	})
	register("approvals.wait", func() *Tool {
		return &Tool{Name: "approvals.wait", Summary: "Wait for a request's verdict: exit 0 with the granted tier, 1 otherwise.",
			Params: []Param{approvalID, {Name: "max_wait", Type: String, Description: "wait at most this long; with no verdict by then it fails with approval-still-open, " +
				"to be called again (a Go duration such as 30s; at most 10m); default: until the verdict"}},
			check:     func(a Args) error { _, err := maxWait(a); return err },
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				within, _ := maxWait(a)
				return escalated(s.Escalations.WaitWithin(ctx, a.Str("id"), within))
			}}
	})
	register("approvals.frames", func() *Tool {
		return &Tool{Name: "approvals.frames", Summary: "Read a session's frames after a cursor (NDJSON on the CLI), long-polling up to --wait.", Annotations: Annotations{ReadOnly: true},
			Params: []Param{
				requiredSession,
				{Name: "after", Type: Integer, Default: 0, Description: "the last cursor already read"},
				{Name: "wait", Type: String, Description: "long-poll up to this long for the first new frame (a Go duration such as 20s; at most 60s)"},
				{Name: "subscriber", Type: String, Description: "the reader's name for its subscriber lease (default: the author)"},
			},
			check:     func(a Args) error { _, err := framesWait(a); return err },
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				wait, _ := framesWait(a)
				return data[service.FramesPage](envelope.KindFrames)(s.Escalations.Frames(ctx, service.FramesInput{SessionID: a.Str("session"), After: int64(a.Int("after")), Wait: wait, Subscriber: a.Str("subscriber")}))
			}}
	})
	register("approvals.inbox", func() *Tool {
		return &Tool{Name: "approvals.inbox", Summary: "Every open question of the project across sessions, the recent endings with their reasons, and the names of the sessions and tokens they mention.",
			Annotations: Annotations{ReadOnly: true},
			Params: []Param{
				{Name: "session", Type: String, Description: "only this session's questions and endings (ses:…)"},
				{Name: "endings", Type: Integer, Default: service.DefaultInboxEndings, Description: "at most this many recent endings, newest first (at most 500)"},
				{Name: "subscriber", Type: String, Description: "the reader's name for its subscriber lease (default: the author)"},
			},
			approvals: true, sweep: always,
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				return data[service.Inbox](envelope.KindApprovalsInbox)(s.Escalations.Inbox(ctx, service.InboxInput{SessionID: a.Str("session"), Endings: a.Int("endings"), Subscriber: a.Str("subscriber")}))
			}}
	})
	register("approvals.sweep", func() *Tool {
		return &Tool{Name: "approvals.sweep", Summary: "End questions past their deadline and announce endings a failed announce left out.",
			Params: []Param{{Name: "limit", Type: Integer, Default: 1000, Description: "at most this many"}},
			run: func(ctx context.Context, s *service.Service, a Args) (Output, error) {
				rep, err := s.SweepApprovals(ctx, a.Int("limit"))
				return Output{Kind: envelope.KindApprovalsSweep, Data: rep, Warnings: rep.Warnings}, err
			}}
	})
	register("approvals.audit", func() *Tool {
		return &Tool{Name: "approvals.audit", Summary: "Check the frame log: every question has exactly one ending frame; fails (exit 3) on any finding.", Annotations: Annotations{ReadOnly: true},
			run: func(ctx context.Context, s *service.Service, _ Args) (Output, error) {
				return audited(s.Escalations.Audit(ctx))
			}}
	})
}

// shownDigest is the shown_digest parameter of an answer: the digest of
// the question (or held call) as the person saw it, which every view of it
// carries. The answer applies only if it is still the one shown
// (docs/approvals.md, "What the person saw").
func shownDigest(required bool, what string) Param {
	d := "the shown_digest of the " + what + " as the person saw it (show, list, inbox and frames carry it): nothing is answered unless it is still the one shown"
	if !required {
		d += "; checked when given"
	}
	return Param{Name: "shown_digest", Type: String, Required: required, Description: d}
}

// answerFirst is the sweep policy of answers and cancels: the answer is
// settled before the sweep, so that a question the sweep would end at its
// deadline gets the answer given in time.
func answerFirst(Args) sweepOrder { return sweepAfter }

// maxWait is the --max-wait of approvals.wait.
func maxWait(a Args) (time.Duration, error) {
	w := a.Str("max_wait")
	if w == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil || d <= 0 || d > service.MaxWaitBound {
		return 0, errs.E(errs.Usage, "approvals.wait: `max_wait` is a duration from 1s to "+service.MaxWaitBound.String()+" such as 30s, got "+quote(w),
			errs.Step{Command: "dont approvals wait <id> --max-wait 30s", Description: "wait at most 30 seconds, then call again while it is pending"})
	}
	return d, nil
}

// framesWait is the --wait of approvals.frames.
func framesWait(a Args) (time.Duration, error) {
	w := a.Str("wait")
	if w == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil {
		return 0, errs.E(errs.Usage, "approvals.frames: `wait` is a duration such as 20s, got "+quote(w),
			errs.Step{Command: "dont approvals frames --session <session> --wait 20s", Description: "long-poll 20 seconds"})
	}
	return d, nil
}

// escalateDeadline is the deadline an escalate asks for (0: none). A
// value that is not a positive duration is a usage error; whether the
// person's range holds it the service decides (deadline-out-of-range).
func escalateDeadline(a Args) (time.Duration, error) {
	w := a.Str("deadline")
	if w == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil || d <= 0 {
		return 0, errs.E(errs.Usage, "escalate: deadline is a positive duration such as 10m, got "+quote(w),
			errs.Step{Command: "dont escalate --session <session> --call <call> --to <tier> --reason \"…\" --deadline 10m", Description: "ask for a question that stays open 10 minutes (within the person's range)"})
	}
	return d, nil
}
