package httpapi_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
)

// confirmed sends a gated call the way this CLI does after its prompt (or
// --yes): declaring its capabilities, with cli_confirmed: true.
func (a *api) confirmed(token, tool string, args map[string]any) reply {
	a.t.Helper()
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args, "cli_confirmed": true})
	return a.do(http.MethodPost, "/v1/tools/"+tool, token, body, confirm.CapsHeader, confirm.CLICaps)
}

func (a *api) raw(token, tool, body string, header ...string) reply {
	a.t.Helper()
	return a.do(http.MethodPost, "/v1/tools/"+tool, token, []byte(body), header...)
}

func toolView(t *testing.T, r reply, name string) map[string]any {
	t.Helper()
	for _, v := range r.data()["tools"].([]any) {
		if m := v.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("GET /v1/tools lacks %s", name)
	return nil
}

func hasSkip(t *testing.T, r reply, name string) bool {
	props := toolView(t, r, name)["input_schema"].(map[string]any)["properties"].(map[string]any)
	_, a := props["skip_confirmation"]
	_, b := props["auto_skip_confirmation"]
	if a != b {
		t.Fatalf("%s lists one skip parameter without the other", name)
	}
	return a
}

func TestToolListDependsOnCapabilitiesAndTheServerGate(t *testing.T) {
	on, off := newAPI(t), newAPI(t, func(o *httpapi.Options) { o.DisableInteractiveConfirm = true })
	cases := []struct {
		name     string
		api      *api
		caps     string
		feature  bool
		skipSeen bool
	}{
		{"a non-CLI caller gets the legacy view", on, "", false, true},
		{"cli-confirm-v1 alone: feature on, legacy view", on, "cli-confirm-v1", true, true},
		{"cli-confirm-v1 and cli-yes-only-v1: the new-contract view", on, "cli-confirm-v1,cli-yes-only-v1", true, false},
		{"space-separated capabilities", on, "cli-yes-only-v1 cli-confirm-v1", true, false},
		{"cli-yes-only-v1 alone is not a confirming CLI", on, "cli-yes-only-v1", false, true},
		{"server gate off: legacy view, no feature, whatever the caps", off, "cli-confirm-v1,cli-yes-only-v1", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var header []string
			if c.caps != "" {
				header = []string{confirm.CapsHeader, c.caps}
			}
			r := c.api.do("GET", "/v1/tools", "", nil, header...)
			if r.status != 200 || r.header.Get("Vary") != confirm.CapsHeader {
				t.Fatalf("%d %v", r.status, r.header)
			}
			features := r.data()["features"].(map[string]any)
			if got, _ := features["interactive_confirm"].(bool); got != c.feature {
				t.Fatalf("features %v, want interactive_confirm %v", features, c.feature)
			}
			if c.feature == false && len(features) != 0 {
				t.Fatalf("the features bit must be absent when off: %v", features)
			}
			for _, gated := range []string{"lock", "ignore", "spawns.cancel", "tokens.create", "tokens.revoke", "tokens.manage", "spawns.manage", "tokens.revoke-all"} {
				if hasSkip(t, r, gated) != c.skipSeen {
					t.Fatalf("%s lists skip parameters: %v, want %v", gated, !c.skipSeen, c.skipSeen)
				}
			}
			if hasSkip(t, r, "conclude") {
				t.Fatal("an ungated tool lists skip parameters")
			}
			// The annotations are the same in every view.
			ann := toolView(t, r, "lock")["annotations"].(map[string]any)
			if ann["requires_confirmation"] != true || ann["interactive_only"] != nil {
				t.Fatalf("lock annotations %v", ann)
			}
			ann = toolView(t, r, "tokens.revoke-all")["annotations"].(map[string]any)
			if ann["requires_confirmation"] != true || ann["interactive_only"] != true {
				t.Fatalf("tokens.revoke-all annotations %v", ann)
			}
			ex := toolView(t, r, "tokens.manage")["annotations"].(map[string]any)["confirmation_exempt"].(map[string]any)
			if ex["param"] != "op" || len(ex["values"].([]any)) != 1 || ex["default"] != "list" {
				t.Fatalf("tokens.manage exemption %v", ex)
			}
			ex = toolView(t, r, "spawns.manage")["annotations"].(map[string]any)["confirmation_exempt"].(map[string]any)
			if _, has := ex["default"]; has || len(ex["values"].([]any)) != 2 {
				t.Fatalf("spawns.manage exemption %v", ex)
			}
			if ann := toolView(t, r, "conclude")["annotations"].(map[string]any); len(ann) != 0 {
				t.Fatalf("conclude annotations %v", ann)
			}
		})
	}
}

