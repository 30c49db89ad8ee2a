package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/spawn/spawntest"
)

// The API function serves the same handler as `dont serve`: from its
// Lambda handler, a callback reaches spawn.Apply through the HTTP
// handler's call and then at most five of this repository's functions,
// none of which calls back up into a higher layer.
func TestACallbackThroughTheAPIFunctionReachesSpawnApplyInAtMostFiveFunctionsWithNoClimbBack(t *testing.T) {
	f := newFn(t)
	post := func(tool string, args map[string]any, token string) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"args": args})
		resp, env := f.call("r-"+tool, event("POST", "/v1/tools/"+tool, token, string(body), map[string]string{"idempotency-key": "path-" + tool}))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tool, resp.StatusCode, resp.Body)
		}
		return env["data"].(map[string]any)
	}
	id := post("conclude", map[string]any{"statement": "water boils at 100 C"}, f.token)["id"].(string)
	req := post("assume", map[string]any{"id": id}, f.token)
	rid := req["request_id"].(string)
	cb := req["callback"].(map[string]any)["token"].(string)
	paths := spawntest.RecordCallbacks(t, rid)
	post("dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/steam-tables"}, "request_id": rid}, cb)
	got := paths()
	if len(got) == 0 {
		t.Fatal("the callback never reached spawn.Apply")
	}
	for _, p := range got {
		if !contains(p, "github.com/awslabs/aws-lambda-go-api-proxy/httpadapter.(*HandlerAdapterV2).ProxyWithContext") {
			t.Errorf("the callback did not come through the Lambda handler: %q", p)
		}
		between := spawntest.CheckPath(t, p, "github.com/dont-cli/dont/internal/httpapi.(*server).call")
		t.Logf("the Lambda handler → … → server.call → %s → spawn.Apply", strings.ReplaceAll(strings.Join(between, " → "), "github.com/dont-cli/dont/", ""))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
