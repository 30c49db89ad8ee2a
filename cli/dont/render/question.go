package render

import (
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/visible"
)

// Question is what every answering medium shows of an escalation before
// a person answers it: who asks, for which call of which session, from
// which tier to which, why, and the whole command. Its digest
// (approvals.ShownDigest) is what the answer sends back.
type Question struct {
	ID, Session, SessionName, Requester, CallID string
	From, To, Reason, Preview                   string
}

// QuestionLines shows q for a person, every agent-written field made
// visible, the reason and the command wrapped to width columns and never
// cut: a command padded with spaces shows its end too.
func QuestionLines(q Question, width int) []string {
	session := visible.Line(q.Session)
	if q.SessionName != "" && q.SessionName != q.Session {
		session = visible.Line(q.SessionName) + " (" + session + ")"
	}
	from := q.From
	if from == "" {
		from = "-"
	}
	out := Wrap("", "    ", visible.Line(q.ID)+": call "+visible.Line(q.CallID)+" asks "+visible.Line(from)+" → "+visible.Line(q.To), width)
	out = append(out, Wrap("  session ", "    ", session, width)...)
	if q.Requester != "" {
		out = append(out, Wrap("  asked by ", "    ", visible.Line(q.Requester), width)...)
	}
	if q.Reason != "" {
		out = append(out, Wrap("  reason: ", "          ", visible.Line(q.Reason), width)...)
	}
	if q.Preview != "" {
		out = append(out, Wrap("  $ ", "    ", visible.Line(q.Preview), width)...)
		if line := visible.Line(q.Preview); Width(line) > width {
			n := utf8.RuneCountInString(line)
			out = append(out, "  (the whole command, "+Plural(n, "character", "characters")+" wrapped; nothing is cut)")
		}
	} else {
		out = append(out, "  (no command given)")
	}
	return out
}

// Wrap breaks text (one line, already visible) into lines of at most
// width terminal columns (Width: a CJK character takes two), the first
// starting with first and the rest with rest. Every character is kept,
// spaces included: a wrapped line ends where the width does, not at a
// word, so nothing can hide past the edge.
func Wrap(first, rest, text string, width int) []string {
	if width <= 0 {
		width = 100
	}
	width = max(width, 40)
	var out []string
	prefix := first
	remaining := text
	for {
		room := max(width-Width(prefix), 10)
		if Width(remaining) <= room {
			return append(out, prefix+remaining)
		}
		// The longest start of the text that fits: at least one
		// character, so that the loop always moves on.
		end, used := 0, 0
		for i, r := range remaining {
			w := columns.RuneWidth(r)
			if used+w > room && end > 0 {
				break
			}
			used += w
			end = i + utf8.RuneLen(r)
		}
		out = append(out, prefix+remaining[:end])
		remaining = remaining[end:]
		prefix = rest
	}
}

// QuestionOf is the question of an approval or a question frame as
// decoded JSON (approvals show, list, inbox, frames).
func QuestionOf(d map[string]any, names map[string]any) Question {
	s := func(k string) string { v, _ := d[k].(string); return v }
	q := Question{ID: s("approval_id"), Session: s("session_id"), Requester: s("requester"), CallID: s("call_id"),
		From: s("from_tier"), To: s("to_tier"), Reason: s("reason"), Preview: s("preview")}
	if q.ID == "" {
		q.ID = s("request_id")
	}
	if n, ok := names[q.Session].(string); ok {
		q.SessionName = n
	}
	if n, ok := names[q.Requester].(string); ok && n != "" {
		q.Requester = n + " (" + q.Requester + ")"
	}
	return q
}
