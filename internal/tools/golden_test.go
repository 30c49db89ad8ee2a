package tools_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/dont-cli/dont/internal/webhook"
)

var update = flag.Bool("update", false, "rewrite testdata/envelopes/*.json from what the tools return")

// notFromTheRegistry are the kinds no tool returns: the CLI or a transport
// builds them itself (tools.FrontEndKinds), so a test of the tool registry
// cannot produce them. Their shapes are pinned where they are built
// (cli/dont/render's fixtures, the transports' tests). This list may only
// shrink: TestEveryKindHasAGoldenEnvelope fails when it grows.
var notFromTheRegistry = map[string]string{
	envelope.KindHealth:          "GET /v1/health is the HTTP transport's own",
	envelope.KindInit:            "`dont init` creates the store before any service exists",
	envelope.KindPassphrase:      "`dont init`'s passphrase step is the CLI's own",
	envelope.KindDoctor:          "`dont doctor` inspects the installation, not the service",
	envelope.KindProjectSettings: "the operator function's, over a shared store's settings",
	envelope.KindVersion:         "`dont version` is the binary's own",
	envelope.KindFrame:           "one NDJSON line of `dont approvals frames`, cut by the CLI from a frames page",
	envelope.KindSecretRotation:  "the operator function's",
	envelope.KindSpawnRun:        "`dont spawns run`'s report of the processes it ran",
	envelope.KindConfig:          "`dont config` reads the person's files",
	envelope.KindBackup:          "`dont backup` copies the SQLite file",
	envelope.KindRestore:         "`dont restore` replaces the SQLite file",
	envelope.KindHarnessInstall:  "`dont harness install` writes a harness's files",
	envelope.KindLogin:           "`dont login` keeps a server's token in the person's files",
}

// maxNotFromTheRegistry is how many kinds notFromTheRegistry may hold.
const maxNotFromTheRegistry = 14

// notInThisRun are kinds a tool returns only to a caller this run cannot
// be: a browser with an authenticator, or an approver token's holder
// speaking for a Slack user. Their shapes are pinned by cli/dont/render's
// fixtures and their own tests (internal/httpapi, cli/dont's passkey
// browser tests). This list may only shrink.
var notInThisRun = map[string]string{
	envelope.KindPasskey:        "passkeys.register-finish needs a WebAuthn attestation from an authenticator",
	envelope.KindPasskeyOptions: "passkeys.*-begin needs the page's origin as relying party",
	envelope.KindPasskeySignIn:  "POST /v1/passkeys/signin is the HTTP transport's own, after an assertion",
	envelope.KindSlackLinkCode:  "approvals.slack-link answers only an approver token, not the person at the CLI",
}

// countingIDs is an id source whose ids are the clock's time and a count:
// the same calls make the same ids on every run.
func countingIDs() func(kind string, at time.Time) string {
	var n uint64
	return func(kind string, at time.Time) string {
		n++
		var id ulid.ULID
		if err := id.SetTime(ulid.Timestamp(at)); err != nil {
			panic(err)
		}
		var entropy [10]byte
		binary.BigEndian.PutUint64(entropy[2:], n)
		if err := id.SetEntropy(entropy[:]); err != nil {
			panic(err)
		}
		return kind + ":" + id.String()
	}
}

// secretKeys are the fields whose values are fresh random secrets on every
// run; the golden bytes hold a placeholder instead. A webhook message's id
// is minted by the store that queues it (hooks.Message.Identified), not by
// the service's id source, and a delivery's latency is measured.
var secretKeys = map[string]bool{"token": true, "secret": true, "callback_token": true, "message_id": true, "latency_ms": true}

// goldenBytes is the envelope of out as every transport encodes it
// (envelope.New, envelope.Marshal), indented for review, without its meta
// (a duration) and with random secrets replaced.
func goldenBytes(t *testing.T, env envelope.Envelope) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(envelope.Marshal(env), &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "meta")
	hideSecrets(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hideSecrets(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKeys[k] {
				switch e.(type) {
				case string:
					x[k] = "<varies>"
				case float64:
					x[k] = 0
				}
				continue
			}
			x[k] = hideSecrets(e)
		}
	case []any:
		for i, e := range x {
			x[i] = hideSecrets(e)
		}
	}
	return v
}

