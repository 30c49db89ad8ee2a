package sqlite

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// The store's documents are written by hand (docjson.go), and must be
// byte for byte what encoding/json writes without HTML escaping, over strings that need every
// escape, floats of every format, times in every zone and out of range,
// empty and nil lists, and details of strings and of other values.
func TestDocumentsAreWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", `q"uote\back`, "<a href='x'>&amp;</a>", "ctl\x00\x01\b\f\n\r\t\x1f\x7f", "bad \xff\xfe utf-8 \xe2\x28",
		"line\u2028para\u2029", "émoji 😀 ü", "\xed\xa0\x80 surrogate", strings.Repeat("long ", 50)}
	str := func() string { return strs[r.IntN(len(strs))] }
	list := func() []string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		l := make([]string, 1+r.IntN(3))
		for i := range l {
			l[i] = str()
		}
		return l
	}
	floats := []float64{0, math.Copysign(0, -1), 0.25, 1, -3.5, 1e-7, 1e-6, 123456789, 1e21, 1e20, 5e-324, math.MaxFloat64, 0.1 + 0.2, math.NaN(), math.Inf(1)}
	fp := func() *float64 {
		if r.IntN(3) == 0 {
			return nil
		}
		f := floats[r.IntN(len(floats))]
		return &f
	}
	base := time.Date(2026, 12, 1, 9, 30, 15, 123456789, time.UTC)
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("a", 3600), time.FixedZone("b", -(5*3600 + 30*60)), time.FixedZone("c", 45), time.FixedZone("d", 24*3600), time.FixedZone("e", -23*3600-59*60)}
	tm := func() time.Time {
		switch r.IntN(8) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		case 2:
			return time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
		case 3:
			return time.Now() // with a monotonic reading
		}
		return base.Add(time.Duration(r.Int64N(1e15))).In(zones[r.IntN(len(zones))]).Truncate(time.Duration(r.IntN(3)) * time.Microsecond)
	}
	tp := func() *time.Time {
		if r.IntN(2) == 0 {
			return nil
		}
		v := tm()
		return &v
	}
	detail := func() map[string]any {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return map[string]any{}
		case 2:
			return map[string]any{"n": 3, "tally": []string{"a"}, "q": str()}
		}
		m := map[string]any{}
		for range 1 + r.IntN(4) {
			m[str()] = str()
		}
		return m
	}
	same := func(what string, got []byte, gotErr error, v any) {
		t.Helper()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(v)
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if wantErr != nil {
			want = nil
		}
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s (%v)\nwant %s (%v)\nof %#v", what, got, gotErr, want, wantErr, v)
		}
	}
	for range 5000 {
		e := ledger.Entity{ID: str(), Kind: ledger.EntityKind(str()), Statement: str(), Curie: str(), Definition: str(), Atoms: list(), Refs: list(),
			Confidence: fp(), DependsOn: list(), Status: ledger.Status(str()), Author: str(), CreatedAt: tm(), UpdatedAt: tm(),
			Version: r.Int64N(3) * r.Int64(), PendingSpawn: str(), LastSpawn: str()}
		b, err := entityDoc(e)
		same("entity", b, err, e)
		sp := spawn.Spawn{ID: str(), Kind: spawn.Kind(str()), EntityID: str(), State: spawn.State(str()), Outcome: spawn.Outcome(str()), Mode: spawn.Mode(str()),
			PreStatus: ledger.Status(str()), Question: str(), N: r.IntN(3) * (r.IntN(40) - 20), Temperature: fp(), IssuedAt: tm(), ExpiresAt: tm(),
			ResolvedAt: tp(), EntityVersion: r.Int64N(3) * (r.Int64N(100) - 50), RequestedBy: str(), Request: []byte(`{"not":"in the doc"}`)}
		b, err = spawnDoc(sp)
		same("spawn", b, err, sp)
		ev := ledger.Event{ID: str(), Kind: ledger.EventKind(str()), EntityID: str(), RequestID: str(), Author: str(), At: tm(),
			From: ledger.Status(str()), To: ledger.Status(str()), Reason: str(), Evidence: list(), Outcome: str(), Direct: r.IntN(2) == 0, Detail: detail()}
		b, err = eventDoc(ev)
		same("event", b, err, ev)
	}
}

// docjson.go writes these fields, in this order, with these tags: a field
// added to a document type must be added there too.
func TestTheDocumentTypesHaveTheFieldsDocJSONWrites(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[ledger.Entity](): `id kind statement,omitempty curie,omitempty definition,omitempty atoms,omitempty refs,omitempty confidence,omitempty depends_on,omitempty status author,omitempty created_at updated_at version pending_spawn,omitempty last_spawn,omitempty`,
		reflect.TypeFor[spawn.Spawn]():   `request_id request_kind entity_id,omitempty state outcome,omitempty mode pre_status,omitempty question,omitempty n,omitempty temperature,omitempty issued_at expires_at resolved_at,omitempty entity_version,omitempty requested_by,omitempty -`,
		reflect.TypeFor[ledger.Event]():  `id kind entity_id,omitempty request_id,omitempty author,omitempty at from,omitempty to,omitempty reason,omitempty evidence,omitempty outcome,omitempty direct,omitempty detail,omitempty`,
	} {
		var tags []string
		for f := range typ.Fields() {
			tags = append(tags, f.Tag.Get("json"))
		}
		if got := strings.Join(tags, " "); got != want {
			t.Errorf("%s's fields are tagged\n%s\ndocjson.go writes\n%s", typ, got, want)
		}
	}
}
