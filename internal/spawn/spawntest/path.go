package spawntest

import (
	"strings"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/spawn"
)

// module prefixes the functions of this repository, as the runtime names
// them; a main package's are "main.".
const module = "github.com/dont-cli/dont/"

// layers ranks the packages a call passes on its way to spawn.Apply,
// highest first: a function may call one of its own layer or a lower
// one; calling a higher one, through a closure or an interface it was
// handed, is a climb back up.
var layers = []struct {
	prefix string
	layer  int
}{
	{"main.", 3}, // cli/dont, functions/api; under test, by their paths:
	{module + "cli/dont.", 3},
	{module + "functions/api.", 3},
	{module + "internal/httpapi.", 3},
	{module + "internal/mcp.", 3},
	{module + "internal/tools.", 2},
	{module + "internal/service.", 1},
	{module + "internal/spawn.", 0},
}

// layerOf is fn's layer, or -1 for a function of no ranked package.
func layerOf(fn string) int {
	for _, l := range layers {
		if strings.HasPrefix(fn, l.prefix) {
			return l.layer
		}
	}
	return -1
}

// ours reports whether fn is a function of this repository.
func ours(fn string) bool {
	return strings.HasPrefix(fn, module) || strings.HasPrefix(fn, "main.")
}

// RecordCallbacks records, until the test ends, the calls that reach
// spawn.Apply with a callback step for requestID: each path is the
// functions from Apply outwards, as runtime.CallersFrames names them
// (inlined calls too). Other steps, and other spawns' callbacks (tests
// running beside), are not recorded.
func RecordCallbacks(t testing.TB, requestID string) (paths func() [][]string) {
	var mu sync.Mutex
	var got [][]string
	stop := spawn.TraceApply(func(step spawn.Step, path []string) {
		if step.Kind != spawn.StepCallback || step.RequestID != requestID {
			return
		}
		mu.Lock()
		got = append(got, path)
		mu.Unlock()
	})
	t.Cleanup(stop)
	return func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return append([][]string{}, got...)
	}
}

// MaxPath is how many of this repository's functions may stand between a
// transport's entry and spawn.Apply (issue 30: a newcomer follows any
// transport to Apply in at most five).
const MaxPath = 5

// CheckPath fails t unless path (Apply first, as RecordCallbacks records
// it) reaches Apply from the function entry through at most MaxPath
// functions of this repository, each of a layer no higher than the one
// that called it (no climb back up). It returns the functions between,
// from the entry down, for the record.
func CheckPath(t testing.TB, path []string, entry string) []string {
	t.Helper()
	if len(path) == 0 || path[0] != module+"internal/spawn.Apply" {
		t.Errorf("the path does not start at spawn.Apply: %q", path)
		return nil
	}
	at := -1
	for i, fn := range path {
		if fn == entry {
			at = i
			break
		}
	}
	if at < 0 {
		t.Errorf("the path does not pass through the transport's entry %s:\n  %s", entry, strings.Join(path, "\n  "))
		return nil
	}
	var between []string
	for i := at - 1; i > 0; i-- {
		if ours(path[i]) {
			between = append(between, path[i])
		}
	}
	if len(between) > MaxPath {
		t.Errorf("%d functions of this repository between %s and spawn.Apply, want at most %d:\n  %s",
			len(between), entry, MaxPath, strings.Join(between, "\n  "))
	}
	prev, prevFn := layerOf(entry), entry
	for _, fn := range append(between, path[0]) {
		l := layerOf(fn)
		if l < 0 {
			t.Errorf("%s, on the way to spawn.Apply, is in no layer of the path (docs/design.md §3)", fn)
			continue
		}
		if l > prev {
			t.Errorf("%s climbs back up to %s", prevFn, fn)
		}
		prev, prevFn = l, fn
	}
	return between
}
