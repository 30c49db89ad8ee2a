// Package mainstack grows the main goroutine's stack once, before the
// other packages' initialisation, to the size a CLI command reaches.
//
// A goroutine starts on a small stack that the runtime doubles each time
// a call runs out of it, copying the stack and reading the stack maps of
// every frame on it. A `dont show` grows the main goroutine's stack
// several times, the last ones under SQLite's deep frames, and those
// reads touch pages of the binary's function tables that nothing else
// needs: about 40 page faults and 1.8 MB of RSS of a cold start
// (bench/results/report.md, "CLI cold start"). Growing it here, where the
// only frames are the runtime's, costs one copy of two frames.
//
// It imports nothing, so Go initialises it among the first packages
// (the spec's order: a package is initialised once its imports are, the
// lexically first such package first); a blank import from the main
// package is all it takes.
package mainstack

// Size is the stack a command's deepest call needs, measured on `dont
// show` and `dont assume`; a deeper one grows it again, as any goroutine.
const Size = 16 << 10

func init() { grow(0) }

// grow has a frame of Size bytes, so its call makes the runtime give the
// goroutine a stack of the next power of two above it in one copy.
//
//go:noinline
func grow(i int) byte {
	var frame [Size]byte
	frame[i] = 1
	return frame[Size-1-i]
}
