package httpapi_test

import (
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/spawn/spawntest"
)

// A newcomer follows `dont serve`'s handler to spawn.Apply in at most
// five of this repository's functions, none of which calls back up into
// a higher layer: a keyed callback (its response committed with its
// writes) recorded where Apply decides it.
func TestACallbackOverHTTPReachesSpawnApplyInAtMostFiveFunctionsWithNoClimbBack(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	req := a.ok(h, "assume", map[string]any{"id": id}).data()
	rid := req["request_id"].(string)
	cb := req["callback"].(map[string]any)["token"].(string)
	paths := spawntest.RecordCallbacks(t, rid)
	r := a.call(cb, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/steam-tables"}, "request_id": rid},
		"Idempotency-Key", "path-test")
	if r.status != 200 {
		t.Fatalf("dismiss: %d %s", r.status, r.raw)
	}
	got := paths()
	if len(got) == 0 {
		t.Fatal("the callback never reached spawn.Apply")
	}
	for _, p := range got {
		between := spawntest.CheckPath(t, p, "github.com/dont-cli/dont/internal/httpapi.(*server).call")
		t.Logf("server.call → %s → spawn.Apply", strings.ReplaceAll(strings.Join(between, " → "), "github.com/dont-cli/dont/", ""))
	}
}
