package watchscreen

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/visible"
)

// Model is the watch client's state, kept apart from I/O so that its
// rules are tested directly. A request is pending from its question frame
// until its ending frame arrives or its deadline passes on this client's
// own clock, whichever is first: a keystroke is never sent as an answer
// to a request that has ended.
//
// A keystroke answers the question that was on the screen: the one the
// prompt last showed (Prompt). If that question ends other than by this
// client's answer (the agent cancels it, another client answers it, its
// deadline passes), the next line answers nothing and says so, even when
// another question is on the screen by then: a y typed for A never
// answers B. And the answer names the digest of what was shown, so the
// server answers nothing if the question is another one.
type Model struct {
	pending map[string]*Item
	// shown is the request the prompt last showed; lost, one that ended
	// while it was the one a keystroke would answer.
	shown, lost string
	// width is the terminal's width, for wrapping questions.
	width int
}

type Item struct {
	frame    approvals.Frame
	deadline time.Time // on this client's clock
	seen     time.Time
	answered bool
}

// Answer is what a keystroke sends.
type Answer struct {
	RequestID   string
	ShownDigest string
	Approve     bool
}

func NewModel() *Model { return &Model{pending: map[string]*Item{}} }

// Frame applies a frame received at now. A question's deadline is bounded
// on the client's clock too: never later than now plus the time the
// server gave it, so a skewed or late-delivered frame cannot extend it.
func (m *Model) Frame(f approvals.Frame, now time.Time) []string {
	switch f.Kind {
	case approvals.FrameRequested:
		if f.Deadline == nil {
			return nil
		}
		deadline := *f.Deadline
		if own := now.Add(f.Deadline.Sub(f.At)); own.Before(deadline) {
			deadline = own
		}
		if !now.Before(deadline) {
			return nil // already dead: nothing to ask
		}
		m.pending[f.RequestID] = &Item{frame: f, deadline: deadline, seen: now}
		return []string{m.describe(f)}
	case approvals.FrameResolved:
		it, ok := m.pending[f.RequestID]
		if !ok {
			return nil
		}
		m.losing(it, now)
		delete(m.pending, f.RequestID)
		if f.Cause == approvals.CauseClientGone {
			return []string{fmt.Sprintf("%s: %s: the asking client went away (cleared)", visible.Line(f.RequestID), visible.Line(string(f.Verdict)))}
		}
		return []string{fmt.Sprintf("%s: %s%s (cleared)", visible.Line(f.RequestID), visible.Line(string(f.Verdict)), byLine(f.By))}
	}
	return nil
}

// describe shows a question whole, as every answering medium does
// (render.QuestionLines): session, requester, both tiers, the reason and
// the command wrapped to the terminal's width, never cut, control
// characters made visible, so that nothing can fake a line of its own,
// return the cursor or erase what the person is about to approve.
func (m *Model) describe(f approvals.Frame) string {
	q := render.Question{ID: f.RequestID, Session: f.SessionID, Requester: f.Requester, CallID: f.CallID,
		From: string(f.From), To: string(f.To), Reason: f.Reason, Preview: f.Preview}
	return strings.Join(render.QuestionLines(q, m.width), "\n")
}

// losing notes that it is ending: if it is the question a keystroke
// would answer and this client has not answered it, the next line
// answers nothing.
func (m *Model) losing(it *Item, now time.Time) {
	if it.answered {
		return
	}
	if t := m.target(now); t != nil && t.frame.RequestID == it.frame.RequestID {
		m.lost = it.frame.RequestID
	}
}

// target is the question the next keystroke answers: the one the prompt
// shows, else (no prompt yet) the oldest open one.
func (m *Model) target(now time.Time) *Item {
	if it, ok := m.pending[m.shown]; ok && !it.answered && now.Before(it.deadline) {
		return it
	}
	return m.Current(now)
}

// Tick clears every request whose deadline has passed on the client's clock.
func (m *Model) Tick(now time.Time) []string {
	var out []string
	for _, it := range m.items() {
		if !now.Before(it.deadline) {
			m.losing(it, it.deadline.Add(-time.Nanosecond))
			delete(m.pending, it.frame.RequestID)
			out = append(out, fmt.Sprintf("%s: deadline passed; cleared (nothing was sent)", visible.Line(it.frame.RequestID)))
		}
	}
	return out
}

// Current is the request the next keystroke answers: the oldest open one
// not yet answered from here.
func (m *Model) Current(now time.Time) *Item {
	for _, it := range m.items() {
		if !it.answered && now.Before(it.deadline) {
			return it
		}
	}
	return nil
}

func (m *Model) items() []*Item {
	out := make([]*Item, 0, len(m.pending))
	for _, it := range m.pending {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].seen.Equal(out[j].seen) {
			return out[i].seen.Before(out[j].seen)
		}
		return out[i].frame.Cursor < out[j].frame.Cursor
	})
	return out
}

// Key maps one line of input to an answer. Dead requests are cleared
// first, on the client's own clock: a line typed after the deadline is
// never sent. Only y/yes and n/no answer; anything else sends nothing.
func (m *Model) Key(line string, now time.Time) (*Answer, []string) {
	said := m.Tick(now)
	if lost := m.lost; lost != "" {
		m.lost = ""
		if m.target(now) == nil {
			return nil, append(said, "no open request; the input was not sent")
		}
		return nil, append(said, visible.Line(lost)+" ended before your answer: the question you answered is no longer the one open; nothing was answered (the input was not sent). Read what is shown now and answer again")
	}
	it := m.target(now)
	if it == nil {
		return nil, append(said, "no open request; the input was not sent")
	}
	var approve bool
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		approve = true
	case "n", "no":
	default:
		return nil, append(said, "type y to approve or n to refuse "+visible.Line(it.frame.RequestID))
	}
	it.answered = true
	return &Answer{RequestID: it.frame.RequestID, ShownDigest: it.frame.ShownDigest, Approve: approve}, said
}

// Unsent reopens a request whose answer was not sent (its passphrase
// was not proven), so the next keystroke may answer it.
func (m *Model) Unsent(id string) {
	if it, ok := m.pending[id]; ok {
		it.answered = false
	}
}

// Prompt is the status line: the current request and its countdown.
func (m *Model) Prompt(now time.Time) string {
	it := m.target(now)
	if it == nil {
		return ""
	}
	m.shown = it.frame.RequestID
	left := render.Countdown(it.deadline.Sub(now))
	more := ""
	if n := len(m.pending) - 1; n > 0 {
		more = fmt.Sprintf(" (+%d waiting)", n)
	}
	return fmt.Sprintf("%s [%s left] approve %s for call %s? [y/n]%s ", visible.Line(it.frame.RequestID), left, visible.Line(string(it.frame.To)), visible.Line(it.frame.CallID), more)
}

// promptKey identifies what the prompt is about, so that a terminal that
// cannot redraw gets a new prompt line only when the request changes.
func (m *Model) promptKey() string {
	for _, it := range m.items() {
		if !it.answered {
			return it.frame.RequestID
		}
	}
	return ""
}
