// Package oneproc runs the CLI on one P (GOMAXPROCS=1) from the first
// package initialisers on, and gives the runtime's default back to the
// commands that serve many callers at once.
//
// A one-shot command (`dont show`, `dont assume`) does one thing at a
// time, but with two or more Ps the runtime starts a thread to spin for a
// second P whenever a goroutine starts (its own at start-up, database/sql's
// connection opener, signal handling), and each P that allocates takes
// its own span of every size class from fresh pages. On the 2-core
// reference machine one P saves a cold `dont show` 20–50 of its ~690
// page faults and 0.2–0.5 ms of its CPU (bench/results/report.md, "CLI
// cold start: one P"). Set after the packages have initialised, in main,
// it saved nothing: the second P had already allocated.
//
// It imports only runtime and syscall (for the environment, as os does),
// so Go initialises it among the first packages; a blank import from the
// main package is all it takes. A GOMAXPROCS the user set is kept.
package oneproc

import (
	"runtime"
	"syscall"
)

// limited says init set GOMAXPROCS to 1 and nothing has restored it.
var limited bool

func init() {
	if _, set := syscall.Getenv("GOMAXPROCS"); set {
		return // the user's setting wins, here and in Restore
	}
	runtime.GOMAXPROCS(1)
	limited = true
}

// Restore gives the process the runtime's default GOMAXPROCS (the CPUs
// its cgroup allows, kept up to date as they change), for `dont serve`,
// `dont mcp` and `dont spawns run`. It does nothing when the user set
// GOMAXPROCS or it already ran. Call it from the main goroutine.
func Restore() {
	if limited {
		runtime.SetDefaultGOMAXPROCS()
		limited = false
	}
}
