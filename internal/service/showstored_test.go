package service_test

import (
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/envelope"
)

// `show` sends an entity's document as the SQLite store keeps it
// (Ledger.ShowStored), neither decoded nor encoded again; that is only
// right if the stored document is, byte for byte, what decoding it and
// encoding the entity as data (envelope.MarshalData of Show's view) would
// send. Every shape an entity reaches is checked: a claim with atoms,
// references, confidence and dependencies, a term, each status, and text
// with quotes, HTML, control characters, U+2028 and non-ASCII.
func TestShowSendsTheStoredDocumentAsTheEntitysEncoding(t *testing.T) {
	e := newEnv(t)
	odd := "a \"quoted\" <b>claim</b> & \\ back\tslash\x01\u2028 café 😀"
	must := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := call(e.svc, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var v struct{ ID string }
		b, _ := envelope.MarshalData(res.Data)
		_ = json.Unmarshal(b, &v)
		return v.ID
	}
	base := e.conclude("water boils at 100 C at sea level")
	term := must("define", map[string]any{"curie": "ex:boil", "doc": odd})
	rich := must("conclude", map[string]any{"statement": odd, "atom": []string{odd, "b"}, "ref": []string{"https://example.org/?a=<1>&b=2"},
		"confidence": 0.25, "depends_on": []string{base, term}})
	doubted := e.conclude("doubted " + odd)
	must("trust", map[string]any{"id": doubted, "reason": "the thermometer read 93 C at 2,000 m"})
	verified := e.conclude("verified")
	must("dismiss", map[string]any{"id": verified, "evidence": []string{"https://example.org/boiling", "doi:10.1000/x"}})
	locked := e.conclude("locked")
	must("dismiss", map[string]any{"id": locked, "evidence": []string{"https://example.org/a"}})
	must("lock", map[string]any{"id": locked, "reason": "checked twice " + odd})
	ignored := e.conclude("ignored")
	must("ignore", map[string]any{"id": ignored, "reason": "out of scope for this run " + odd})
	reopened := e.conclude("reopened")
	must("ignore", map[string]any{"id": reopened, "reason": "out of scope for this run"})
	must("reopen", map[string]any{"id": reopened, "reason": "back in scope after the review"})
	must("dismiss", map[string]any{"id": base, "evidence": []string{"https://example.org/b"}}) // makes rich stale? either way a shape

	for _, id := range []string{base, term, rich, doubted, verified, locked, ignored, reopened} {
		stored, ok, err := e.svc.Ledger.ShowStored(ctx, id)
		if err != nil || !ok {
			t.Fatalf("ShowStored(%s) = ok %v, %v", id, ok, err)
		}
		view, err := e.svc.Ledger.Show(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := envelope.MarshalData(view)
		if err != nil {
			t.Fatal(err)
		}
		if string(stored.Doc) != string(want) {
			t.Errorf("%s: stored document differs from the entity's encoding:\n got %s\nwant %s", id, stored.Doc, want)
		}
		if string(stored.Kind) != string(view.Kind) {
			t.Errorf("%s: kind %q, want %q", id, stored.Kind, view.Kind)
		}
		res, err := call(e.svc, "show", map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := envelope.MarshalData(res.Data); string(got) != string(want) || res.Kind != string(view.Kind) {
			t.Errorf("%s: the show tool sends %s %s, want %s %s", id, res.Kind, got, view.Kind, want)
		}
	}
}

// A missing or malformed id is refused by ShowStored as by Show.
func TestShowStoredRefusesWhatShowRefuses(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"claim:01M8S9AQV02PS7BGGFMVX586SX", "spawn:nope", "nonsense"} {
		_, ok, err := e.svc.Ledger.ShowStored(ctx, id)
		_, want := e.svc.Ledger.Show(ctx, id, false)
		if !ok || err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: ShowStored says %v (ok %v), Show says %v", id, err, ok, want)
		}
	}
}
