package spawn

import "testing"

func TestHarnessModeDetectionOrder(t *testing.T) {
	cases := []struct {
		name string
		sig  Signals
		want Mode
	}{
		{"direct flag overrides environment", Signals{Direct: true, HarnessEnv: "1", StdoutTTY: false}, ModeDirect},
		{"direct flag overrides mcp", Signals{Direct: true, MCP: true}, ModeDirect},
		{"harness flag selects harness mode at a terminal", Signals{Harness: true, StdoutTTY: true}, ModeHarness},
		{"direct flag overrides harness flag", Signals{Direct: true, Harness: true}, ModeDirect},
		{"environment variable selects harness mode", Signals{HarnessEnv: "yes", StdoutTTY: true}, ModeHarness},
		{"environment variable 0 is not a signal", Signals{HarnessEnv: "0", StdoutTTY: true}, ModeDirect},
		{"environment variable false is not a signal", Signals{HarnessEnv: "FALSE", StdoutTTY: true}, ModeDirect},
		{"mcp forces harness mode", Signals{MCP: true, StdoutTTY: true}, ModeHarness},
		{"piped stdout implies harness mode", Signals{StdoutTTY: false}, ModeHarness},
		{"interactive shell defaults to direct mode", Signals{StdoutTTY: true}, ModeDirect},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DetectMode(c.sig); got != c.want {
				t.Fatalf("DetectMode(%+v) = %s, want %s", c.sig, got, c.want)
			}
		})
	}
}
