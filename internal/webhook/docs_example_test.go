package webhook_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The receiver that docs/hooks.md shows is a program that compiles with
// the public Standard Webhooks library (not with anything internal, which
// no outside program can import): the code block is read from the doc
// and vetted as it stands, against this module's requirements, offline.
func TestTheReceiverExampleInDocsHooksBuilds(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- TestTheReceiverExampleInDocsHooksBuilds compiles the next code block as it stands. -->\n```go\n"
	_, rest, ok := strings.Cut(string(doc), marker)
	if !ok {
		t.Fatal("docs/hooks.md has no marked receiver example")
	}
	code, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the receiver example in docs/hooks.md is not closed")
	}
	if strings.Contains(code, "dont-cli/dont/internal") {
		t.Fatal("the receiver example imports an internal package: no outside program can")
	}
	file := filepath.Join(t.TempDir(), "receiver.go")
	if err := os.WriteFile(file, []byte(code+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Run from this package's directory, so that the file's imports are
	// resolved by this module's go.mod and go.sum.
	cmd := exec.Command("go", "vet", file)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the receiver example in docs/hooks.md: %v\n%s", err, out)
	}
}
