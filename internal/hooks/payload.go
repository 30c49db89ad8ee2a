package hooks

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/visible"
)

// Body is the request body a hook of format f receives for m. publicURL
// is where the approvals page is served (config `[hooks] public_url`);
// empty, a Slack message carries no link.
func Body(f Format, m Message, publicURL string) ([]byte, error) {
	if f == FormatSlack {
		return json.Marshal(Slack(m, publicURL))
	}
	return json.Marshal(JSONPayload{Type: m.Type, Timestamp: m.At, Data: m.Data})
}

// SlackMessage is a Slack incoming-webhook payload (Block Kit).
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is one Block Kit block.
type SlackBlock struct {
	Type     string        `json:"type"`
	Text     *SlackText    `json:"text,omitempty"`
	Fields   []SlackText   `json:"fields,omitempty"`
	Elements []SlackButton `json:"elements,omitempty"`
}

// SlackText is a text object. Agent-written text is always plain_text
// (Slack does not read mrkdwn, mentions or links in it) and escaped with
// internal/visible.
type SlackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

// SlackButton is a link button.
type SlackButton struct {
	Type string    `json:"type"`
	Text SlackText `json:"text"`
	URL  string    `json:"url"`
}

func plain(s string, limit int) SlackText { return SlackText{Type: "plain_text", Text: Clip(s, limit)} }

// Clip keeps s within limit bytes (Slack's per-field limits), on a rune
// boundary; empty text is a dash.
func Clip(s string, limit int) string {
	if s == "" {
		return "—"
	}
	if len(s) <= limit {
		return s
	}
	s = s[:limit-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// ApprovalsLink is the approvals page for one question.
func ApprovalsLink(publicURL, sessionID, approvalID string) string {
	if publicURL == "" {
		return ""
	}
	v := url.Values{"session": {sessionID}, "approval": {approvalID}}
	return strings.TrimRight(publicURL, "/") + "/approvals#" + v.Encode()
}

// Slack renders m for a Slack channel: for a question, who asks, the
// command preview, the reason, the deadline and a link to the approvals
// page; for the other events one line of what happened.
func Slack(m Message, publicURL string) SlackMessage {
	switch m.Type {
	case ApprovalAsked, ApprovalEnded, ApprovalReminder:
		var d ApprovalData
		_ = json.Unmarshal(m.Data, &d)
		return slackApproval(m.Type, d, publicURL)
	case ConfirmationHeld:
		var d ConfirmationData
		_ = json.Unmarshal(m.Data, &d)
		line := "A call of " + visible.Line(d.Tool) + " by " + visible.Line(d.RequestedBy) + " is held for confirmation (" + d.ConfirmationID + ", expires " + d.ExpiresAt.UTC().Format(time.RFC3339) + ")."
		return SlackMessage{Text: Clip(line, 3000), Blocks: []SlackBlock{{Type: "section", Text: ptext(plain(line, 3000))}}}
	case SpawnRequested, SpawnResolved, SpawnTimeout:
		var d SpawnData
		_ = json.Unmarshal(m.Data, &d)
		line := string(m.Type) + ": " + d.RequestID
		if d.EntityID != "" {
			line += " on " + d.EntityID
		}
		if d.Outcome != "" {
			line += " (" + visible.Line(d.Outcome) + ")"
		}
		return SlackMessage{Text: Clip(line, 3000), Blocks: []SlackBlock{{Type: "section", Text: ptext(plain(line, 3000))}}}
	}
	line := "dont: " + visible.Line(string(m.Type)) + " " + m.ID
	return SlackMessage{Text: line, Blocks: []SlackBlock{{Type: "section", Text: ptext(plain(line, 3000))}}}
}

func ptext(t SlackText) *SlackText { return &t }

// TooLongForSlack is what a Slack message says in place of agent-written
// text that Slack cannot carry whole: it never shows a clipped command as
// if it were the whole one.
const TooLongForSlack = "too long to show here: open it on the approvals page"

// whole is label and text when they fit in limit bytes, else label and
// TooLongForSlack (with the text's size): a padded command must not show
// its harmless start and hide the rest.
func whole(label, text string, limit int) string {
	if len(label)+len(text) <= limit {
		return label + text
	}
	return label + "(" + strconv.Itoa(len(text)) + " bytes) " + TooLongForSlack
}

func slackApproval(t EventType, d ApprovalData, publicURL string) SlackMessage {
	who := visible.Line(d.Requester)
	to := visible.Line(string(d.ToTier))
	head := "Escalation asked: " + to
	text := whole("", who+" asks for "+to+" for call "+visible.Line(d.CallID), 3000)
	if t == ApprovalReminder {
		head = "Still unanswered: " + to
		text = whole("", "Nobody has answered yet: "+who+" asks for "+to+" for call "+visible.Line(d.CallID)+"; it times out at "+d.Deadline.UTC().Format(time.RFC3339), 3000)
	}
	if t == ApprovalEnded {
		head = "Escalation " + visible.Line(string(d.Verdict)) + ": " + to
		ended := "The escalation of call " + visible.Line(d.CallID) + " to " + to + " ended: " + visible.Line(string(d.Verdict))
		if d.AnsweredBy != "" {
			ended += " by " + visible.Line(d.AnsweredBy)
		}
		text = whole("", ended, 3000)
	}
	blocks := []SlackBlock{
		{Type: "header", Text: ptext(plain(head, 150))},
		{Type: "section", Fields: []SlackText{
			plain(whole("Asked by: ", who, 2000), 2000),
			plain("Deadline: "+d.Deadline.UTC().Format(time.RFC3339), 2000),
			plain("From: "+visible.Line(string(d.FromTier))+" → "+to, 2000),
			plain(whole("Session: ", visible.Line(d.SessionID), 2000), 2000),
		}},
		// Whole or not at all (Slack cuts a text object at 3,000 bytes). No
		// block answers: a person answers where the question is shown
		// whole, at a terminal or on the approvals page.
		{Type: "section", Text: ptext(plain(whole("Command: ", visible.Line(d.Preview), 3000), 3000))},
		{Type: "section", Text: ptext(plain(whole("Reason: ", visible.Line(d.Reason), 3000), 3000))},
	}
	if link := ApprovalsLink(publicURL, d.SessionID, d.ApprovalID); link != "" && t != ApprovalEnded {
		blocks = append(blocks, SlackBlock{Type: "actions", Elements: []SlackButton{{Type: "button", Text: plain("Open in dont", 75), URL: link}}})
	}
	return SlackMessage{Text: text, Blocks: blocks}
}

// Slack's limits on the text objects a question's message shows whole.
const (
	SlackSectionLimit = 3000 // a section's text
	SlackFieldLimit   = 2000 // a section field
)

// SlackShowsWhole reports whether a Slack message shows every part of
// the question s whole (who asks, the session, the command and the
// reason as internal/visible prints them): only then may Slack carry an
// approve button (docs/approvals.md, "Slack").
func SlackShowsWhole(s approvals.Shown) bool {
	return len("Command: ")+len(visible.Line(s.Preview)) <= SlackSectionLimit &&
		len("Reason: ")+len(visible.Line(s.Reason)) <= SlackSectionLimit &&
		len("Asked by: ")+len(visible.Line(s.Requester)) <= SlackFieldLimit &&
		len("Session: ")+len(visible.Line(s.SessionID)) <= SlackFieldLimit
}
