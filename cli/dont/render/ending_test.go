package render

import (
	"strings"
	"testing"
)

// A question whose asking client went away says so in the terminal's
// renderings (show, list, inbox), not "cancelled by the requester".
func TestAQuestionWhoseAskingClientWentAwaySaysSo(t *testing.T) {
	d := doc{"state": "resolved", "asked": true, "verdict": "cancelled", "cause": "client-gone", "answered_by": "mcp:agent",
		"detail": "the asking client went away (it cancelled its request or disconnected) while waiting for the answer"}
	p := &printer{}
	if got := ending(p, d); !strings.Contains(got, "the asking client went away") || strings.Contains(got, "by the requester") {
		t.Fatalf("ending: %q", got)
	}
	if got := shortEnding(p, d); got != "cancelled: the asking client went away" {
		t.Fatalf("shortEnding: %q", got)
	}
}
