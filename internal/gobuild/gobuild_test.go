package gobuild_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/gobuild"
)

// The executable is a program that runs, and asking again gives the same
// cached file without linking it again. The KMS stand-in is built as
// internal/standin builds it, so the two share one cached build.
func TestAnExecutableIsBuiltOnceAndRuns(t *testing.T) {
	first, err := gobuild.Executable("../..", nil, "./localstack/kmsstandin")
	if err != nil {
		t.Fatal(err)
	}
	again, err := gobuild.Executable("../..", nil, "./localstack/kmsstandin")
	if err != nil || again != first {
		t.Fatalf("asked again: %q %v, want %q", again, err, first)
	}
	fi, err := os.Stat(first)
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v %v", first, fi, err)
	}
	out, _ := exec.Command(first, "-h").CombinedOutput()
	if !strings.Contains(string(out), "-addr") {
		t.Fatalf("%s -h: %s", first, out)
	}
	if _, err := gobuild.Executable("../..", nil, "./no/such/package"); err == nil {
		t.Fatal("a package that does not exist was built")
	}
}
