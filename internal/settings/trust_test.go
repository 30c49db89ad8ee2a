package settings_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/settings"
)

// Every variable of a trust-relevant setting is one a harness-signalled
// process cannot set; the harmless ones stay the agent's to set.
func TestTheVariablesOfTrustRelevantSettingsArePersonOnly(t *testing.T) {
	for _, v := range []string{settings.EnvApprovalTimeout, settings.EnvSubscriberLease, settings.EnvPublicURL, settings.EnvHooksAllowPrivate,
		settings.EnvSpawnMaxLease, settings.EnvLLMProvider, settings.EnvLLMBaseURL, settings.EnvSessionCeiling} {
		if !settings.IsPersonOnlyEnv(v) {
			t.Errorf("%s is not person-only", v)
		}
	}
	for _, v := range []string{settings.EnvSpawnTimeout, "DONT_LLM_MODEL", "DONT_LLM_API_KEY", "DONT_HARNESS"} {
		if settings.IsPersonOnlyEnv(v) {
			t.Errorf("%s is person-only", v)
		}
	}
}

func TestAPinChangesWithAnyByte(t *testing.T) {
	a, b := settings.Pin([]byte("[agents.x]\ncommand = [\"a\"]\n")), settings.Pin([]byte("[agents.x]\ncommand = [\"a\"] \n"))
	if a == b || len(a) != 64 || a != settings.Pin([]byte("[agents.x]\ncommand = [\"a\"]\n")) {
		t.Fatalf("pins %s %s", a, b)
	}
}
