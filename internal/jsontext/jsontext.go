// Package jsontext writes JSON values the way encoding/json writes them,
// byte for byte, without reflection: for the few hot encodings (the
// envelope, the documents a store writes) where encoding/json's first
// use of a type, or its reflection on every call, costs more than the
// work around it (bench/results/report.md). Every function is held to
// encoding/json by a property test over any input (jsontext_test.go).
package jsontext

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, as encoding/json encodes it:
// quote and backslash escaped, control characters as \b \f \n \r \t or
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped, and <, >
// and & as \u003c, \u003e and \u0026 when escapeHTML (json.Marshal's
// default; an Encoder with SetEscapeHTML(false) leaves them).
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendStrings appends v as a JSON array of strings, each as
// AppendString writes it (v nil too: the caller writes null or nothing
// for that, as its field's encoding wants).
func AppendStrings(b []byte, v []string, escapeHTML bool) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s, escapeHTML)
	}
	return append(b, ']')
}

// TimeOK reports whether time.Time's MarshalJSON succeeds for t: a
// four-digit year and an offset under 24 hours.
func TimeOK(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off > -86400 && off < 86400
}

// AppendTime appends time.Time's MarshalJSON of a t that TimeOK accepts.
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// FloatOK reports whether encoding/json encodes f (it refuses NaN and
// the infinities).
func FloatOK(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// AppendFloat appends encoding/json's encoding of a float64 FloatOK
// accepts (ES6 number format).
func AppendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
