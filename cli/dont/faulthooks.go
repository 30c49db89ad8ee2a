//go:build faulthooks

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/passphrase"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// storeHooks is the embedded store's fault hooks in a test build (see the
// package comment): with DONT_FAULT_COMMIT_DELAY set to a Go duration,
// every commit holds its write transaction open that long, after a line
// on stderr saying so; a signal ends the wait and the transaction rolls
// back. With DONT_FAULT_REPORT_GOMAXPROCS set, it first says on stderr
// how many Ps the process runs on (internal/oneproc). With
// DONT_FAULT_FREE_BYTES set, the store's disk reports that many bytes
// free (a nearly full disk: internal/store/sqlite/space.go).
func (a *app) storeHooks() sqlite.Hooks {
	if a.getenv("DONT_FAULT_REPORT_GOMAXPROCS") != "" {
		fmt.Fprintf(a.stderr, "fault-injection: GOMAXPROCS=%d\n", runtime.GOMAXPROCS(0))
	}
	var h sqlite.Hooks
	if free, err := strconv.ParseUint(a.getenv("DONT_FAULT_FREE_BYTES"), 10, 64); err == nil {
		// The store's disk reports this much free space (a nearly full disk).
		h.FreeSpace = func() (uint64, error) { return free, nil }
	}
	d, _ := time.ParseDuration(a.getenv("DONT_FAULT_COMMIT_DELAY"))
	if d <= 0 {
		return h
	}
	h.BeforeCommit = func(ctx context.Context) error {
		fmt.Fprintf(a.stderr, "fault-injection: holding the write transaction open for %s\n", d)
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h
}

// storeSynchronous is the embedded store's synchronous setting: FULL
// (sqlite.SynchronousFull), or in a test build what
// DONT_FAULT_SYNCHRONOUS says (NORMAL: the power-loss test shows that
// the setting loses acknowledged writes, cli/dont/powerloss_test.go).
func (a *app) storeSynchronous() sqlite.Synchronous {
	if s := a.getenv("DONT_FAULT_SYNCHRONOUS"); s != "" {
		return sqlite.Synchronous(s)
	}
	return sqlite.SynchronousFull
}

// clock is the service's clock: the wall clock, or in a test build the
// wall clock moved by DONT_FAULT_CLOCK_OFFSET (a Go duration, negative
// for a clock behind): two processes on one project with different
// offsets are two machines whose clocks disagree
// (cli/dont/clockskew_test.go).
func (a *app) clock() func() time.Time {
	offset, err := time.ParseDuration(a.getenv("DONT_FAULT_CLOCK_OFFSET"))
	if err != nil || offset == 0 {
		return nil
	}
	return func() time.Time { return time.Now().Add(offset) }
}

// beforeDelivery is the point between a command's commit and its delivery
// pass: with DONT_FAULT_DELIVERY_DELAY set, a test build says so on stderr
// and waits that long there (a SIGKILL test kills it at that line).
func (a *app) beforeDelivery() {
	d, _ := time.ParseDuration(a.getenv("DONT_FAULT_DELIVERY_DELAY"))
	if d <= 0 {
		return
	}
	fmt.Fprintf(a.stderr, "fault-injection: committed; holding the delivery for %s\n", d)
	time.Sleep(d)
}

// hookFault is a fault point of `dont hook`: with DONT_FAULT_HOOK_PANIC
// set, a test build panics there (the hook must still deny).
func (a *app) hookFault() {
	if a.getenv("DONT_FAULT_HOOK_PANIC") != "" {
		panic("fault-injection: DONT_FAULT_HOOK_PANIC")
	}
}

// traceApply, in a test build with DONT_TEST_TRACE_APPLY naming a file,
// appends to it one line per callback spawn.Apply decides: the functions
// that reached it, Apply first, as a JSON list (cli/dont/path_test.go).
func (a *app) traceApply() (stop func()) {
	file := a.getenv("DONT_TEST_TRACE_APPLY")
	if file == "" {
		return func() {}
	}
	return spawn.TraceApply(func(step spawn.Step, path []string) {
		if step.Kind != spawn.StepCallback {
			return
		}
		line, _ := json.Marshal(path)
		if f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.Write(append(line, '\n'))
			f.Close()
		}
	})
}

// personalDirs are the person's own folders (internal/personal). A test
// build reads DONT_TEST_PERSON_HOME for the home folder, so that tests do
// not write into the real one; the binary as shipped never does
// (nofaulthooks.go): there an agent's environment would choose them.
func (a *app) personalDirs() (personal.Dirs, error) {
	if h := a.getenv("DONT_TEST_PERSON_HOME"); h != "" {
		return personal.Dirs{Home: h}, nil
	}
	return personal.Lookup()
}

// passphraseParams is the cost a new passphrase record is hashed at:
// internal/passphrase's Default, or in a test build with
// DONT_FAULT_PASSPHRASE_COST=least the cheapest a record may carry, so
// that the tests' proofs do not each spend a fifth of a CPU second
// (TestThePassphraseRecordIsASlowHashOutsideTheWorkspace clears it).
func (a *app) passphraseParams() passphrase.Params {
	if a.getenv("DONT_FAULT_PASSPHRASE_COST") == "least" {
		return passphrase.Least
	}
	return passphrase.Default
}
