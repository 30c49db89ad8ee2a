package idempotency_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/spawn"
)

func body(t *testing.T, kind string, data any, hints ...string) []byte {
	t.Helper()
	env, err := envelope.New(kind, data, nil, hints)
	if err != nil {
		t.Fatal(err)
	}
	return envelope.Marshal(env)
}

func TestStoredFormRedactsOnlyResponsesThatCarryASecret(t *testing.T) {
	const secret = "dont_tok:01M8K8GPM0MSBJJGEQ30XQ84KA_166ojpeskWzvZTMZmV9eUoCoAanzMavpO3gTvPnbbBg"
	kept := map[string][]byte{
		"another kind":               body(t, "tokens", map[string]any{"tokens": []any{}, "count": 0}),
		"a token without its secret": body(t, "token", map[string]any{"id": "tok:1", "role": "admin"}),
		"an error":                   envelope.Marshal(envelope.Fail(errs.E(errs.NotFound, "no such token"), nil)),
		"not an envelope":            []byte("not json"),
		"a spawn request":            body(t, "spawn_request", map[string]any{"callback": map[string]any{"token": "dontcb_x"}}),
	}
	for name, b := range kept {
		if got := idempotency.StoredForm(b); !bytes.Equal(got, b) {
			t.Errorf("%s was changed: %s", name, got)
		}
	}

	first := body(t, "token", map[string]any{"id": "tok:1", "role": "admin", "token": secret}, "echoed "+secret)
	stored := idempotency.StoredForm(first)
	if bytes.Contains(stored, []byte(secret)) {
		t.Fatalf("the stored form holds the secret: %s", stored)
	}
	var env envelope.Envelope
	if err := json.Unmarshal(stored, &env); err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	json.Unmarshal(env.Data, &data)
	if !env.OK || env.Kind != "token" || data["token"] != idempotency.Redacted || data["id"] != "tok:1" || data["role"] != "admin" {
		t.Fatalf("stored form: %s", stored)
	}
	if len(env.Warnings) != 1 || env.Warnings[0].Code != idempotency.SecretNotReplayed {
		t.Fatalf("warnings: %+v", env.Warnings)
	}
	if again := idempotency.StoredForm(stored); !bytes.Equal(again, stored) {
		t.Fatalf("a stored form is stored again as it is: %s", again)
	}
}

// A remembered spawn request is stored without its derived, long
// forbidden_tools and replayed with it, byte for byte.
func TestASpawnRequestReplaysItsForbiddenToolsByteForByte(t *testing.T) {
	allowed := []string{"show", "dismiss", "trust"}
	surface := []string{"assume", "conclude", "dismiss", "escalate", "show", "tokens.create", "trust"}
	list, _ := envelope.MarshalData(spawn.ForbiddenTools(allowed, surface))
	body := []byte(`{"envelope_version":"1","ok":true,"envelope_kind":"spawn_request","data":{"request_id":"spawn:x","context":{"clean":true,"allowed_tools":["show","dismiss","trust"],"forbidden_tools":` +
		string(list) + `,"max_tool_calls":20}},"hints":[],"warnings":[]}` + "\n")
	stored := idempotency.StoredForm(body)
	if bytes.Contains(stored, list) || len(stored) >= len(body) {
		t.Fatalf("stored with the list: %s", stored)
	}
	if got := idempotency.ReplayForm(stored, surface); !bytes.Equal(got, body) {
		t.Fatalf("replayed\n%s\nwant\n%s", got, body)
	}
	plain := []byte(`{"ok":true,"envelope_kind":"claim","data":{"id":"claim:x"}}`)
	if got := idempotency.ReplayForm(idempotency.StoredForm(plain), surface); !bytes.Equal(got, plain) {
		t.Fatalf("a plain body changed: %s", got)
	}
}

// The kind is read without decoding the response: a token envelope is
// still stored redacted, and a response of another kind is stored as it
// is even when its data holds a token field or quotes an envelope_kind.
func TestTheStoredFormReadsTheEnvelopesOwnKind(t *testing.T) {
	tok, _ := envelope.MarshalData(map[string]any{"id": "token:01", "token": "dont_secret_abc"})
	body := envelope.Marshal(envelope.Envelope{OK: true, Kind: "token", Data: tok})
	if got := idempotency.StoredForm(body); bytes.Contains(got, []byte("dont_secret_abc")) || !bytes.Contains(got, []byte(idempotency.Redacted)) {
		t.Fatalf("a token envelope was stored with its secret: %s", got)
	}
	other, _ := envelope.MarshalData(map[string]any{"note": `"envelope_kind":"token"`, "token": "not a secret here"})
	body = envelope.Marshal(envelope.Envelope{OK: true, Kind: "entity", Data: other})
	if got := idempotency.StoredForm(body); !bytes.Equal(got, body) {
		t.Fatalf("an entity envelope was changed:\n%s\n%s", body, got)
	}
}

// Only a key a callback token sent names a spawn: a bearer token's key,
// whatever the key says, names none, so no store looks for its record
// on a spawn's resolution. The entity a callback names goes with it
// when it is an id, and nothing an agent writes in its key is read as
// either.
func TestOnlyACallbackTokensKeyNamesItsSpawn(t *testing.T) {
	const sp, claim, tok = "spawn:01M8K8GPM0ZBRVPVNC2ZZT2BWQ", "claim:01M8K8GPM0ZBRVPVNC2ZZT2BWR", "tok:01M8K8GPM0ZBRVPVNC2ZZT2BWQ"
	for _, c := range []struct {
		name, spawnID, entityID, tool string
	}{
		{idempotency.Scope("", sp, claim, "dismiss") + "/k", sp, claim, "dismiss"},
		{idempotency.Scope("", sp, "", "spawns.heartbeat") + "/" + sp + "@" + claim + "/x", sp, "", "spawns.heartbeat"},
		{idempotency.Scope("", sp, "claim:../x/y", "dismiss") + "/k", sp, "", "dismiss"},
		{idempotency.Scope(tok, "", claim, "dismiss") + "/" + sp, "", "", ""},
		{idempotency.Scope(tok, "", "", "dismiss") + "/" + sp + "@" + claim + "/dismiss/k", "", "", ""},
		{"spawn:not-an-id/dismiss/k", "", "", ""},
		{sp, "", "", ""},
	} {
		id, entity, tool, ok := idempotency.SpawnOf(c.name)
		if id != c.spawnID || entity != c.entityID || tool != c.tool || ok != (c.spawnID != "") {
			t.Errorf("SpawnOf(%q) = %q, %q, %q, %v; want %q, %q, %q", c.name, id, entity, tool, ok, c.spawnID, c.entityID, c.tool)
		}
	}
}
