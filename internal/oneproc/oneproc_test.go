package oneproc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// This test binary imports the package, so its init runs in every
// process of it: a process starts on one P and Restore gives it the
// runtime's default (all CPUs here, or fewer under a cgroup quota, but
// more than one on a machine with more than one); a GOMAXPROCS the user
// set is kept throughout. Each case is a child process, as init runs
// once per process.
func TestAProcessStartsOnOnePAndRestoreGivesTheDefault(t *testing.T) {
	if os.Getenv("ONEPROC_CHILD") != "" {
		before := runtime.GOMAXPROCS(0)
		Restore()
		after := runtime.GOMAXPROCS(0)
		Restore() // a second call changes nothing
		fmt.Printf("%d %d %d\n", before, after, runtime.GOMAXPROCS(0))
		return
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	run := func(extra ...string) (before, after, again int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestAProcessStartsOnOnePAndRestoreGivesTheDefault$")
		cmd.Env = append(append(env, extra...), "ONEPROC_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if _, err := fmt.Sscan(string(out), &before, &after, &again); err != nil {
			t.Fatalf("child said %q: %v", out, err)
		}
		return before, after, again
	}
	before, after, again := run()
	if before != 1 || after < min(2, runtime.NumCPU()) || after > runtime.NumCPU() || again != after {
		t.Errorf("without GOMAXPROCS: %d at start, %d after Restore, %d after a second; want 1, then the default of %d CPUs", before, after, again, runtime.NumCPU())
	}
	if before, after, again := run("GOMAXPROCS=3"); before != 3 || after != 3 || again != 3 {
		t.Errorf("with GOMAXPROCS=3: %d, %d, %d; want 3 throughout", before, after, again)
	}
}
