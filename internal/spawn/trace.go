package spawn

import (
	"runtime"
	"sync/atomic"
)

// tracer, set only by tests through TraceApply, is handed every step
// Apply decides with the calls that reached it.
var tracer atomic.Pointer[func(Step, []string)]

// TraceApply makes Apply hand f each step it decides and the functions
// of the calls that reached it (as runtime.CallersFrames names them,
// inlined calls too, Apply first), until stop is called. It is for the
// tests that prove how far each transport is from Apply
// (spawntest.CheckPath); otherwise Apply costs one atomic load more. The
// last trace set wins.
func TraceApply(f func(step Step, path []string)) (stop func()) {
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
	var path []string
	frames := runtime.CallersFrames(pcs[:n])
	for {
		fr, more := frames.Next()
		path = append(path, fr.Function)
		if !more {
			break
		}
	}
	(*f)(step, path)
}
