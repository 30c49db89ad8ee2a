//go:build !linux

package runner

// adopt does nothing: only Linux has a child subreaper. Elsewhere a
// process the agent detached from its process group (setsid, a double
// fork) is reparented to init and is not found by the runner
// (docs/harnesses.md, "Containment").
func adopt() error { return nil }

// sweep does nothing beyond the process group the agent's end already
// killed (see adopt).
func sweep(map[int]bool) {}
