package repocheck

import (
	"os/exec"
	"strings"
	"testing"
)

// coldStartForbidden are the packages the plain CLI must not link: Go runs
// the initialisation of every linked package on every start, and these
// cost the AWS SDK's service clients and config loader about 1.8 ms of
// each `dont` run (docs/design.md#decisions, "Bedrock over net/http").
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
