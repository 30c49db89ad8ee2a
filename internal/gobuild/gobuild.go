// Package gobuild gives tests (and the proof command) an executable of a
// program of this module without linking it again each time.
//
// `go build -o` links the program on every call, a few CPU seconds for
// dont and about one for a stand-in, and every test package that starts
// one paid it again in each run of the test command. `go run` keeps the
// executables it links in Go's build cache (Go 1.24 and later), keyed by
// the sources, flags and environment like any build output; `go run -exec
// echo` prints that executable's path instead of running it. The first
// call of a build prints a temporary copy that go removes as it exits, so
// Executable asks again, and the second answer is the cached one.
package gobuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Executable returns the path of the executable `go build args...` would
// write, run in dir with env added to this process's environment (args:
// build flags, then the package). The file is Go's: run it, never change
// or remove it.
func Executable(dir string, env []string, args ...string) (string, error) {
	var last string
	for range 2 {
		cmd := exec.Command("go", append([]string{"run", "-exec", "echo"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		last = strings.TrimSpace(string(out))
		if _, err := os.Stat(last); err == nil {
			return last, nil
		}
	}
	return "", fmt.Errorf("go build %s: go run printed %q, which does not exist: is the build cache off?", strings.Join(args, " "), last)
}
