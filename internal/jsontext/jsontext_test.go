package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"

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

func TestCompactIsWhatCompactionLeavesUnchanged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := map[string]any{"s": Text().Draw(t, "s"), "l": rapid.SliceOf(Text()).Draw(t, "l")}
		b, _ := json.Marshal(v)
		if rapid.Bool().Draw(t, "indent") {
			b, _ = json.MarshalIndent(v, "", " ")
		}
		var c bytes.Buffer
		_ = json.Compact(&c, b)
		if Compact(b) != (c.String() == string(b)) {
			t.Fatalf("Compact(%q) = %v, compaction gives %q", b, Compact(b), c.Bytes())
		}
	})
}
