package spawntest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what it is told to report.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

const (
	apply   = module + "internal/spawn.Apply"
	serve   = module + "internal/httpapi.(*server).call"
	runStep = module + "internal/service.(*core).runStep"
	resolve = module + "internal/service.(*Spawns).Resolve"
)

// The checker behind the path tests refuses what issue 30 found: a
// callback seven functions below `dont serve`'s handler, and a lower
// layer calling back into a higher one on the way; it passes the path
// this repository has now.
func TestThePathCheckerRefusesALongPathAndAClimbBackUp(t *testing.T) {
	for _, c := range []struct {
		name string
		path []string
		want string
	}{
		{"before issue 30", []string{apply, runStep, module + "internal/service.(*core).callback", resolve,
			module + "internal/tools.transition.func1", module + "internal/tools.(*Tool).call", module + "internal/tools.Call",
			module + "internal/tools.CallGated", serve, "net/http.HandlerFunc.ServeHTTP"}, "7 functions"},
		{"a climb", []string{apply, runStep, module + "internal/tools.init.func1.1", resolve,
			module + "internal/tools.execute", serve}, "climbs back up to " + module + "internal/tools.init.func1.1"},
		{"now", []string{apply, runStep, resolve, module + "internal/tools.transition.func1",
			module + "internal/tools.execute", module + "internal/tools.CallWith", serve, "net/http.HandlerFunc.ServeHTTP"}, ""},
	} {
		r := &recorder{TB: t}
		CheckPath(r, c.path, serve)
		got := strings.Join(r.errs, "\n")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: reported %q, want %q", c.name, got, c.want)
		}
	}
}
