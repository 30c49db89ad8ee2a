package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/scheduler"
	"github.com/dont-cli/dont/internal/service"
)

// fakeSweeper fails its second sweep and times out one spawn in every
// other; it records the limits it was given.
type fakeSweeper struct {
	mu     sync.Mutex
	limits []int
	swept  chan struct{}
}

func (f *fakeSweeper) Sweep(_ context.Context, limit int) (service.SweepReport, error) {
	f.mu.Lock()
	f.limits = append(f.limits, limit)
	n := len(f.limits)
	f.mu.Unlock()
	defer func() { f.swept <- struct{}{} }()
	if n == 2 {
		return service.SweepReport{}, errors.New("store busy")
	}
	return service.SweepReport{TimedOut: []service.TimeoutResult{{RequestID: "spawn:1"}}}, nil
}

// The backstop sweeps on its ticker until it is stopped; a failed sweep
// is logged and the next tick sweeps again.
func TestTheBackstopSweepsOnItsTickerAndOutlivesAFailedSweep(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	f := &fakeSweeper{swept: make(chan struct{}, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		scheduler.Backstop{Every: 10 * time.Millisecond, Log: log}.Run(ctx, f)
		close(stopped)
	}()
	for i := range 4 {
		select {
		case <-f.swept:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d sweeps in 5s, want 4", i)
		}
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the backstop did not stop with its context")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.limits {
		if l != scheduler.DefaultBackstopLimit {
			t.Fatalf("limits %v, want the default %d", f.limits, scheduler.DefaultBackstopLimit)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if out := logs.String(); !strings.Contains(out, `"err":"store busy"`) || !strings.Contains(out, `"timed_out":1`) {
		t.Fatalf("logs %s: want the failed sweep and what the others timed out", out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
