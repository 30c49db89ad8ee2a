package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Text draws strings an agent might write: any bytes (invalid UTF-8
// included), control characters, quotes, backslashes, HTML, U+2028/9.
func Text() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.SampledFrom([]rune{'a', '"', '\\', '\n', '\r', '\t', '\b', '\f', 0, 0x1f, 0x7f, '<', '>', '&', '\u2028', '\u2029', 'é', '\ufffd', '😀'})),
		rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")) }),
	)
}

func TestAppendStringIsEncodingJSONByteForByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Text().Draw(t, "s")
		html, _ := json.Marshal(s)
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := AppendString(nil, s, true); string(got) != string(html) {
			t.Fatalf("escapeHTML: got %q, encoding/json %q", got, html)
		}
		if got, want := AppendString(nil, s, false), bytes.TrimSuffix(plain.Bytes(), []byte("\n")); string(got) != string(want) {
			t.Fatalf("no HTML escaping: got %q, encoding/json %q", got, want)
		}
	})
}

func TestAppendFloatAndTimeAreEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-7, 1e-6, 1e20, 1e21, 5e-324, math.MaxFloat64, 0.1 + 0.2})).Draw(t, "f")
		want, err := json.Marshal(f)
		if FloatOK(f) != (err == nil) {
			t.Fatalf("FloatOK(%v) = %v, encoding/json: %v", f, FloatOK(f), err)
		}
		if err == nil && string(AppendFloat(nil, f)) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s, encoding/json %s", f, AppendFloat(nil, f), want)
		}
		tm := time.Unix(rapid.Int64Range(-1e11, 3e11).Draw(t, "s"), rapid.Int64Range(0, 999999999).Draw(t, "ns")).
			In(time.FixedZone("z", rapid.IntRange(-25*3600, 25*3600).Draw(t, "off")))
		want, err = json.Marshal(tm)
		if TimeOK(tm) != (err == nil) {
			t.Fatalf("TimeOK(%v) = %v, encoding/json: %v", tm, TimeOK(tm), err)
		}
		if err == nil && string(AppendTime(nil, tm)) != string(want) {
			t.Fatalf("AppendTime(%v) = %s, encoding/json %s", tm, AppendTime(nil, tm), want)
		}
	})
}
