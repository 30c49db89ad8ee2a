package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Blocking tools wait on a person (escalate, approvals_wait) or on new
// frames (approvals_frames with wait). Many hosts give up on a request
// after a fixed time (the TypeScript SDK: 60 s) unless progress arrives,
// while a question's deadline is longer (120 s). So while a blocking call
// waits, and the request carries a progressToken, the server sends
// notifications/progress at once and every progressEvery after, each
// saying what is awaited and the time left; a host that resets its
// timeout on progress keeps waiting. A host that does not is served by
// escalate with no_wait and approvals_wait with max_wait in bounded calls
// (docs/harnesses.md, "MCP hosts").

// progressEvery is how often a waiting call reports progress: well inside
// the shortest request timeout hosts are known to use (60 s).
var progressEvery = 10 * time.Second

// awaited is what a blocking call waits for, learned as it goes: the
// question once it exists, or the end of a long poll.
type awaited struct {
	mu       sync.Mutex
	what     string    // "a person's answer to apr:…"
	deadline time.Time // zero while unknown
	changed  chan struct{}
}

func (w *awaited) set(what string, deadline time.Time) {
	w.mu.Lock()
	w.what, w.deadline = what, deadline
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *awaited) message(now time.Time) (string, float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline.IsZero() {
		return "waiting for " + w.what, 0
	}
	left := w.deadline.Sub(now).Round(time.Second)
	if left < 0 {
		left = 0
	}
	return fmt.Sprintf("waiting for %s; %s left (until %s)", w.what, left, w.deadline.UTC().Format(time.RFC3339)), w.deadline.Sub(now).Seconds()
}

// blocking is what t, called with args, will wait for, or nil when it
// does not wait.
func blocking(t *tools.Tool, args map[string]any) *awaited {
	w := &awaited{changed: make(chan struct{}, 1)}
	switch t.Name {
	case "escalate":
		if b, _ := args["no_wait"].(bool); b {
			return nil
		}
		to, _ := args["to"].(string)
		call, _ := args["call"].(string)
		w.what = fmt.Sprintf("the question for call %q (%s) to be asked", call, to)
	case "approvals.wait":
		id, _ := args["id"].(string)
		w.what = "a person's answer to " + id
	case "approvals.frames":
		wait, _ := args["wait"].(string)
		d, err := time.ParseDuration(wait)
		if wait == "" || err != nil || d <= 0 {
			return nil
		}
		ses, _ := args["session"].(string)
		w.what = "a new frame on session " + ses
		w.deadline = time.Now().Add(d)
	default:
		return nil
	}
	return w
}

// withProgress starts reporting progress for a blocking call whose
// request carries a progress token, and returns what the call is to tell
// once escalate's question exists (tools.CallOptions.Asked: it learns the
// question and its deadline as soon as it is asked) and the function that
// stops the reports. For approvals_wait, look fills it in from the store.
func withProgress(ctx context.Context, req *sdk.CallToolRequest, w *awaited, look func() (approvals.Approval, bool)) (asked func(approvals.Approval), stop func()) {
	token := req.Params.GetProgressToken()
	if w == nil || token == nil || req.Session == nil {
		return nil, func() {}
	}
	asked = func(a approvals.Approval) {
		w.set(questionWhat(a), a.Deadline)
	}
	start := time.Now()
	// The reports' own context: stopping ends a report blocked on a slow
	// client too.
	rctx, rcancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	// Read before the call starts, not beside it: the call's service is
	// not shared across goroutines.
	if look != nil {
		if a, ok := look(); ok && a.State == approvals.Pending {
			w.set(questionWhat(a), a.Deadline)
		}
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		var last float64
		for {
			msg, total := w.message(time.Now())
			// Progress must grow with every notification: the seconds
			// waited so far, strictly increasing.
			p := time.Since(start).Seconds()
			if p <= last {
				p = last + 0.001
			}
			last = p
			params := &sdk.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: p}
			if total > 0 {
				params.Total = p + total
			}
			// Best effort: a report that cannot be sent changes nothing.
			_ = req.Session.NotifyProgress(rctx, params)
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			case <-w.changed:
			}
		}
	}()
	return asked, func() { rcancel(); <-stopped }
}

// questionWhat names an asked question for a progress message.
func questionWhat(a approvals.Approval) string {
	return fmt.Sprintf("a person to answer %s (call %q: %s → %s)", a.ID, a.CallID, a.From, a.To)
}
