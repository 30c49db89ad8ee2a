package spawn

import "strings"

// Signals are what a front end knows when it has to pick a mode.
type Signals struct {
	Direct     bool   // --direct
	Harness    bool   // --harness
	HarnessEnv string // DONT_HARNESS
	MCP        bool   // invoked as `dont mcp`
	StdoutTTY  bool   // stdout is a terminal
}

// DetectMode resolves harness mode in the documented priority order:
// --direct; --harness; a truthy DONT_HARNESS; dont mcp; non-terminal
// stdout; else direct.
func DetectMode(s Signals) Mode {
	switch {
	case s.Direct:
		return ModeDirect
	case s.Harness:
		return ModeHarness
	case truthy(s.HarnessEnv):
		return ModeHarness
	case s.MCP:
		return ModeHarness
	case !s.StdoutTTY:
		return ModeHarness
	}
	return ModeDirect
}

func truthy(v string) bool {
	v = strings.TrimSpace(strings.ToLower(v))
	return v != "" && v != "0" && v != "false"
}
