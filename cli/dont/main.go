// Command dont is the CLI: ledger verbs, the spawn protocol,
// serve, mcp and sweep. It only wires flags to the tool surface and
// encodes the envelope; rules live in internal/.
//
// # Fault hooks
//
// The tests of this package drive the real binary and need some of its
// commands to hold a write transaction open (a signal mid-command, a
// server shut down with a request in flight, racing defines). They build
// it with -tags faulthooks, which compiles faulthooks.go: there
// DONT_FAULT_COMMIT_DELAY (a Go duration) sets the embedded store's
// sqlite.Hooks to wait that long before each commit. The binary built
// without the tag (go build ./cli/dont, cli/demo.sh, .ci/run) compiles
// nofaulthooks.go instead, reads no such variable and sets no hook;
// TestTheShippedBinaryReadsNoFaultVariable checks both builds.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/dont-cli/dont/internal/mainstack" // first: see its comment
	_ "github.com/dont-cli/dont/internal/oneproc"   // one P until a command serves
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// A reader that goes away (`dont list | head -c1`) is not an error:
	// writes fail with EPIPE instead of killing the process, and we exit 0.
	signal.Ignore(syscall.SIGPIPE)
	stdout, stderr := &pipeGuard{f: os.Stdout}, &pipeGuard{f: os.Stderr}
	var caught os.Signal
	go func() {
		caught = <-sigs
		cancel()
	}()
	code := newApp(os.Stdin, stdout, stderr, os.Getenv).run(ctx, os.Args[1:])
	if stdout.broken.Load() {
		code = 0
	}
	if ctx.Err() != nil && code != 0 {
		code = 130
		if caught == syscall.SIGTERM {
			code = 143
		}
	}
	os.Exit(code)
}
