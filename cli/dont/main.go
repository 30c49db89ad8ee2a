// Command dont is the CLI: ledger verbs, the spawn protocol and (later)
// serve, mcp and sweep. It only wires flags to the tool surface and
// encodes the envelope; rules live in internal/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var caught os.Signal
	go func() {
		caught = <-sigs
		cancel()
	}()
	code := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv).run(ctx, os.Args[1:])
	if ctx.Err() != nil && code != 0 {
		code = 130
		if caught == syscall.SIGTERM {
			code = 143
		}
	}
	os.Exit(code)
}
