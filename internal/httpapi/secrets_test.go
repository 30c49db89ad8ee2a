package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
)

// tokenCreate is a call that answers a new bearer token over HTTP, with
// its Idempotency-Key, as the CLI sends one on every call.
type tokenCreate struct{ name, token, tool, body, key string }

func (c tokenCreate) send(a *api) reply {
	a.t.Helper()
	return a.raw(c.token, c.tool, c.body, "Idempotency-Key", c.key, confirm.CapsHeader, confirm.CLICaps)
}

// tokenCreates are every way to create a token over HTTP: tokens.create,
// tokens.manage --op create, and another admin's confirm of a held create
// (the confirm answers the held call's result).
func tokenCreates(t *testing.T, a *api) []tokenCreate {
	t.Helper()
	admin := a.tokens["admin"]
	held := a.raw(admin, "tokens.create", `{"args":{"role":"approver"}}`)
	if held.status != 202 {
		t.Fatalf("the unconfirmed create was not held: %d %s", held.status, held.raw)
	}
	digest := a.ok(admin, "confirmations.show", map[string]any{"id": held.str("confirmation_id")}).str("shown_digest")
	return []tokenCreate{
		{"tokens.create", admin, "tokens.create", `{"args":{"role":"harness","name":"ci"},"cli_confirmed":true}`, "tc-1"},
		{"tokens.manage --op create", admin, "tokens.manage", `{"args":{"op":"create","role":"harness"},"cli_confirmed":true}`, "tm-1"},
		{"confirmations.confirm", anotherAdmin(t, a), "confirmations.confirm", `{"args":{"id":"` + held.str("confirmation_id") + `","shown_digest":"` + digest + `"}}`, "cc-1"},
	}
}

// anotherAdmin is a second admin token: only an admin other than the one
// that asked may confirm a held tokens.create.
func anotherAdmin(t *testing.T, a *api) string {
	t.Helper()
	res, err := a.svc.Credentials.Create(context.Background(), "admin", "second admin")
	if err != nil {
		t.Fatal(err)
	}
	return res.Secret
}

// created sends c and checks that it answered a token.
func created(t *testing.T, a *api, c tokenCreate) reply {
	t.Helper()
	r := c.send(a)
	if r.status != 200 || r.env["envelope_kind"] != "token" || len(r.str("token")) < 20 {
		t.Fatalf("%s: %d %s", c.name, r.status, r.raw)
	}
	return r
}

// The store's bytes as they are on disk: the database and SQLite's
// write-ahead log and shared memory beside it.
func storeBytes(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// The attack: read .dont/dont.db (or a backup of it) and find a bearer
// token that was created over HTTP, kept as the response remembered under
// its Idempotency-Key.
func TestATokenCreatedOverHTTPIsNotStoredInPlaintext(t *testing.T) {
	a := newAPI(t)
	var secrets []string
	for _, c := range tokenCreates(t, a) {
		secrets = append(secrets, created(t, a, c).str("token"))
	}
	raw := storeBytes(t, a.path)
	for i, secret := range secrets {
		// Neither the token nor the part that authenticates, after the id.
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(secret[len(secret)-16:])) {
			t.Errorf("the token answered by call %d lies in plaintext in the store's files", i)
		}
	}
	if n := a.idempotencyRecords("state = 'done'"); n != len(secrets) {
		t.Fatalf("%d remembered responses, want the %d creates', redacted", n, len(secrets))
	}
}

// The attack: replay a token create's Idempotency-Key (a key from a log,
// a retry by another client of the same token) to be shown the secret
// again. The replay is the first response, redacted, with a warning.
func TestAReplayedTokenCreateDoesNotShowTheSecretAgain(t *testing.T) {
	a := newAPI(t)
	for _, c := range tokenCreates(t, a) {
		first := created(t, a, c)
		again := c.send(a)
		secret := first.str("token")
		if hasWarning(first, string(idempotency.SecretNotReplayed)) {
			t.Fatalf("%s: the first response warns it is a replay: %s", c.name, first.raw)
		}
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: not a replay: %d %s", c.name, again.status, again.raw)
		}
		if bytes.Contains(again.raw, []byte(secret)) || bytes.Contains(again.raw, []byte(secret[len(secret)-16:])) {
			t.Fatalf("%s: the replay shows the secret again: %s", c.name, again.raw)
		}
		if again.status != first.status || again.env["ok"] != true || again.env["envelope_kind"] != "token" ||
			again.str("token") != idempotency.Redacted || again.str("id") != first.str("id") || again.str("role") != first.str("role") {
			t.Fatalf("%s: the replay is not the first response redacted:\n%s\n%s", c.name, first.raw, again.raw)
		}
		if !hasWarning(again, string(idempotency.SecretNotReplayed)) {
			t.Fatalf("%s: the replay does not say the secret was left out: %s", c.name, again.raw)
		}
	}
	// 3 of newAPI, the second admin, 3 created once each: the replays created none.
	if list := a.ok(a.tokens["admin"], "tokens.list", nil); list.data()["count"] != 7.0 {
		t.Fatalf("%v tokens, want 7", list.data()["count"])
	}
}

