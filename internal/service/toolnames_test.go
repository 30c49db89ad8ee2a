package service_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// The service decides a spawn request's forbidden_tools from the tool
// names it is given (Deps.ToolNames), never from a list of its own: a
// service wired without them refuses loudly to issue a request that would
// forbid a subagent less, and writes nothing.
func TestAServiceWiredWithoutTheToolListPanicsRatherThanIssueASpawnRequest(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := service.New(service.Deps{Store: st, SpawnTimeout: time.Hour, Author: "test"})
	claim, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C at sea level"})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "service.Deps.ToolNames") {
				t.Fatalf("recovered %v, want a panic naming service.Deps.ToolNames", r)
			}
		}()
		svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: claim.ID, Mode: spawn.ModeHarness})
	}()
	list, err := svc.Spawns.List(ctx, service.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	if list.Count != 0 {
		t.Fatalf("a spawn was issued: %+v", list)
	}
}