func TestGatedCallsOverHTTP(t *testing.T) {
	a := newAPI(t)
	h, admin := a.tokens["harness"], a.tokens["admin"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	a.ok(h, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/bp"}})
	caps := []string{confirm.CapsHeader, confirm.CLICaps}
	before := a.eventCount()
	cases := []struct {
		name   string
		token  string
		tool   string
		body   string
		header []string
		status int
		held   bool
	}{
		{"unconfirmed, non-CLI: held", h, "lock", `{"args":{"id":"` + id + `"}}`, nil, 202, true},
		{"unconfirmed CLI under the contract (stale cache): held", h, "lock", `{"args":{"id":"` + id + `"}}`, caps, 202, true},
		{"skip_confirmation false: held", h, "lock", `{"args":{"id":"` + id + `","skip_confirmation":false}}`, nil, 202, true},
		{"skip_confirmation on interactive-only: refused, never held", admin, "tokens.revoke-all", `{"args":{"skip_confirmation":true}}`, nil, 428, false},
		{"cli_confirmed without declaring cli-confirm-v1: held", admin, "tokens.create", `{"args":{"role":"admin"},"cli_confirmed":true}`, nil, 202, true},
		{"skip_confirmation not a boolean", h, "lock", `{"args":{"id":"` + id + `","skip_confirmation":"true"}}`, nil, 400, false},
		{"skip_confirmation on an ungated tool is an unknown parameter", h, "conclude", `{"args":{"statement":"x","skip_confirmation":true}}`, nil, 400, false},
		{"cli_confirmed must be a boolean", h, "lock", `{"args":{"id":"` + id + `"},"cli_confirmed":"yes"}`, caps, 400, false},
		{"exempt read value runs", admin, "tokens.manage", `{"args":{"op":"list"}}`, nil, 200, false},
		{"omitted argument with its declared default runs", admin, "tokens.manage", `{"args":{}}`, nil, 200, false},
		{"omitted argument without a default: refused as invalid, not held", h, "spawns.manage", `{"args":{}}`, nil, 400, false},
		{"role check comes before the gate", h, "tokens.create", `{"args":{"role":"admin"},"cli_confirmed":true}`, caps, 403, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.raw(c.token, c.tool, c.body, c.header...)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.raw)
			}
			if held := r.str("status") == confirm.StatusPending; held != c.held {
				t.Fatalf("held %v: %s", held, r.raw)
			}
			if c.held && (r.env["envelope_kind"] != "confirmation" || r.str("confirmation_id") == "" || len(r.env["hints"].([]any)) == 0) {
				t.Fatalf("held envelope: %s", r.raw)
			}
		})
	}
	if a.eventCount() != before {
		t.Fatal("a held or refused call changed the ledger")
	}
	if r := a.confirmed(h, "lock", map[string]any{"id": id}); r.status != 200 || r.str("status") != "locked" {
		t.Fatalf("cli_confirmed under the contract: %d %s", r.status, r.raw)
	}
	// cli_confirmed counts only from a caller that declared cli-confirm-v1
	// (the CLI, the approvals web page).
	if r := a.raw(admin, "tokens.create", `{"args":{"role":"harness"},"cli_confirmed":true}`, confirm.CapsHeader, confirm.CapConfirm); r.status != 200 || r.str("token") == "" {
		t.Fatalf("cli_confirmed with the capability header: %d %s", r.status, r.raw)
	}
	if r := a.raw(admin, "tokens.create", `{"args":{"role":"harness","auto_skip_confirmation":true}}`); r.status != 200 || r.str("token") == "" {
		t.Fatalf("legacy auto_skip_confirmation: %d %s", r.status, r.raw)
	}
}

func TestServerGateOffHoldsEvenConfirmedCalls(t *testing.T) {
	a := newAPI(t, func(o *httpapi.Options) { o.DisableInteractiveConfirm = true })
	r := a.confirmed(a.tokens["admin"], "tokens.create", map[string]any{"role": "harness"})
	if r.status != 202 || r.str("status") != confirm.StatusPending {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if r := a.raw(a.tokens["admin"], "tokens.create", `{"args":{"role":"harness","skip_confirmation":true}}`); r.status != 200 {
		t.Fatalf("legacy skip with the gate off: %d %s", r.status, r.raw)
	}
}

func TestAnApproverConfirmsAHeldCallOnceOverHTTP(t *testing.T) {
	a := newAPI(t)
	h := a.tokens["harness"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	a.ok(h, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/bp"}})
	held := a.raw(h, "lock", `{"args":{"id":"`+id+`","reason":"settled"}}`)
	conf := held.str("confirmation_id")
	digest := a.ok(a.tokens["approver"], "confirmations.show", map[string]any{"id": conf}).str("shown_digest")
	before := a.eventCount()
	if r := a.call(h, "confirmations.confirm", map[string]any{"id": conf, "shown_digest": digest}); r.status != 403 {
		t.Fatalf("a harness token confirmed: %d %s", r.status, r.raw)
	}
	if r := a.ok(h, "show", map[string]any{"id": id}); r.str("status") != "verified" || a.eventCount() != before {
		t.Fatal("the held call ran before anyone confirmed it")
	}
	const n = 8
	results := make([]reply, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = a.call(a.tokens["approver"], "confirmations.confirm", map[string]any{"id": conf, "shown_digest": digest})
		}(i)
	}
	wg.Wait()
	ran := 0
	for _, r := range results {
		switch {
		case r.status == 200 && r.env["envelope_kind"] == "claim":
			ran++
		case r.status == 200 && r.env["envelope_kind"] == "confirmation":
		default:
			t.Fatalf("confirm: %d %s", r.status, r.raw)
		}
	}
	if ran != 1 || a.eventCount() != before+1 {
		t.Fatalf("ran %d times, %d new events; want exactly once", ran, a.eventCount()-before)
	}
	shown := a.ok(a.tokens["approver"], "confirmations.show", map[string]any{"id": conf})
	if shown.str("state") != "executed" || shown.str("requested_by") == "" || shown.str("decided_by") == "" {
		t.Fatalf("record %s", shown.raw)
	}
}
