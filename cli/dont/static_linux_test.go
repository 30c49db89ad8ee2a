package main

import (
	"debug/elf"
	"testing"
)

// The CLI as README.md builds it (CGO_ENABLED=0, as TestMain builds it
// too) is statically linked: no dynamic loader runs and no libc is mapped
// at each start (docs/design.md#decisions, "built without cgo").
func TestTheCLIAsREADMEBuildsItIsStaticallyLinked(t *testing.T) {
	t.Parallel()
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Progs) == 0 {
		t.Fatal("no program headers: the check proves nothing")
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: it is dynamically linked", binary, p.Type)
		}
	}
}
