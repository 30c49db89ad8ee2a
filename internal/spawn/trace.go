package spawn

import (
	"runtime"
	"sync/atomic"
)

// tracer, set only by tests through TraceApply, is handed every step
// Apply decides with the calls that reached it.
var tracer atomic.Pointer[func(Step, []uintptr)]

// TraceApply makes Apply hand f each step it decides and the program
// counters of the calls that reached it (runtime.Callers, Apply's own
// first), until stop is called. It is for the tests that prove how far
// each transport is from Apply (spawntest.CheckPath); otherwise Apply
// costs one atomic load more. The last trace set wins.
func TraceApply(f func(step Step, callers []uintptr)) (stop func()) {
	tracer.Store(&f)
	return func() { tracer.CompareAndSwap(&f, nil) }
}

// trace hands step to the tracer, if one is set.
func trace(step Step) {
	f := tracer.Load()
	if f == nil {
		return
	}
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs) // not Callers nor trace: Apply first
	(*f)(step, pcs[:n])
}