// goldenRun drives the tool registry over a service on a real SQLite file,
// with a fixed clock and counting ids, and returns an envelope of every
// kind it can produce.
func goldenRun(t *testing.T) map[string]envelope.Envelope {
	t.Helper()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// A webhook receiver on the loopback interface, allowed by the policy.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	policy := hooks.AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Tokens: st, Confirmations: st, Author: "test",
		Approvals:   service.Approvals{Store: st, Lease: time.Hour},
		HooksConfig: service.HooksConfig{Store: st, Sender: webhook.New(policy), Policy: policy, PublicURL: "https://dont.example.com"},
		Clock:       func() time.Time { return now },
		IDs:         countingIDs(),
	})
	person := service.WithPrincipal(ctx, auth.Owner("person"))

	got := map[string]envelope.Envelope{}
	keep := func(out tools.Output) tools.Output {
		t.Helper()
		env, err := envelope.New(out.Kind, out.Data, out.Warnings, out.Hints)
		if err != nil {
			t.Fatal(err)
		}
		// The receiver's port is the system's choice.
		env.Data = bytes.ReplaceAll(env.Data, []byte(receiver.URL), []byte("http://127.0.0.1:8080"))
		got[out.Kind] = env // the last of a kind: the fullest
		return out
	}
	call := func(name string, args map[string]any) tools.Output {
		t.Helper()
		now = now.Add(time.Second)
		out, err := tools.Call(person, svc, name, args)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return keep(out)
	}
	field := func(out tools.Output, name string) string {
		t.Helper()
		b, _ := json.Marshal(out.Data)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		s, ok := m[name].(string)
		if !ok {
			t.Fatalf("%s has no %s: %s", out.Kind, name, b)
		}
		return s
	}

	claim := field(call("conclude", map[string]any{"statement": "water boils at 100 C at sea level", "ref": []any{"https://example.org/bp"}}), "id")
	call("define", map[string]any{"curie": "ex:boiling", "doc": "the temperature at which a liquid's vapour pressure equals the pressure around it"})
	call("list", map[string]any{})
	req := field(call("assume", map[string]any{"id": claim, "mode": string(spawn.ModeHarness)}), "request_id")
	call("spawns", map[string]any{})
	call("spawns.heartbeat", map[string]any{"request_id": req})
	call("dismiss", map[string]any{"id": claim, "evidence": []any{"https://example.org/bp"}, "request_id": req})
	call("show", map[string]any{"id": claim})
	call("spawns.manage", map[string]any{"op": "show", "request_id": req})
	guess := field(call("guess", map[string]any{"question": "what boils water at sea level?", "mode": string(spawn.ModeHarness)}), "request_id")
	call("answer", map[string]any{"request_id": guess, "candidate": []any{"100 C"}})
	cancelled := field(call("assume", map[string]any{"id": claim, "mode": string(spawn.ModeHarness)}), "request_id")
	call("spawns.cancel", map[string]any{"request_id": cancelled, "reason": "no longer needed"})
	call("sweep", map[string]any{})

	ses := field(call("sessions.open", map[string]any{"name": "build", "tier": "read-only"}), "session_id")
	call("sessions.list", map[string]any{})
	call("sessions.show", map[string]any{"id": ses})
	// The approvals page reads the session's frames: a question has a
	// subscriber to answer it.
	call("approvals.frames", map[string]any{"session": ses, "subscriber": "page"})
	apr := field(call("escalate", map[string]any{"session": ses, "call": "call-1", "to": "workspace-write", "reason": "write the build output", "no_wait": true}), "approval_id")
	call("approvals.list", map[string]any{})
	digest := field(call("approvals.show", map[string]any{"id": apr}), "shown_digest")
	call("approvals.approve", map[string]any{"id": apr, "shown_digest": digest})
	call("approvals.wait", map[string]any{"id": apr})
	call("approvals.frames", map[string]any{"session": ses})
	call("approvals.inbox", map[string]any{})
	call("approvals.sweep", map[string]any{})
	call("approvals.audit", map[string]any{})

	call("tokens.create", map[string]any{"role": "harness", "name": "ci"})
	call("tokens.list", map[string]any{})
	call("tokens.revoke-all", map[string]any{})

	now = now.Add(time.Second)
	held, err := tools.CallGated(person, svc, "lock", map[string]any{"id": claim, "reason": "settled"}, confirm.Arrival{})
	if err != nil {
		t.Fatal(err)
	}
	keep(held)
	call("confirmations.list", map[string]any{})

	// The hook hears nothing of the above: its one message is the test's,
	// so its deliveries list in one order on every run.
	hook := field(call("hooks.add", map[string]any{"url": receiver.URL, "events": []any{string(hooks.ConfirmationHeld)}}), "hook_id")
	call("hooks.list", map[string]any{})
	call("hooks.test", map[string]any{"id": hook})
	call("hooks.deliver", map[string]any{})
	call("hooks.deliveries", map[string]any{"id": hook})
	call("whoami", map[string]any{})

	// GET /v1/tools's data for a caller inside the gate that declares the
	// new contract is the registry's own schema (httpapi's toolList);
	// `dont tools` adds where it read it from.
	keep(tools.Output{Kind: envelope.KindTools, Data: tools.SchemaFor(true, true)})

	_, err = tools.Call(person, svc, "show", map[string]any{"id": "claim:01KAZZZZZZZZZZZZZZZZZZZZZZ"})
	if err == nil {
		t.Fatal("showing a claim that does not exist succeeded")
	}
	got[envelope.KindError] = envelope.Fail(err, nil)
	return got
}

