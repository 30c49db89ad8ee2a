// Package watchscreen is the terminal screen of `dont approvals watch`:
// the open questions of a session shown whole, each with a countdown on
// the client's own clock, y approving and n refusing the one on the
// screen (docs/approvals.md, "The watch client"); and the countdown line
// a long wait (escalate, approvals wait) redraws on stderr. cli/dont
// wires it to the terminal, the passphrase and the tool calls.
package watchscreen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/visible"
)

// Caller runs one tool and returns its envelope: in-process on the
// embedded store, or over the API.
type Caller func(ctx context.Context, tool string, args map[string]any) envelope.Envelope

// Screen is what Run reads and writes.
type Screen struct {
	// Call reads frames and sends answers (approvals.frames, .approve, .refuse).
	Call                Caller
	Session, Subscriber string
	// In gives one line per answer.
	In io.Reader
	// Prove, when set, proves each answer before it is sent (embedded: the
	// approver passphrase, read from the same terminal as In).
	Prove func(context.Context) error
	// Out gets what happens; Status, the prompt with its countdown.
	Out, Status io.Writer
	// Redraw: Status is a terminal, where the prompt is redrawn in place.
	Redraw bool
	// Width is the terminal's width, for wrapping questions.
	Width int
}

// Run runs the terminal client: it long-polls the session's frames,
// reads one line per answer from In, and keeps its pending state bounded
// by the ending frames and by its own clock. With Prove set (embedded),
// every answer is sent only after Prove succeeds; In is not read
// meanwhile, so that Prove reads the passphrase from the same terminal.
// It ends when ctx ends or In does (nil), or with the failed envelope of
// a frames read.
func Run(ctx context.Context, s Screen) *envelope.Envelope {
	call, session, subscriber, in, prove := s.Call, s.Session, s.Subscriber, s.In, s.Prove
	// On a terminal the prompt, with its countdown, is redrawn in place on
	// Status (where long waits count down); what happens goes to Out.
	tty := s.Redraw
	m := NewModel()
	m.width = s.Width
	drawn := "" // the prompt on screen (terminals only)
	out := func(lines []string) {
		if len(lines) == 0 {
			return
		}
		if tty && drawn != "" {
			fmt.Fprint(s.Status, "\r\033[K")
			drawn = ""
		}
		for _, l := range lines {
			fmt.Fprintln(s.Out, l)
		}
	}
	// The first read makes this client a live subscriber; say so only then.
	env := call(ctx, "approvals.frames", map[string]any{"session": session, "subscriber": subscriber})
	if !env.OK {
		return &env
	}
	// Catch up silently with the session's history; then show what is open.
	var cursor int64
	for {
		var page service.FramesPage
		json.Unmarshal(env.Data, &page)
		for _, f := range page.Frames {
			m.Frame(f, time.Now())
		}
		cursor = page.Cursor
		if page.Count == 0 {
			break
		}
		if env = call(ctx, "approvals.frames", map[string]any{"session": session, "after": float64(cursor), "subscriber": subscriber}); !env.OK {
			return &env
		}
	}
	out([]string{fmt.Sprintf("watching %s as %s: y approves, n refuses the oldest open request; Ctrl-D or Ctrl-C quits", visible.Line(session), visible.Line(subscriber))})
	for _, it := range m.items() {
		out([]string{m.describe(it.frame)})
	}
	frames := make(chan approvals.Frame, 64)
	failures := make(chan envelope.Envelope, 1)
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	deliver := func(env envelope.Envelope) int64 {
		var page service.FramesPage
		json.Unmarshal(env.Data, &page)
		for _, f := range page.Frames {
			select {
			case frames <- f:
			case <-pollCtx.Done():
			}
		}
		return page.Cursor
	}
	go func() {
		for pollCtx.Err() == nil {
			env := call(pollCtx, "approvals.frames", map[string]any{"session": session, "after": float64(cursor), "wait": "2s", "subscriber": subscriber})
			if pollCtx.Err() != nil {
				return
			}
			if !env.OK {
				failures <- env
				return
			}
			cursor = deliver(env)
		}
	}()
	lines := make(chan string)
	next := make(chan struct{}) // the loop is done with a line: read the next
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	prompt := ""
	show := func(now time.Time) {
		p := m.Prompt(now)
		if tty {
			if p != drawn {
				fmt.Fprint(s.Status, "\r\033[K"+p)
				drawn = p
			}
		} else if p != "" && m.promptKey() != prompt {
			fmt.Fprintln(s.Out, p)
		}
		prompt = m.promptKey()
	}
	erase := func() {
		if tty && drawn != "" {
			fmt.Fprint(s.Status, "\r\033[K")
		}
	}
	for {
		select {
		case <-ctx.Done():
			erase()
			return nil
		case env := <-failures:
			erase()
			return &env
		case f := <-frames:
			out(m.Frame(f, time.Now()))
		case <-tick.C:
			out(m.Tick(time.Now()))
		case line, ok := <-lines:
			if !ok {
				erase()
				return nil
			}
			drawn = "" // the terminal echoed the line and moved on
			act, said := m.Key(line, time.Now())
			out(said)
			if act != nil {
				tool := "approvals.refuse"
				if act.Approve {
					tool = "approvals.approve"
				}
				if err := provenAnswer(ctx, prove); err != nil {
					m.Unsent(act.RequestID) // still open: the person may answer it again
					out([]string{notAnswered(act, errs.As(err))})
				} else {
					// Bound to the question shown: if it is another one by now,
					// the server answers nothing (question-changed).
					env := call(ctx, tool, map[string]any{"id": act.RequestID, "shown_digest": act.ShownDigest})
					out([]string{answerLine(env, act)})
				}
			}
			select {
			case next <- struct{}{}:
			case <-ctx.Done():
			}
		}
		show(time.Now())
	}
}

// provenAnswer runs prove, if any (embedded: the passphrase).
func provenAnswer(ctx context.Context, prove func(context.Context) error) error {
	if prove == nil {
		return nil
	}
	return prove(ctx)
}

func notAnswered(act *Answer, e *errs.Error) string {
	return fmt.Sprintf("%s: not answered: %s: %s", act.RequestID, visible.Line(string(e.Code)), visible.Line(e.Message))
}

func answerLine(env envelope.Envelope, act *Answer) string {
	if !env.OK {
		e := envelope.ErrorOf(env)
		return fmt.Sprintf("%s: not answered: %s: %s", act.RequestID, visible.Line(string(e.Code)), visible.Line(e.Message))
	}
	var v service.ApprovalView
	json.Unmarshal(env.Data, &v)
	if v.Applied != nil && *v.Applied {
		return fmt.Sprintf("%s: %s (your answer decided)", visible.Line(v.ID), visible.Line(string(v.Verdict)))
	}
	return fmt.Sprintf("%s: the question you answered had already ended (%s); nothing was answered", visible.Line(v.ID), visible.Line(string(v.Verdict)))
}
