package main

import (
	"testing"

	"github.com/dont-cli/dont/internal/httpapi"
)

// The function's buckets are its environment's (set by the stack); a
// value that is not a number fails the start rather than running unlimited.
func TestTheAPIFunctionsRateLimitsComeFromItsEnvironment(t *testing.T) {
	env := map[string]string{EnvRate: "20", EnvBurst: "40", EnvProjectRate: "100", EnvProjectBurst: "200", EnvTotalRate: "-1"}
	o, err := limits(func(k string) string { return env[k] }, httpapi.Options{})
	if err != nil || o.RatePerSecond != 20 || o.Burst != 40 || o.ProjectPerSecond != 100 || o.ProjectBurst != 200 || o.TotalPerSecond != -1 || o.TotalBurst != 0 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []map[string]string{{EnvRate: "fast"}, {EnvBurst: "-3"}, {EnvProjectBurst: "1.5"}} {
		if _, err := limits(func(k string) string { return bad[k] }, httpapi.Options{}); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
