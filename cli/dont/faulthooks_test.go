package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The binary as shipped, built without -tags faulthooks, holds no fault
// variable's name, so it reads none; the test build holds it.
func TestTheShippedBinaryReadsNoFaultVariable(t *testing.T) {
	shipped := filepath.Join(t.TempDir(), "dont")
	build := exec.Command("go", "build", "-o", shipped, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as README.md builds it
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		bin  string
		want bool
	}{{shipped, false}, {binary, true}} {
		b, err := os.ReadFile(c.bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte("DONT_FAULT_COMMIT_DELAY")); got != c.want {
			t.Errorf("%s names DONT_FAULT_COMMIT_DELAY: %v, want %v", c.bin, got, c.want)
		}
	}
}
