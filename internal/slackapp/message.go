// Package slackapp is dont's Slack app: the interactive messages of a
// question (Block Kit, with Approve and Refuse buttons), the endpoint
// Slack calls when a person clicks one or sends `/dont link <code>`, and
// the Web API calls that post and update those messages. It uses
// github.com/slack-go/slack for the Block Kit and payload types and for
// request verification. The rules (who may answer, what an answer is
// bound to) are the service's (service.Slack); docs/approvals.md,
// "Slack", says how it is set up and what each message looks like.
package slackapp

import (
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/visible"
)

// The action ids of a question's buttons.
const (
	ActionApprove = "dont_approve"
	ActionRefuse  = "dont_refuse"
	ActionOpen    = "dont_open"
)

// ButtonValue is what an Approve or Refuse button carries: the question
// and the digest of what the message showed (approvals.ShownDigest), so
// that the answer is bound to it.
func ButtonValue(a approvals.Approval) string {
	return a.ID + " " + approvals.ShownDigest(a.Shown())
}

// ParseButtonValue reads a ButtonValue.
func ParseButtonValue(v string) (id, digest string, ok bool) {
	id, digest, ok = strings.Cut(v, " ")
	return id, digest, ok && id != "" && digest != ""
}

func plain(s string, limit int) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, hooks.Clip(s, limit), false, false)
}

// whole is label and text when they fit in limit bytes, else label and
// hooks.TooLongForSlack: a long command never shows its harmless start
// and hides the rest.
func whole(label, text string, limit int) string {
	if len(label)+len(text) <= limit {
		return label + text
	}
	return label + hooks.TooLongForSlack
}

// Question is the message of an open question: who asks, for what, the
// whole command and reason, the deadline, and the buttons. Approve (with
// a confirmation dialog) is there only when the message shows the whole
// question; Refuse always; "Open in dont" when the approvals page has a
// public URL.
func Question(a approvals.Approval, publicURL string) (string, []slack.Block) {
	to := visible.Line(string(a.To))
	text := "dont: " + visible.Line(a.Requester) + " asks for " + to + " (" + a.ID + ")"
	blocks := details(a, "Escalation asked: "+to)
	var buttons []slack.BlockElement
	if hooks.SlackShowsWhole(a.Shown()) {
		approve := slack.NewButtonBlockElement(ActionApprove, ButtonValue(a), plain("Approve", 75)).WithStyle(slack.StylePrimary)
		approve.WithConfirm(slack.NewConfirmationBlockObject(plain("Approve "+to+"?", 100),
			plain(hooks.Clip("Run the command above at "+to+" for "+visible.Line(a.Requester)+" (call "+visible.Line(a.CallID)+"). You answer as the approver this Slack user is linked to.", 300), 300),
			plain("Approve", 30), plain("Cancel", 30)))
		buttons = append(buttons, approve)
	}
	buttons = append(buttons, slack.NewButtonBlockElement(ActionRefuse, ButtonValue(a), plain("Refuse", 75)).WithStyle(slack.StyleDanger))
	if link := hooks.ApprovalsLink(publicURL, a.SessionID, a.ID); link != "" {
		open := slack.NewButtonBlockElement(ActionOpen, a.ID, plain("Open in dont", 75))
		open.URL = link
		buttons = append(buttons, open)
	}
	blocks = append(blocks, slack.NewActionBlock("dont_answer", buttons...))
	return text, blocks
}

// Ending is the message of a question that ended, which replaces the
// question's in place: the verdict, by whom and why, and no buttons.
func Ending(a approvals.Approval, publicURL string) (string, []slack.Block) {
	to := visible.Line(string(a.To))
	line := EndingLine(a)
	blocks := details(a, hooks.Clip("Escalation "+visible.Line(string(a.Verdict))+": "+to, 150))
	blocks = append(blocks, slack.NewSectionBlock(plain(whole("", line, hooks.SlackSectionLimit), hooks.SlackSectionLimit), nil, nil))
	if link := hooks.ApprovalsLink(publicURL, a.SessionID, a.ID); link != "" {
		open := slack.NewButtonBlockElement(ActionOpen, a.ID, plain("Open in dont", 75))
		open.URL = link
		blocks = append(blocks, slack.NewActionBlock("dont_open", open))
	}
	return "dont: " + hooks.Clip(line, 300), blocks
}

// EndingLine says how a question ended: approved by whom, refused (and
// why), timed out, cancelled, refused before it was asked.
func EndingLine(a approvals.Approval) string {
	by := ""
	if a.AnsweredBy != "" {
		by = " by " + visible.Line(a.AnsweredBy)
	}
	why := ""
	if a.Detail != "" {
		why = ": " + visible.Line(a.Detail)
	}
	switch {
	case a.State != approvals.Resolved:
		return "Still open."
	case !a.Asked:
		return "Refused before it was asked (" + visible.Line(string(a.Cause)) + ")" + why
	case a.Verdict == approvals.Approved:
		return "Approved" + by + "."
	case a.Cause == approvals.CauseDeadline:
		return "Timed out: nobody answered before " + a.Deadline.UTC().Format(time.RFC3339) + "."
	case a.Verdict == approvals.Cancelled:
		return "Cancelled" + by + why
	}
	return "Refused" + by + why
}

func details(a approvals.Approval, head string) []slack.Block {
	to := visible.Line(string(a.To))
	return []slack.Block{
		slack.NewHeaderBlock(plain(head, 150)),
		slack.NewSectionBlock(nil, []*slack.TextBlockObject{
			plain(whole("Asked by: ", visible.Line(a.Requester), hooks.SlackFieldLimit), hooks.SlackFieldLimit),
			plain("Deadline: "+a.Deadline.UTC().Format(time.RFC3339), hooks.SlackFieldLimit),
			plain("From: "+visible.Line(string(a.From))+" → "+to, hooks.SlackFieldLimit),
			plain(whole("Session: ", visible.Line(a.SessionID), hooks.SlackFieldLimit), hooks.SlackFieldLimit),
		}, nil),
		// Agent-written text is plain_text (Slack reads no mrkdwn, mention
		// or link in it), escaped by internal/visible, whole or not at all.
		slack.NewSectionBlock(plain(whole("Command: ", visible.Line(a.Preview), hooks.SlackSectionLimit), hooks.SlackSectionLimit), nil, nil),
		slack.NewSectionBlock(plain(whole("Reason: ", visible.Line(a.Reason), hooks.SlackSectionLimit), hooks.SlackSectionLimit), nil, nil),
		slack.NewContextBlock("dont_id", plain("Question "+a.ID+" · call "+visible.Line(a.CallID), 2000)),
	}
}
