package main

import (
	"bytes"
	"os"
	"testing"
)

// The binary as shipped, built without -tags faulthooks, hold no fault
// variable's name, so it reads none; the test build holds it. The same
// for the test builds' person home (an agent's environment must not
// choose the person's folders).
func TestTheShippedBinaryReadsNoFaultVariable(t *testing.T) {
	t.Parallel()
	shipped, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bin  string
		want bool
	}{{shipped, false}, {binary, true}} {
		b, err := os.ReadFile(c.bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"DONT_FAULT_COMMIT_DELAY", "DONT_FAULT_FREE_BYTES", "DONT_TEST_PERSON_HOME", "DONT_FAULT_PASSPHRASE_COST"} {
			if got := bytes.Contains(b, []byte(name)); got != c.want {
				t.Errorf("%s names %s: %v, want %v", c.bin, name, got, c.want)
			}
		}
	}
}
