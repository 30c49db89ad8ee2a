package cmdline

import (
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// The service names a parameter in its API spelling; the CLI shows its flag.
func TestTheCLINamesTheFlagWhereTheServiceNamesTheParameter(t *testing.T) {
	for in, want := range map[string]string{
		"a callback names the spawn it resolves (`request_id`)": "a callback names the spawn it resolves (--request-id)",
		"`after` must be >= 0 and `wait` between 0 and 25s":     "--after must be >= 0 and --wait between 0 and 25s",
		"no parameter here":      "no parameter here",
		"a `Quoted Thing` stays": "a `Quoted Thing` stays",
	} {
		if got := FlagNamed(in); got != want {
			t.Errorf("FlagNamed(%q) = %q, want %q", in, got, want)
		}
	}
	env := WithFlagNames(envelope.Fail(errs.E(errs.InvalidArgument, "a `reason` of 1 to 2048 bytes is required"), nil))
	var e errs.Error
	if err := json.Unmarshal(env.Data, &e); err != nil {
		t.Fatal(err)
	}
	if e.Message != "a --reason of 1 to 2048 bytes is required" || len(e.Remediation) == 0 || e.Code != errs.InvalidArgument {
		t.Fatalf("the CLI's envelope = %s", env.Data)
	}
}