// The envelope of every kind the tool registry returns, as every
// transport sends it, is the one in testdata/envelopes/<kind>.json: a
// change to any field an agent parses shows up here first. Rerun with
// -update when the change is meant.
func TestEveryEnvelopeMatchesItsGoldenFile(t *testing.T) {
	got := goldenRun(t)
	for _, kind := range slices.Sorted(maps.Keys(got)) {
		b := goldenBytes(t, got[kind])
		path := filepath.Join("testdata", "envelopes", kind+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("kind %s: no golden file (go test ./internal/tools -run TestEveryEnvelopeMatchesItsGoldenFile -update): %v", kind, err)
			continue
		}
		if !bytes.Equal(b, want) {
			t.Errorf("the %s envelope differs from %s (rerun with -update if the change is meant):\n--- got\n%s\n--- want\n%s", kind, path, b, want)
		}
	}
}

// Every kind constant has a golden envelope, or is one no tool returns
// (notFromTheRegistry, which may not grow).
func TestEveryKindHasAGoldenEnvelope(t *testing.T) {
	if len(notInThisRun) > 4 {
		t.Errorf("notInThisRun grew to %d kinds: produce the new kind in goldenRun instead", len(notInThisRun))
	}
	if len(notFromTheRegistry) > maxNotFromTheRegistry {
		t.Errorf("%d kinds have no golden envelope, at most %d may: produce the new kind through the tool registry instead", len(notFromTheRegistry), maxNotFromTheRegistry)
	}
	got := goldenRun(t)
	for _, kind := range kindConstants(t) {
		why, excused := notFromTheRegistry[kind]
		if w, ok := notInThisRun[kind]; ok {
			why, excused = w, true
		}
		_, produced := got[kind]
		switch {
		case excused && produced:
			t.Errorf("kind %s is produced by the tool registry but listed as not (%s): remove it from notFromTheRegistry", kind, why)
		case !excused && !produced:
			t.Errorf("kind %s has no golden envelope: produce it in goldenRun, then go test ./internal/tools -run TestEveryEnvelopeMatchesItsGoldenFile -update", kind)
		case produced:
			if _, err := os.Stat(filepath.Join("testdata", "envelopes", kind+".json")); err != nil {
				t.Errorf("kind %s has no testdata/envelopes/%s.json: go test ./internal/tools -run TestEveryEnvelopeMatchesItsGoldenFile -update", kind, kind)
			}
		}
	}
	for kind := range notFromTheRegistry {
		if !slices.Contains(tools.FrontEndKinds, kind) {
			t.Errorf("kind %s is excused as built outside the registry but is not in tools.FrontEndKinds", kind)
		}
	}
}

// kindConstants are the string constants of internal/envelope/kinds.go,
// with the entity kinds (claim, term) and the error kind.
func kindConstants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "envelope", "kinds.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"claim", "term", envelope.KindError}
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok {
			for _, x := range v.Values {
				if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
		return true
	})
	sort.Strings(out)
	return out
}