// idempotencyRecords counts the store's Idempotency-Key records where cond
// holds, read from the file as any reader of it could.
func (a *api) idempotencyRecords(cond string) (n int) {
	a.t.Helper()
	db, err := sql.Open("sqlite", a.path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT count(*) FROM idempotency WHERE " + cond).Scan(&n); err != nil {
		a.t.Fatal(err)
	}
	return n
}

func hasWarning(r reply, code string) bool {
	ws, _ := r.env["warnings"].([]any)
	for _, w := range ws {
		if m, _ := w.(map[string]any); m["code"] == code {
			return true
		}
	}
	return false
}

// counting passes an idempotency.Store through and counts the calls.
type counting struct {
	idempotency.Store
	calls atomic.Int64
}

func (c *counting) Claim(ctx context.Context, key, fp string, now time.Time) (*idempotency.Record, error) {
	c.calls.Add(1)
	return c.Store.Claim(ctx, key, fp, now)
}

func (c *counting) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	c.calls.Add(1)
	return c.Store.Lookup(ctx, key, now)
}

func (c *counting) Remember(ctx context.Context, key, fp string, status int, body []byte, now time.Time) error {
	c.calls.Add(1)
	return c.Store.Remember(ctx, key, fp, status, body, now)
}

func (c *counting) Complete(ctx context.Context, key string, status int, body []byte) error {
	c.calls.Add(1)
	return c.Store.Complete(ctx, key, status, body)
}

// Before, every read with an Idempotency-Key (the CLI sends one on every
// call) cost two writes in a table that never shrank, and its answer was
// replayed stale.
func TestReadOnlyCallsWriteNoIdempotencyRecord(t *testing.T) {
	store := &counting{}
	a := newAPI(t, func(o *httpapi.Options) {
		b := o.Backend.(httpapi.SingleProject)
		store.Store = b.Project.Idempotency
		b.Project.Idempotency = store
		o.Backend = b
	})
	h, admin := a.tokens["harness"], a.tokens["admin"]
	id := a.ok(h, "conclude", map[string]any{"statement": "water boils at 100 C"}).str("id")
	spawnReq := a.ok(h, "assume", map[string]any{"id": id}).data()
	callback := spawnReq["callback"].(map[string]any)["token"].(string)
	records := func() int { return a.idempotencyRecords("1") }
	store.calls.Store(0)
	reads := []struct {
		token, tool string
		args        map[string]any
	}{
		{h, "show", map[string]any{"id": id}},
		{h, "list", nil},
		{h, "spawns", map[string]any{"pending": true}},
		{admin, "tokens.list", nil},
		{admin, "confirmations.list", nil},
		{callback, "show", map[string]any{"id": id}}, // a callback token's calls are exclusive: Lookup, then Remember
	}
	for i, c := range reads {
		for range 2 {
			r := a.call(c.token, c.tool, c.args, "Idempotency-Key", "read-"+string(rune('a'+i)))
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: %d %s (replayed %q)", c.tool, r.status, r.raw, r.header.Get("Idempotent-Replayed"))
			}
		}
	}
	if n := store.calls.Load(); n != 0 {
		t.Fatalf("read-only calls reached the idempotency store %d times", n)
	}
	if n := records(); n != 0 {
		t.Fatalf("read-only calls left %d idempotency records", n)
	}
	// A write with a key is still remembered.
	a.call(h, "conclude", map[string]any{"statement": "remembered"}, "Idempotency-Key", "write-1")
	if n := records(); n != 1 {
		t.Fatalf("a write left %d idempotency records, want 1", n)
	}
}
