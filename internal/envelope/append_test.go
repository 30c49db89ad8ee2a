package envelope

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// text draws strings; their escaping is jsontext's, tested there over any
// input, so these only need to reach each kind of escape.
func text() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "a\"q\"", "<b>&", "\x00\x1f\t\n", "\u2028\u2029", "\xff\xfe", "é😀"}))
}

// data draws JSON as MarshalData writes it: compact, or (to reach the
// other path) indented.
func data(t *rapid.T) json.RawMessage {
	v := map[string]any{
		"s": text().Draw(t, "s"),
		"n": rapid.Int64().Draw(t, "n"),
		"l": rapid.SliceOf(text()).Draw(t, "l"),
		"b": rapid.Bool().Draw(t, "b"),
	}
	var b []byte
	if rapid.Bool().Draw(t, "indented") {
		b, _ = json.MarshalIndent(v, "", "  ")
	} else {
		b, _ = MarshalData(v)
	}
	return b
}

func TestMarshalIsEncodingJSONByteForByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		env := Envelope{
			EnvelopeVersion: text().Draw(t, "version"),
			CLIVersion:      text().Draw(t, "cli"),
			OK:              rapid.Bool().Draw(t, "ok"),
			Kind:            text().Draw(t, "kind"),
			Data:            data(t),
			Meta: Meta{DurationMS: rapid.Int64().Draw(t, "ms"), RequestID: text().Draw(t, "req"),
				Mode: rapid.SampledFrom([]string{"", "harness", "direct", "\x00<"}).Draw(t, "mode")},
		}
		if rapid.Bool().Draw(t, "hints") {
			env.Hints = rapid.SliceOf(text()).Draw(t, "hint")
		}
		if rapid.Bool().Draw(t, "warnings") {
			env.Warnings = rapid.SliceOf(rapid.Custom(func(t *rapid.T) Warning {
				return Warning{Code: WarningCode(text().Draw(t, "code")), Message: text().Draw(t, "message"),
					RequestID: rapid.SampledFrom([]string{"", "spawn:01", "\n"}).Draw(t, "rid"),
					Outcome:   rapid.SampledFrom([]string{"", "holds", "\u2028"}).Draw(t, "outcome")}
			})).Draw(t, "warning")
		}
		if got, want := string(Marshal(env)), string(marshalJSON(env)); got != want {
			t.Fatalf("Marshal differs from encoding/json:\n got %q\nwant %q", got, want)
		}
	})
}

// The envelopes the transports send most: a success with no warnings
// and an error, as New and Fail build them.
func TestMarshalOfNewAndFailIsEncodingJSON(t *testing.T) {
	ok, err := New("claim", map[string]string{"id": "claim:01", "statement": "a \"quoted\" <b>claim</b>\u2028"}, nil, []string{"dont assume claim:01"})
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []Envelope{ok, Fail(json.Unmarshal([]byte("{"), new(any)), []Warning{{Code: WarnSweepFailed, Message: "m"}})} {
		if got, want := string(Marshal(env)), string(marshalJSON(env)); got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	}
}
