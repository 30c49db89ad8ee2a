package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// coldStartForbidden are the packages the CLI (the `dont` go install
// makes) must not link: Go runs the initialisation of
// every linked package on every start, and these cost the AWS SDK's
// service clients about 1.8 ms of each run, its config loader (with the
// SSO, SSO-OIDC and STS clients it links) 1.2 ms and 2.5 MB of RSS,
// measured again for the Bedrock credentials (docs/design.md#decisions,
// "Bedrock over net/http").
var coldStartForbidden = []string{
	"github.com/aws/aws-sdk-go-v2/service/",
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/feature/",
	"github.com/aws/aws-lambda-go",
	"github.com/awslabs/",
}

func TestThePlainCLILinksNoAWSServiceClientOrConfigLoader(t *testing.T) {
	root, _ := tracked(t)
	module := modulePath(t, root)
	cmd := exec.Command("go", "list", "-deps", module+"/cli/dont")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave %d packages: the check proves nothing", len(deps))
	}
	for _, dep := range deps {
		for _, f := range coldStartForbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("cli/dont links %s: the CLI's start-up runs its init (docs/design.md#decisions)", dep)
			}
		}
	}
}

// The CLI is built without cgo everywhere the repository builds it for a
// person (README.md's install line, cli/demo.sh; bench/coldstart and the
// CLI's tests set it in their own code): with cgo on, `net` alone links
// the dynamic loader and libc, which cost every start their relocations
// and about 1.4 MB of RSS (docs/design.md#decisions, "built without cgo").
func TestEveryBuildOfTheCLIIsWithoutCgo(t *testing.T) {
	root, _ := tracked(t)
	builds := 0
	for _, file := range []string{"README.md", "cli/demo.sh"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "cli/dont") || !(strings.Contains(line, "go build") || strings.Contains(line, "go install")) {
				continue
			}
			if strings.Contains(line, "-tags faulthooks") || strings.HasPrefix(strings.TrimSpace(line), "echo") {
				continue // the tests' build, described; or a line that only tells
			}
			n := strings.Count(line, "go build") + strings.Count(line, "go install")
			builds += n
			if strings.Count(line, "CGO_ENABLED=0 go ") < n {
				t.Errorf("%s:%d builds the CLI with cgo on (the default): %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
	if builds < 2 {
		t.Fatalf("found %d builds of the CLI in README.md and cli/demo.sh: the check proves nothing", builds)
	}
	module := modulePath(t, root)
	cmd := exec.Command("go", "list", "-deps", module+"/cli/dont")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list without cgo: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "runtime/cgo" {
			t.Error("cli/dont links runtime/cgo even without cgo")
		}
	}
}

// Nothing the CLI links may look methods up by name at run time
// (reflect's MethodByName and Method, as text/template's evaluator
// does): one such call makes the linker keep every exported method of
// every type, which made dont 24.4 MB instead of 20.5 MB and each command
// about 1 ms slower to start (docs/design.md#decisions, "Agent profiles
// without text/template's evaluator"). The linker's own dependency dump
// marks such a function <ReflectMethod>.
func TestNothingTheCLILinksLooksUpMethodsByName(t *testing.T) {
	root, _ := tracked(t)
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", os.DevNull, "./cli/dont")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%.2000s", err, out)
	}
	if n := strings.Count(string(out), "\n"); n < 10000 {
		t.Fatalf("the linker's dependency dump has %d lines: the check proves nothing", n)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if from, _, ok := strings.Cut(line, " <ReflectMethod>"); ok && !seen[from] {
			seen[from] = true
			t.Errorf("cli/dont links %s, which looks methods up by name: the linker then keeps every exported method", from)
		}
	}
}
