package spawn

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends r as its JSON payload, byte for byte what
// encoding/json's Encoder writes with HTML escaping off (the envelope's
// data encoding, without the newline): the field order and omitempty
// rules of Request's tags, strings escaped as encoding/json escapes them
// (U+2028, U+2029, invalid UTF-8 as U+FFFD), times and floats formatted
// as it formats them. ok is false for a value encoding/json would refuse
// (a time outside RFC 3339's range, a temperature that is not finite):
// the caller then encodes r through encoding/json, which reports it.
// TestRequestJSONIsWhatEncodingJSONWrites compares the two.
func (r Request) AppendJSON(b []byte) ([]byte, bool) {
	if !timeOK(r.IssuedAt) || !timeOK(r.ExpiresAt) || (r.Temperature != nil && !floatOK(*r.Temperature)) {
		return b, false
	}
	b = append(b, `{"request_id":`...)
	b = appendString(b, r.RequestID)
	b = append(b, `,"request_kind":`...)
	b = appendString(b, string(r.RequestKind))
	if r.EntityID != "" {
		b = append(b, `,"entity_id":`...)
		b = appendString(b, r.EntityID)
	}
	b = append(b, `,"mode":`...)
	b = appendString(b, string(r.Mode))
	b = append(b, `,"context":{"clean":`...)
	b = strconv.AppendBool(b, r.Context.Clean)
	b = append(b, `,"prompt":`...)
	b = appendString(b, r.Context.Prompt)
	b = append(b, `,"allowed_tools":`...)
	b = appendStrings(b, r.Context.AllowedTools)
	b = append(b, `,"forbidden_tools":`...)
	b = appendStrings(b, r.Context.ForbiddenTools)
	b = append(b, `,"max_tool_calls":`...)
	b = strconv.AppendInt(b, int64(r.Context.MaxToolCalls), 10)
	b = append(b, `},"callback":{"actions":`...)
	b = appendStrings(b, r.Callback.Actions)
	b = append(b, `,"request_id":`...)
	b = appendString(b, r.Callback.RequestID)
	if r.Callback.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, r.Callback.Token)
	}
	b = append(b, `},"issued_at":"`...)
	b = r.IssuedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","expires_at":"`...)
	b = r.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if r.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(r.N), 10)
	}
	if r.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, *r.Temperature)
	}
	return append(b, '}'), true
}

// timeOK: time.Time's MarshalJSON succeeds (a four-digit year, an offset
// under 24 hours).
func timeOK(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off > -86400 && off < 86400
}

func floatOK(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat is encoding/json's float64 encoding.
func appendFloat(b []byte, f float64) []byte {
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

func appendStrings(b []byte, v []string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding without HTML escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
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
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
