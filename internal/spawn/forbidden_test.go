package spawn_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/spawn"
)

// forbidden_tools is what keeps a subagent from every tool it is not
// given: a builder that was not handed the registry's names must not
// quietly forbid a shorter list, it fails loudly.
func TestASpawnRequestBuiltWithoutTheToolListPanics(t *testing.T) {
	req := spawn.NewRequest(spawn.Spawn{ID: "spawn:x", Kind: spawn.Guess, Question: "what boils water?", N: 1}, nil)
	if req.Context.ForbiddenTools != nil {
		t.Fatalf("the stored form lists forbidden tools: %v", req.Context.ForbiddenTools)
	}
	for _, tools := range [][]string{nil, {}} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "service.Deps.ToolNames") {
					t.Fatalf("built with tools %#v: recovered %v, want a panic naming service.Deps.ToolNames", tools, r)
				}
			}()
			req.Forbidding(tools)
		}()
	}
	got := req.Forbidding([]string{"answer", "assume", "escalate", "show", "tokens.create"}).Context.ForbiddenTools
	if want := []string{"assume", "escalate", "show", "tokens.create"}; !slices.Equal(got, want) {
		t.Fatalf("forbidden_tools %v, want %v", got, want)
	}
}
